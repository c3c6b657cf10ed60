"""A fake pair of clocks and a single-threaded driver that plays a scheduler for one Series."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from pysched.calendar import (
    ClockWatch,
    Event,
    EventHub,
    Reading,
    Series,
    SeriesBook,
    clock_jump_event,
)

UTC = timezone.utc


def ts(text: str) -> float:
    """POSIX seconds of an ISO time in UTC, e.g. ts("2025-01-01T01:00")."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


class FakeClocks:
    """A wall clock and a monotonic clock, moved by hand and separately."""

    def __init__(self, wall: float, mono: float = 1000.0) -> None:
        self.wall = wall
        self.mono = mono

    def read(self) -> Reading:
        return Reading(self.wall, self.mono)

    def advance(self, seconds: float) -> None:
        """Time passes: both clocks move."""
        self.wall += seconds
        self.mono += seconds

    def suspend(self, seconds: float) -> None:
        """The machine sleeps: the wall clock moves, the monotonic one (as on Linux) does not."""
        self.wall += seconds

    def set_wall(self, seconds: float) -> None:
        """Someone sets the wall clock by ``seconds`` (negative: back)."""
        self.wall += seconds


@dataclass
class Driver:
    """Polls the series at each wake-up, as a scheduler would; runs take ``run_time`` seconds."""

    series: list[Series]
    clocks: FakeClocks
    run_time: float = 0.0
    fail: bool = False
    hub: EventHub = field(default_factory=EventHub)
    runs: list[tuple[object, float, float]] = field(default_factory=list)  # (id, fire, wall)
    events: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.watch = ClockWatch(self.clocks.read())
        self.hub.add_listener(self.events.append)

    def run_until_wall(self, wall: float) -> None:
        while True:
            now = self.clocks.read()
            jump = self.watch.observe(now)
            if jump is not None:
                self.hub.emit([clock_jump_event(jump)])
            for series in self.series:
                decision = series.poll(now, jump)
                self.hub.emit(decision.events)
                if decision.start is not None:
                    begun, events = series.begin(self.clocks.read())
                    self.hub.emit(events)
                    if not begun:
                        continue
                    # a calendar fire never starts before its instant
                    if series.timeline == "wall":
                        assert decision.start.fire_time <= now.wall
                    else:
                        assert decision.start.fire_time <= now.mono
                    self.runs.append((series.series_id, decision.start.fire_time, now.wall))
                    self.clocks.advance(self.run_time)
                    self.hub.emit(series.finished(self.clocks.read(), failed=self.fail))
            now = self.clocks.read()
            wakes = [w for s in self.series if (w := s.next_wake(now)) is not None]
            step = max(min(wakes) - now.mono, 0.0) if wakes else float("inf")
            if now.wall + step > wall:
                self.clocks.advance(max(wall - now.wall, 0.0))
                return
            self.clocks.advance(step)

    def fired(self, series_id: object) -> list[float]:
        return [fire for sid, fire, _ in self.runs if sid == series_id]

    def of_kind(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]


@dataclass
class BookDriver:
    """Plays a scheduler over a SeriesBook: wakes only when the book says so."""

    clocks: FakeClocks
    run_time: float = 0.0
    runs: list[tuple[object, float, float]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.book = SeriesBook(self.clocks.read())
        self.book.hub.add_listener(self.events.append)

    def run_until_wall(self, wall: float) -> None:
        while True:
            now = self.clocks.read()
            starts = self.book.wake(now)
            self.book.flush()
            for series, fire in starts:
                clock = now.wall if series.timeline == "wall" else now.mono
                assert fire.fire_time <= clock
                if not self.book.begin(series, self.clocks.read()):
                    continue
                self.runs.append((series.series_id, fire.fire_time, now.wall))
                self.clocks.advance(self.run_time)
                self.book.finished(series, self.clocks.read())
                self.book.flush()
            if starts:
                continue
            wake = self.book.next_wake()
            step = float("inf") if wake is None else max(wake - now.mono, 0.0)
            if now.wall + step > wall:
                self.clocks.advance(max(wall - now.wall, 0.0))
                return
            self.clocks.advance(step)
