"""Series events and the listeners that receive them, shared by every scheduler.

Nothing a series drops is silent: each skipped, coalesced or late fire time,
each wall-clock jump and each failed or stopped series is an ``Event``,
delivered to every listener and counted for ``stats()``.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable
from dataclasses import dataclass

from ._readings import Jump

__all__ = ["KINDS", "REASONS", "Event", "EventHub", "Listener", "clock_jump_event"]

logger = logging.getLogger("pysched.calendar")

# What happened to a fire time (or to the series, or to the clock):
SKIPPED = "skipped"      # it did not run
COALESCED = "coalesced"  # it did not run on its own: a run for a later fire time stood for it
LATE = "late"            # it ran, later than misfire_grace after its time
FAILED = "failed"        # its run raised
STOPPED = "stopped"      # the series ended
CLOCK_JUMP = "clock_jump"  # the wall clock jumped (fire_time is None)
KINDS = (SKIPPED, COALESCED, LATE, FAILED, STOPPED, CLOCK_JUMP)

# Why:
MISFIRE = "misfire"            # its time passed while it could not run (busy, down, saturated)
JUMPED_OVER = "clock_jump"     # the wall clock was set forward, or the machine slept, past it
OVERLAP = "overlap"            # it came due while the series' previous run was still running
CATCH_UP_CAP = "catch_up_cap"  # older than the newest max_catch_up missed fire times
PAUSED = "paused"              # it came due while the series was paused
ERROR = "error"                # the run raised
CANCELLED = "cancelled"        # the series was cancelled
REPLACED = "replaced"          # a new series of the same id replaced it
CLOSED = "closed"              # its scheduler closed
SET_FORWARD = "set_forward"    # a jump forward (or a suspend)
SET_BACK = "set_back"          # a jump back
REASONS = (MISFIRE, JUMPED_OVER, OVERLAP, CATCH_UP_CAP, PAUSED, ERROR, CANCELLED, REPLACED,
           CLOSED, SET_FORWARD, SET_BACK)


@dataclass(frozen=True)
class Event:
    """One thing a series did other than run a fire time on time.

    ``fire_time`` is on the series' timeline (``"wall"``: POSIX seconds;
    ``"monotonic"``: the scheduler's monotonic clock); ``lateness`` is how long
    after it the decision was taken (for a clock jump: the jump's size,
    negative when set back). ``count`` is how many fire times the event stands
    for, from ``fire_time`` to ``last_fire_time``; None when there were too
    many to count.
    """

    series: Hashable
    kind: str
    reason: str
    fire_time: float | None
    lateness: float
    count: int | None = 1
    last_fire_time: float | None = None
    timeline: str = "wall"


Listener = Callable[[Event], object]


def clock_jump_event(jump: Jump) -> Event:
    """The event a scheduler emits once for a jump its ``ClockWatch`` saw."""
    reason = SET_FORWARD if jump.size > 0 else SET_BACK
    return Event(None, CLOCK_JUMP, reason, None, jump.size, 0, None, "wall")


class EventHub:
    """Listeners and counters for events; thread-safe.

    A listener that raises is logged and skipped: it never stops the
    scheduler or the other listeners.
    """

    __slots__ = ("_listeners", "_counts", "_lock")

    def __init__(self) -> None:
        # Each listener with the kinds it wants (None: every kind).
        self._listeners: tuple[tuple[Listener, frozenset[str] | None], ...] = ()
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add_listener(self, fn: Listener, kinds: Collection[str] | None = None) -> None:
        """Call ``fn(event)`` for every event (of ``kinds``, if given) from now on."""
        if not callable(fn):
            raise TypeError(f"fn must be callable, not {type(fn).__name__}")
        wanted = None if kinds is None else frozenset(kinds)
        with self._lock:
            self._listeners = (*self._listeners, (fn, wanted))

    def remove_listener(self, fn: Listener) -> None:
        """Stop calling ``fn``; KeyError if it was not added."""
        with self._lock:
            listeners = list(self._listeners)
            for i, (added, _) in enumerate(listeners):
                if added == fn:
                    del listeners[i]
                    break
            else:
                raise KeyError(f"fn {fn!r} is not a listener")
            self._listeners = tuple(listeners)

    def emit(self, events: Iterable[Event]) -> None:
        """Count ``events`` and deliver each to every listener, in order."""
        events = list(events)
        if not events:
            return
        with self._lock:
            for event in events:
                self._counts[event.kind] += 1
                self._counts[f"{event.kind}.{event.reason}"] += 1
                if event.count is not None and event.kind in (SKIPPED, COALESCED):
                    self._counts[f"{event.kind}_fire_times"] += event.count
            listeners = self._listeners
        for event in events:
            for fn, kinds in listeners:
                if kinds is not None and event.kind not in kinds:
                    continue
                try:
                    fn(event)
                except Exception:
                    logger.exception("a series event listener raised on %r", event)

    def stats(self) -> dict[str, int]:
        """Event counts: by kind (``"skipped"``), by kind and reason
        (``"skipped.overlap"``), and fire times skipped or coalesced
        (``"skipped_fire_times"``, ``"coalesced_fire_times"``)."""
        with self._lock:
            return dict(self._counts)
