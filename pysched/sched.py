"""A drop-in for the standard library's ``sched``, backed by the core Scheduler.

Replace ``import sched`` with ``from pysched import sched``: the ``scheduler``
class has the same constructor, methods, ordering (earliest time, then the
LOWER priority number, then FIFO), thread-safety and error behaviour, and
returns the standard library's own ``sched.Event`` named tuples. CPython's
``Lib/test/test_sched.py`` runs against it in the test suite.

What differs, where it costs no compatibility:

- ``cancel`` is O(1) amortised instead of O(n) (``list.remove`` + ``heapify``).
- A thread blocked in ``run()`` wakes when another thread enters an earlier
  event or cancels one (the standard library's sleeps through it), as long as ``delayfunc`` is
  ``time.sleep``: the wait is then a ``threading.Condition`` wait, which is
  what a sleep does, except that it can be interrupted. Any other
  ``delayfunc`` is called exactly as ``sched`` calls it.

Invariant: ``_events`` maps the sequence number of every queued event to the
event, and an event is queued iff it is in ``_events``. The ordering engine is
the core ``Scheduler`` (task id = sequence number) while every time is a float
or an int within 2**53 (so a float holds it exactly) and every priority an int
in the signed 64-bit range; core priority = ``~priority`` (= -priority - 1),
which maps the whole int64 range onto itself in reverse, turning the core's
"higher first" into sched's "lower first". The first time, priority or clock
reading outside that (float priorities, ``Fraction`` or ``Decimal`` times, a
``time_ns`` clock past 2**53, inf, NaN, ...) moves the scheduler for good to a
plain heap of events with the same order as ``sched`` for any comparable
values, still with lazy-deletion cancel.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from heapq import heapify, heappop, heappush
from itertools import count
from sched import Event
from typing import Any

from ._impl import Scheduler

__all__ = ["Event", "scheduler"]

_sentinel: Any = object()

# Every int in this range converts to a float exactly, and back.
_EXACT_INT = 2**53
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

# Below this many heap entries, stale ones in the exact heap are left for the pops.
_REBUILD_FLOOR = 64


def _unused() -> None:  # the core needs a callable per task; run() calls the event's action
    raise AssertionError("pysched.sched never runs the core's fn")


def _core_time(value: object) -> float | None:
    """``value`` as a float that orders exactly as ``value`` does, or None."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if type(value) is int and -_EXACT_INT <= value <= _EXACT_INT:
        return float(value)
    return None


def _core_priority(value: object) -> int | None:
    """The core priority that orders as sched orders ``value``, or None."""
    if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:
        return ~value
    return None


