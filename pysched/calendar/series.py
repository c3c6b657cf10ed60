"""The decisions of one recurring series, driven by clock readings; no threads, no pool.

A scheduler (the thread pool, the asyncio scheduler, the durable runner)
reads both clocks at each wake-up, asks a shared ``ClockWatch`` whether the
wall clock jumped, and calls ``poll``; when a worker takes the run ``poll``
returned it calls ``begin`` (which may skip a run grown too late), and
``finished`` when the run ends; sleeps until ``next_wake`` on its
monotonic clock, and hands every event to an ``EventHub``.

Invariants, each by construction:

- A fire time is handled once: ``last_fire`` only moves forward, and only
  fire times after it are ever considered, so a wall clock set back never
  fires one again.
- A fire time never runs before its instant: it is due only once the
  series' clock (wall for calendar triggers, monotonic for intervals) reads it.
- The series never runs twice at once: ``poll`` starts nothing while a run
  is in progress.
- Nothing is dropped silently: each fire time is run, or named in an event
  (skipped, coalesced or late) with its reason and lateness.
- A long outage costs bounded work: at most ``SCAN_LIMIT`` fire times are
  enumerated per decision; beyond that the events say ``count=None``.
- A stopped series decides nothing more: its "stopped" event is its last
  word on fire times. Afterwards ``poll``, ``begin``, ``finished`` and
  ``resume`` report no fire time (skipped, coalesced or late) and start
  nothing; only a run that was in progress at the stop and then raised is
  still reported, once, as "failed".
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Protocol

from .._validate import check_choice, check_time
from ._preview import check_preview_count
from ._readings import Jump, Reading
from .events import (
    CANCELLED,
    CATCH_UP_CAP,
    COALESCED,
    ERROR,
    FAILED,
    JUMPED_OVER,
    LATE,
    MISFIRE,
    OVERLAP,
    PAUSED,
    SKIPPED,
    STOPPED,
    Event,
)

__all__ = ["CATCH_UPS", "ON_ERRORS", "OVERLAPS", "SCAN_LIMIT", "Decision", "Fire", "Series"]

CATCH_UPS = ("none", "latest", "all")
OVERLAPS = ("skip", "coalesce", "queue")
ON_ERRORS = ("continue", "stop")
SCAN_LIMIT = 1_000
# The precision to which the newest missed fire times are located after an
# outage too long to enumerate.
_BISECT_PRECISION = 1e-3


class FireSequence(Protocol):
    """The fire times of a scheduled trigger on one clock's scale."""

    timeline: str  # "wall" or "monotonic"

    def first(self) -> float | None: ...

    def next_fire(self, after: float) -> float | None: ...

    def after_run(self, end: float) -> FireSequence:
        """The fire times once a run ended at ``end`` (a fixed delay starts again there)."""


class Trigger(Protocol):
    """What ``Series`` needs of ``Cron`` and ``Every``."""

    def fires(self, now: Reading, timeline: str = ...) -> FireSequence: ...


@dataclass(frozen=True, slots=True)
class Fire:
    """A run to start now: its fire time, how late it is, and how many fire times it stands for
    (more than one when it coalesced others; None when too many to count)."""

    fire_time: float
    lateness: float
    count: int | None = 1


@dataclass(frozen=True, slots=True)
class Decision:
    """What ``poll`` decided: a run to start (or None) and the events to emit."""

    start: Fire | None
    events: list[Event]


def _before(t: float) -> float:
    return math.nextafter(t, -math.inf)


