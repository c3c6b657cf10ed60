"""``SeriesBook``: many series, one clock watch, one event hub; no threads.

A scheduler keeps one book. At each wake-up it calls ``wake(now)`` and starts
the runs it returns; when a run ends it calls ``finished``; it sleeps until
``next_wake()`` on its monotonic clock, or until it adds, resumes or replaces
a series. Only the series whose wake time has come are polled, so a wake-up
costs O(k log n) for k due series out of n, not O(n). The book is not
thread-safe: the caller holds its own lock (the pool) or runs on one thread
(asyncio).

Events wait in the book until ``flush()``, which the caller calls after
releasing its lock: a listener may then call back into the scheduler (cancel
a series, say) without deadlocking on it.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from collections.abc import Hashable

from .._validate import check_time
from ._readings import ClockWatch, Reading
from .events import CANCELLED, REPLACED, Event, EventHub, clock_jump_event
from .series import Fire, Series

__all__ = ["SeriesBook"]


class SeriesBook:
    """The series of one scheduler, keyed by id, with a heap of their wake times."""

    __slots__ = ("hub", "recheck", "_watch", "_last_look", "_series", "_heap", "_generation",
                 "_tick", "_outbox")

    def __init__(self, now: Reading, hub: EventHub | None = None, *,
                 recheck: float = 60.0) -> None:
        recheck = check_time(recheck, "recheck")
        if recheck <= 0:
            raise ValueError(f"recheck must be > 0, got {recheck!r}")
        self.hub = EventHub() if hub is None else hub
        # The book looks at the clocks at least this often (monotonic seconds),
        # for all its series at once, to notice wall-clock jumps.
        self.recheck = recheck
        self._watch = ClockWatch(now)
        self._last_look = now.mono
        self._series: dict[Hashable, Series] = {}
        # (wake on the monotonic clock, tick, id): the tick, fresh at each push, breaks
        # ties and is the entry's generation; an entry whose tick is not the series'
        # current generation is stale and skipped. One int serves as both, per series.
        self._heap: list[tuple[float, int, Hashable]] = []
        self._generation: dict[Hashable, int] = {}
        self._tick = itertools.count()
        # a deque: flush() pops from it unlocked while a locked caller appends
        self._outbox: deque[Event] = deque()

    def __len__(self) -> int:
        return len(self._series)

    def __contains__(self, series_id: object) -> bool:
        return series_id in self._series

    def get(self, series_id: Hashable) -> Series | None:
        """The series with this id, or None."""
        return self._series.get(series_id)

    def add(self, series: Series, now: Reading) -> None:
        """Add ``series``; one with the same id is cancelled and replaced, whole.

        The book watches the clocks for it: the series sleeps until its next
        fire time (its own ``recheck`` no longer applies).
        """
        series.recheck = math.inf
        old = self._series.get(series.series_id)
        if old is not None:
            self._outbox.extend(old.cancel(REPLACED))
        self._series[series.series_id] = series
        self._reschedule(series, now)

    def cancel(self, series_id: Hashable, reason: str = CANCELLED) -> bool:
        """End and remove the series, for ``reason`` ("cancelled", or "replaced" by a
        one-shot task of its id); False if there is none with this id."""
        series = self._series.pop(series_id, None)
        if series is None:
            return False
        self._generation.pop(series_id, None)
        self._outbox.extend(series.cancel(reason))
        return True

    def pause(self, series_id: Hashable) -> None:
        """Start nothing more of this series until ``resume`` (KeyError if unknown)."""
        self._series[series_id].pause()
        self._generation[series_id] = next(self._tick)

    def resume(self, series_id: Hashable, now: Reading) -> None:
        """Resume the series; what came due meanwhile is skipped with events."""
        series = self._series[series_id]
        self._outbox.extend(series.resume(now))
        self._reschedule(series, now)

    def wake(self, now: Reading) -> list[tuple[Series, Fire]]:
        """At a wake-up: the runs to start now, each with its series."""
        jump = self._watch.observe(now)
        self._last_look = now.mono
        if jump is not None:
            self._outbox.extend([clock_jump_event(jump)])
            # Every calendar series' sleep was measured on the old wall time.
            for series in self._series.values():
                if series.timeline == "wall":
                    series.note_jump(jump)
                    self._reschedule(series, now)
        starts: list[tuple[Series, Fire]] = []
        heap = self._heap
        while heap and heap[0][0] <= now.mono:
            _, generation, series_id = heapq.heappop(heap)
            if self._generation.get(series_id) != generation:
                continue
            series = self._series[series_id]
            decision = series.poll(now)
            self._outbox.extend(decision.events)
            if decision.start is not None:
                starts.append((series, decision.start))
            self._reschedule(series, now)
        return starts

    def begin(self, series: Series, now: Reading) -> bool:
        """A worker is about to start the run of ``series`` that ``wake`` returned:
        whether to start it (see ``Series.begin``)."""
        start, events = series.begin(now)
        self._outbox.extend(events)
        if not start:
            self._reschedule(series, now)
        return start

    def finished(self, series: Series, now: Reading, failed: bool = False) -> None:
        """The run of ``series`` that ``wake`` returned has ended."""
        self._outbox.extend(series.finished(now, failed))
        if series.stopped:
            if self._series.get(series.series_id) is series:
                del self._series[series.series_id]
                self._generation.pop(series.series_id, None)
            return
        self._reschedule(series, now)

    def flush(self) -> None:
        """Deliver the events decided so far to the hub's listeners; call it unlocked."""
        outbox = self._outbox
        events: list[Event] = []
        while outbox:
            events.append(outbox.popleft())
        self.hub.emit(events)

    def next_wake(self) -> float | None:
        """When to call ``wake`` next, on the monotonic clock; None for an empty book.

        The earliest wake time of a series, and at least every ``recheck``
        seconds while the book holds any series.
        """
        heap = self._heap
        while heap and self._generation.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)
        if not self._series:
            return None
        look = self._last_look + self.recheck
        return min(heap[0][0], look) if heap else look

    def _reschedule(self, series: Series, now: Reading) -> None:
        generation = self._generation[series.series_id] = next(self._tick)
        wake = series.next_wake(now)
        if wake is not None:
            heapq.heappush(self._heap, (wake, generation, series.series_id))