class scheduler:  # noqa: N801 - the standard library's name
    """Event scheduler: ``sched.scheduler`` with O(1) amortised cancel and wake-ups.

    ``timefunc`` returns the time; ``delayfunc(seconds)`` waits. All methods
    are thread-safe: one re-entrant lock guards the queue; ``timefunc`` is
    called with it held, actions and ``delayfunc`` without it, so both may
    enter or cancel events. An action that raises propagates out of ``run()``;
    its event is already removed, and ``run()`` may be called again.

    >>> s = scheduler(timefunc=lambda: 0, delayfunc=lambda seconds: None)
    >>> e = s.enterabs(5, 1, print, ("five",))
    >>> s.run(blocking=False)
    5
    >>> s.cancel(e); s.empty()
    True
    """

    # Private: the core Scheduler class to order events with (tests set it to
    # the Cython core or the pure twin in a subclass).
    _core_factory: Callable[[], Any] = Scheduler

    def __init__(self, timefunc: Callable[[], Any] = time.monotonic,
                 delayfunc: Callable[[Any], object] = time.sleep) -> None:
        self._lock = threading.RLock()
        self._wakeup = threading.Condition(self._lock)
        self.timefunc = timefunc
        self.delayfunc = delayfunc
        self._sequence_generator = count()
        self._events: dict[int, Event] = {}
        self._core: Any = self._core_factory()  # None once in exact mode
        self._heap: list[Event] = []  # exact mode only; may hold stale events
        self._sleepers = 0  # threads waiting in run() on _wakeup
        self._deadline = 0.0  # while _sleepers: the latest core time one of them waits for

    def enterabs(self, time: Any, priority: Any, action: Callable[..., object],
                 argument: Iterable[Any] = (), kwargs: Mapping[str, Any] = _sentinel) -> Event:
        """Enter an event due at the absolute ``time``; return it, the id for ``cancel()``.

        O(log n). Wakes a thread waiting in ``run()`` if the event comes first.
        """
        if kwargs is _sentinel:
            kwargs = {}
        with self._lock:
            event = Event(time, priority, next(self._sequence_generator), action,
                          argument, kwargs)  # type: ignore[arg-type]  # as sched stores them
            self._push(event)
            if self._sleepers and self._wakes_sleeper(event):
                self._wakeup.notify_all()
        return event  # The ID

    def enter(self, delay: Any, priority: Any, action: Callable[..., object],
              argument: Iterable[Any] = (), kwargs: Mapping[str, Any] = _sentinel) -> Event:
        """Enter an event due ``delay`` after ``timefunc()``: O(log n)."""
        time = self.timefunc() + delay
        return self.enterabs(time, priority, action, argument, kwargs)

    def cancel(self, event: Event) -> None:
        """Remove a queued event; ValueError if it is not queued.

        O(1) amortised (the heap entry turns stale), against O(n) in ``sched``.
        As with ``sched``, an event equal to a queued one counts as that one.
        """
        with self._lock:
            queued = self._find(event)
            self._discard(queued)
            if self._sleepers and (not self._events or self._wakes_sleeper(queued)):
                self._wakeup.notify_all()

    def empty(self) -> bool:
        """Whether the queue is empty: O(1)."""
        with self._lock:
            return not self._events

    @property
    def queue(self) -> list[Event]:
        """The queued events in the order they will run: O(n log n), a copy."""
        with self._lock:
            events = list(self._events.values())
        # Popped from a heap, as sched does, so any comparable values come out
        # in the order run() takes them.
        heapify(events)
        return list(map(heappop, [events] * len(events)))

    def run(self, blocking: bool = True) -> Any:
        """Run events until the queue is empty.

        With ``blocking=False`` run the events already due, then return the
        delay until the next one (None if none is left). Between two events
        ``delayfunc(0)`` is called, as in ``sched``, to let other threads run.
        With ``delayfunc`` ``time.sleep`` the wait for the next event ends early
        when another thread enters an earlier event or cancels one.
        """
        lock = self._lock
        timefunc = self.timefunc
        delayfunc = self.delayfunc
        # Only a plain sleep may be swapped for an interruptible wait: any
        # other delayfunc may do work of its own (a simulated clock, I/O).
        interruptible = delayfunc is time.sleep
        while True:
            with lock:
                if not self._events:
                    break
                now = timefunc()
                event, delay = self._pop_due(now)
                if event is None:
                    if not blocking:
                        return delay
                    if interruptible and type(delay) in (float, int):
                        self._sleep(now, delay)
                        continue
            if event is None:
                delayfunc(delay)
            else:
                event.action(*event.argument, **event.kwargs)
                delayfunc(0)  # Let other threads run
        return None

    # -- internals, all called with the lock held -------------------------

    def _push(self, event: Event) -> None:
        core = self._core
        if core is not None:
            run_at = _core_time(event.time)
            priority = _core_priority(event.priority)
            if run_at is not None and priority is not None:
                core.schedule(event.sequence, run_at, priority, _unused)
                self._events[event.sequence] = event
                return
            self._leave_core()
        heap = self._heap
        try:
            heappush(heap, event)  # TypeError for incomparable times, as sched does
        except BaseException:
            # heappush appends, then swaps on the way up, so the refused event
            # is somewhere in the heap: take it out and restore the heap order,
            # or every later push and pop would compare against it.
            heap[:] = [e for e in heap if e is not event]
            heapify(heap)
            raise
        self._events[event.sequence] = event

    def _find(self, event: object) -> Event:
        """The queued event equal to ``event``, or ValueError."""
        queued = None
        if isinstance(event, tuple) and len(event) == 6:
            try:  # noqa: SIM105 - contextlib.suppress costs more on this hot path
                queued = self._events.get(event[2])
            except TypeError:  # an unhashable sequence: no queued event has it
                pass
        if queued is None or not (queued is event or queued == event):
            raise ValueError("event is not in the queue")
        return queued

    def _discard(self, event: Event) -> None:
        del self._events[event.sequence]
        if self._core is not None:
            self._core.cancel(event.sequence)
            return
        heap = self._heap
        # Keep the exact heap within max(2 * queued, floor) entries: O(n) rebuilds
        # paid for by the n cancels before them.
        if len(heap) > _REBUILD_FLOOR and len(heap) > 2 * len(self._events):
            events = self._events
            heap[:] = [e for e in heap if events.get(e.sequence) is e]
            heapify(heap)

    def _pop_due(self, now: Any) -> tuple[Event | None, Any]:
        """Remove and return the head if it is due, else (None, delay). Queue not empty."""
        core = self._core
        if core is not None:
            core_now = _core_time(now)
            if core_now is None:
                self._leave_core()
            else:
                head = core.next(core_now)
                if type(head) is float:
                    # sched returns the head's time - now, computed as sched
                    # computes it: an int for an int time and clock.
                    return None, self._events[core.peek()[1]].time - now
                core.complete(head)
                return self._events.pop(head.task_id), None
        heap = self._heap
        events = self._events
        while events.get(heap[0].sequence) is not heap[0]:  # stale: cancelled
            heappop(heap)
        event = heap[0]
        if event.time > now:
            return None, event.time - now
        heappop(heap)
        del events[event.sequence]
        return event, None

    def _leave_core(self) -> None:
        """Move to exact mode: order by comparing the events, as sched does. O(n), once."""
        heap = list(self._events.values())
        heapify(heap)
        self._heap = heap
        self._core = None

    def _wakes_sleeper(self, event: Event) -> bool:
        """Whether a change to ``event`` may concern a thread waiting in run()."""
        if self._core is None:
            return True
        return _core_time(event.time) <= self._deadline  # type: ignore[operator]

    def _sleep(self, now: Any, delay: float) -> None:
        """Wait up to ``delay`` seconds, or until enterabs() or cancel() notifies."""
        core_now = _core_time(now)
        if core_now is not None:
            deadline = core_now + delay
            # A notify for an event after a sleeper's deadline is not needed;
            # with several sleepers use the latest deadline, erring on waking.
            self._deadline = max(self._deadline, deadline) if self._sleepers else deadline
        self._sleepers += 1
        try:
            self._wakeup.wait(min(delay, threading.TIMEOUT_MAX))
        finally:
            self._sleepers -= 1