class Series:
    """One recurring series: which fire times to run, skip, coalesce or run late.

    ``misfire_grace`` (seconds, or None for no limit): a fire time run within
    it of its instant is on time; later, it is missed, and ``catch_up`` decides: ``"none"`` skips
    the missed ones, ``"latest"`` runs once for all of them (or lets an
    on-time run stand for them), ``"all"`` runs each of the newest
    ``max_catch_up`` and skips older ones. ``overlap`` says what becomes of
    fire times that come due while a run is in progress: ``"skip"`` them,
    ``"coalesce"`` them into one run when it ends, or ``"queue"`` them (they
    wait and are then handled as late fire times). ``on_error``: ``"continue"``
    or ``"stop"`` the series when a run fails. ``last_fire``: the last fire time
    already handled (a durable series restarts from it); None: a new series.
    ``timeline``: the trigger's own (None), or "wall" to put an ``Every`` on
    POSIX seconds, the same in every process.
    """

    __slots__ = ("series_id", "trigger", "timeline", "misfire_grace", "catch_up", "max_catch_up",
                 "overlap", "on_error", "recheck", "last_fire", "running", "paused",
                 "stopped", "stop_reason", "_seq", "_next", "_ready", "_jump")

    def __init__(self, series_id: Hashable, trigger: Trigger, now: Reading, *,
                 last_fire: float | None = None, misfire_grace: float | None = 1.0,
                 catch_up: str = "latest", max_catch_up: int = 100, overlap: str = "skip",
                 on_error: str = "continue", recheck: float = 60.0,
                 timeline: str | None = None) -> None:
        # None: never missed, however late (each due fire time is on time).
        grace = math.inf if misfire_grace is None else check_time(misfire_grace, "misfire_grace")
        if grace < 0:
            raise ValueError(f"misfire_grace must be >= 0, got {misfire_grace!r}")
        if isinstance(max_catch_up, bool) or not isinstance(max_catch_up, int):
            raise TypeError(f"max_catch_up must be an int, not {type(max_catch_up).__name__}")
        if not 1 <= max_catch_up <= SCAN_LIMIT:
            raise ValueError(f"max_catch_up must be between 1 and {SCAN_LIMIT}, "
                             f"got {max_catch_up}")
        recheck = check_time(recheck, "recheck")
        if recheck <= 0:
            raise ValueError(f"recheck must be > 0, got {recheck!r}")
        self.series_id = series_id
        self.misfire_grace = grace
        self.catch_up = check_choice(catch_up, "catch_up", CATCH_UPS)
        self.max_catch_up = max_catch_up
        self.overlap = check_choice(overlap, "overlap", OVERLAPS)
        self.on_error = check_choice(on_error, "on_error", ON_ERRORS)
        self.recheck = recheck  # longest sleep of a calendar series, to notice wall-clock jumps
        self._seq = trigger.fires(now) if timeline is None else trigger.fires(now, timeline)
        # An Every's grid is that Every too (``Grid``): kept as the trigger, it spares the
        # series one object; the caller's Every is not held.
        self.trigger = self._seq if isinstance(self._seq, type(trigger)) else trigger
        self.timeline = self._seq.timeline
        if last_fire is None:
            self.last_fire: float | None = None
            self._next = self._seq.first()
        else:
            self.last_fire = check_time(last_fire, "last_fire")
            self._next = self._seq.next_fire(self.last_fire)
        # Decided runs waiting for the one in progress; None while there are none, as
        # nearly always: an empty deque is 760 bytes, a third of a series held in a pool.
        self._ready: deque[Fire] | None = None
        self.running: Fire | None = None
        self.paused = False
        self.stopped = False
        self.stop_reason: str | None = None  # why it stopped, once it did
        self._jump: Jump | None = None  # seen while busy: names the reasons at the next decision

    # -- the scheduler's calls -------------------------------------------------------------

    def poll(self, now: Reading, jump: Jump | None = None) -> Decision:
        """At a wake-up: the run to start now, if any, and the events to emit."""
        events: list[Event] = []
        if jump is not None:
            self.note_jump(jump)
        if self.stopped or self.paused or self.running is not None:
            return Decision(None, events)
        single = self._collect(now, self._jump, events)
        self._jump = None
        if single is not None:
            if self._ready is None:  # the common case: one run decided, due now
                self.running = single
                return Decision(single, events)
            self._queue(single)
        start = None
        # A run decided before the wall clock was set back waits for its instant again.
        ready = self._ready
        if ready and ready[0].fire_time <= self._clock(now):
            start = ready.popleft()
            if not ready:
                self._ready = None
        self.running = start
        return Decision(start, events)

    def note_jump(self, jump: Jump) -> None:
        """A wall-clock jump was seen: the next decision names its fire times' reasons by it."""
        self._jump = jump

    def begin(self, now: Reading) -> tuple[bool, list[Event]]:
        """The run ``poll`` returned is about to start at ``now``: whether to start it.

        A run can wait after ``poll`` (every worker busy, or queued behind
        another run). If it would now start more than ``misfire_grace`` late,
        ``catch_up="none"`` skips it (``False``; the series is free again) and
        the other policies run it late; either way with an event, reason
        ``misfire``. A run that starts is ``running`` from here with its
        lateness at ``now``: what ``current_fire()`` gives inside it.
        """
        fire = self.running
        if fire is None:
            raise RuntimeError("begin() without a run decided")
        if self.stopped:  # ended while the run waited; its scheduler reports it not started
            self.running = None
            return False, []
        lateness = self._clock(now) - fire.fire_time
        if lateness <= self.misfire_grace or fire.lateness > self.misfire_grace:
            events: list[Event] = []  # on time, or already reported late when decided
        elif self.catch_up == "none":
            self.running = None
            return False, [self._event(SKIPPED, MISFIRE, fire.fire_time, lateness, fire.count)]
        else:
            events = [self._event(LATE, MISFIRE, fire.fire_time, lateness, fire.count)]
        self.running = Fire(fire.fire_time, lateness, fire.count)
        return True, events

    def finished(self, now: Reading, failed: bool = False) -> list[Event]:
        """The run ``poll`` returned has ended at ``now``; ``failed``: it raised.

        After the series stopped, only the failure of that run is reported.
        """
        fire = self.running
        if fire is None:
            raise RuntimeError("finished() without a run in progress")
        self.running = None
        events: list[Event] = []
        if failed:
            events.append(self._event(FAILED, ERROR, fire.fire_time, fire.lateness))
        if self.stopped:
            return events
        if failed and self.on_error == "stop":
            events += self._stop(ERROR, fire.fire_time, fire.lateness)
            return events
        end = self._clock(now)
        restarted = self._seq.after_run(end)
        if restarted is not self._seq and self._ready is None:
            # fixed delay: what was due is superseded by the grid from this end
            self._seq = restarted
            self._next = restarted.first()
            return events
        if self.overlap == "queue" or self._next is None or self._next >= end:
            return events
        # fire times that came due while the run was in progress: [self._next, end)
        fires, complete = self._scan(self._next, end)
        if self.overlap == "skip":
            events += self._group(SKIPPED, fires, complete, end, lambda f: OVERLAP)
            self._advance_to(_before(end))
        else:  # coalesce: one run now, standing for the latest of them
            rest, [latest], exact = self._split_newest(fires, complete, end, 1)
            events += self._group(COALESCED, rest, exact, end, lambda f: OVERLAP)
            self._queue(Fire(latest, end - latest, len(rest) + 1 if exact else None))
            self._advance_to(latest)
        return events

    def next_wake(self, now: Reading) -> float | None:
        """When to poll next, on the monotonic clock; None: not until ``finished``/``resume``."""
        if self.stopped or self.paused or self.running is not None:
            return None
        due = self._ready[0].fire_time if self._ready is not None else self._next
        if due is None:
            return None
        if self.timeline == "monotonic":
            return due
        # A calendar fire time is an instant on the wall clock; sleep on the
        # monotonic one, waking at least every ``recheck`` to notice jumps.
        return now.mono + min(max(due - now.wall, 0.0), self.recheck)

    def next_fire_times(self, n: int) -> list[float]:
        """The next ``n`` (at most ``MAX_PREVIEW``) fire times not yet handled, on the
        series' timeline."""
        n = check_preview_count(n)
        out: list[float] = []
        fire = self._next
        while fire is not None and len(out) < n:
            out.append(fire)
            fire = self._seq.next_fire(fire)
        return out

    def pause(self) -> None:
        """Start nothing until ``resume``; fire times meanwhile are skipped then."""
        self.paused = True

    def resume(self, now: Reading) -> list[Event]:
        """Resume; the fire times that came due while paused are skipped, with events
        (none once the series stopped: it reports nothing after its end)."""
        if not self.paused:
            return []
        self.paused = False
        if self.stopped:
            return []
        self._jump = None
        t = self._clock(now)
        if self._next is None or self._next > t:
            return []
        fires, complete = self._scan(self._next, math.nextafter(t, math.inf))
        events = self._group(SKIPPED, fires, complete, t, lambda f: PAUSED)
        self._advance_to(t)
        return events

    def cancel(self, reason: str = CANCELLED) -> list[Event]:
        """End the series; nothing more starts. ``reason``: "cancelled", "replaced",
        "closed" or "error" (the scheduler's)."""
        if self.stopped:
            return []
        return self._stop(reason, None, 0.0)

    # -- deciding --------------------------------------------------------------------------

    def _clock(self, now: Reading) -> float:
        return now.wall if self.timeline == "wall" else now.mono

    def _collect(self, now: Reading, jump: Jump | None, events: list[Event]) -> Fire | None:
        """Decide every fire time due by ``now``: queue runs in ``_ready``, emit the rest.

        In the common case, one fire time due and on time, its run is returned
        instead of queued (the caller queues it behind any already waiting).
        """
        t = self._clock(now)
        first = self._next
        if first is None or first > t:
            return None
        cutoff = t - self.misfire_grace  # fire times before it are missed
        if first >= cutoff:  # the common case: no scan
            after = self._seq.next_fire(first)
            if after is None or after > t:
                self.last_fire = first
                self._next = after
                return Fire(first, t - first)
        on_time = first if first >= cutoff else self._seq.next_fire(_before(cutoff))
        has_on_time = on_time is not None and on_time <= t
        stands_for = 1
        if first < cutoff:
            coalesced = self._catch_up(first, cutoff, t, has_on_time, jump, events)
            stands_for = 1 + coalesced
        if on_time is None or on_time > t:
            self._next = on_time
            return None
        fires, complete = self._scan(on_time, math.nextafter(t, math.inf))
        # more due on time than max_catch_up (a tiny interval, a huge grace): the newest run
        older, newest, exact = self._split_newest(fires, complete, math.nextafter(t, math.inf),
                                                  self.max_catch_up)
        events += self._group(SKIPPED, older, exact, t, lambda f: CATCH_UP_CAP)
        for i, fire in enumerate(newest):
            self._queue(Fire(fire, t - fire, stands_for if i == 0 else 1))
        self.last_fire = newest[-1]
        self._next = self._seq.next_fire(newest[-1])
        return None

    def _catch_up(self, first: float, cutoff: float, t: float, has_on_time: bool,
                  jump: Jump | None, events: list[Event]) -> int:
        """Apply ``catch_up`` to the missed fire times in [first, cutoff); queue the late runs.

        Returns how many missed fire times an on-time run stands for (under
        "latest" with one due).
        """
        def reason(fire: float) -> str:
            jumped = (jump is not None and self.timeline == "wall" and jump.size > 0
                      and fire > jump.expected_wall)
            return JUMPED_OVER if jumped else MISFIRE

        fires, complete = self._scan(first, cutoff)
        if self.catch_up == "none":
            events += self._group(SKIPPED, fires, complete, t, reason)
            self._advance_to(_before(cutoff))
            return 0
        keep = 1 if self.catch_up == "latest" else self.max_catch_up
        if self.catch_up == "latest" and has_on_time:
            events += self._group(COALESCED, fires, complete, t, reason)
            self._advance_to(_before(cutoff))
            return len(fires) if complete else 0
        older, newest, exact = self._split_newest(fires, complete, cutoff, keep)
        if self.catch_up == "latest":
            events += self._group(COALESCED, older, exact, t, reason)
            count = len(older) + 1 if exact else None
            events.append(self._event(LATE, reason(newest[0]), newest[0], t - newest[0], count))
            self._queue(Fire(newest[0], t - newest[0], count))
        else:
            events += self._group(SKIPPED, older, exact, t, lambda f: CATCH_UP_CAP)
            for fire in newest:
                events.append(self._event(LATE, reason(fire), fire, t - fire))
                self._queue(Fire(fire, t - fire))
        self.last_fire = newest[-1]
        self._next = self._seq.next_fire(newest[-1])
        return 0

    # -- helpers ---------------------------------------------------------------------------

    def _scan(self, first: float | None, before: float,
              limit: int | None = None) -> tuple[list[float], bool]:
        """Fire times from ``first`` (a fire time) up to ``before`` exclusive, at most
        ``limit`` (default ``SCAN_LIMIT``); and whether that is all of them."""
        if limit is None:
            limit = SCAN_LIMIT
        fires: list[float] = []
        fire = first
        while fire is not None and fire < before:
            if len(fires) == limit:
                return fires, False
            fires.append(fire)
            fire = self._seq.next_fire(fire)
        return fires, True

    def _split_newest(self, fires: list[float], complete: bool, before: float,
                      n: int) -> tuple[list[float], list[float], bool]:
        """(older, the newest ``n``, whether ``older`` is exact) of the fire times from
        ``fires[0]`` up to ``before``, of which ``_scan`` gave ``fires``."""
        if not complete:
            rest, complete = self._scan(self._seq.next_fire(fires[-1]), before, n)
            if not complete:
                return fires, self._newest(fires[-1], before, n), False
            fires = fires + rest
        return fires[:-n], fires[-n:], True

    def _newest(self, after: float, before: float, n: int) -> list[float]:
        """The newest ``n`` fire times in (after, before), given there are more than n,
        by bisection on where that stretch begins."""
        lo, hi = after, before  # (lo, before) holds >= n fire times; (hi, before) fewer
        while hi - lo > _BISECT_PRECISION:
            mid = lo + (hi - lo) / 2
            if not lo < mid < hi:  # no float between them: as close as floats get
                break
            fire = self._seq.next_fire(mid)
            found = 0
            while fire is not None and fire < before and found < n:
                found += 1
                fire = self._seq.next_fire(fire)
            if found >= n:
                lo = mid
            else:
                hi = mid
        first = self._seq.next_fire(lo)
        assert first is not None
        fires, _ = self._scan(first, before)
        return fires[-n:]

    def _queue(self, fire: Fire) -> None:
        """Decide ``fire``: it starts once no run is in progress."""
        if self._ready is None:
            self._ready = deque()
        self._ready.append(fire)

    def _advance_to(self, t: float) -> None:
        """Every fire time up to ``t`` is handled."""
        if self.last_fire is None or t > self.last_fire:
            self.last_fire = t
        self._next = self._seq.next_fire(t)

    def _group(self, kind: str, fires: list[float], complete: bool, t: float,
               reason: Callable[[float], str]) -> list[Event]:
        """One event per stretch of consecutive fire times with the same reason.

        When ``fires`` is not all of them (``complete`` false), the last event
        stands for its stretch and the uncounted fire times after it:
        ``count=None``, no ``last_fire_time``.
        """
        events: list[Event] = []
        start = 0
        for i in range(1, len(fires) + 1):
            if i == len(fires) or reason(fires[i]) != reason(fires[start]):
                events.append(self._event(kind, reason(fires[start]), fires[start],
                                          t - fires[start], i - start, fires[i - 1]))
                start = i
        if not complete and events:
            tail = events.pop()
            events.append(Event(self.series_id, kind, tail.reason, tail.fire_time,
                                tail.lateness, None, None, self.timeline))
        return events

    def _event(self, kind: str, reason: str, fire: float | None, lateness: float,
               count: int | None = 1, last: float | None = None) -> Event:
        return Event(self.series_id, kind, reason, fire, lateness, count,
                     fire if last is None else last, self.timeline)

    def _stop(self, reason: str, fire: float | None, lateness: float) -> list[Event]:
        """End the series: the runs decided but not started are skipped, for ``reason``."""
        self.stopped = True
        self.stop_reason = reason
        # count 1: the fire times a run stood for were reported as coalesced already
        events = [self._event(SKIPPED, reason, run.fire_time, lateness)
                  for run in self._ready or ()]
        self._ready = None
        events.append(self._event(STOPPED, reason, fire, lateness, 0))
        return events
