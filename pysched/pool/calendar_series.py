"""Recurring series in the pool: a ``pysched.calendar.Series`` driven by the pool's own heap.

Every recurring series of the pool, ``schedule_recurring``'s and
``schedule_every``'s, is one of these. Each pending version of a series is a
wake-up: the core holds it at the series' next wake time on the pool's clock,
and when a worker runs it, ``CalendarRecurrence.run`` reads both clocks, lets
the series decide, and calls the user's function only for a fire time the
series starts (never before its wall-clock instant). Then the book asks
``next_run`` for the next wake-up; nothing else in the pool changes.

Lock order: the pool's lock, then the calendar lock (``next_run`` is called
under the pool's lock); the calendar lock is never held while taking the
pool's. Events are delivered outside both. The clocks are user code, read
through the pool's ``Clocks`` outside both locks (a broken clock closes the
pool, which takes the pool's lock), so ``next_run`` never reads them: it
carries the wake-up's last reading forward to the pool's ``end``. A wake-up
on a worker never fails for its clocks: a failing reading closes the pool
and the wake-up goes on with the latest good one.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future
from typing import Any

from ..calendar import ClockWatch, Event, EventHub, Reading, Series, clock_jump_event
from ..calendar.current import CURRENT_FIRE
from ..calendar.events import COALESCED, ERROR, SKIPPED
from ..calendar.handle import SeriesHandle
from .book import REPLACED
from .clocks import Clocks
from .future import TaskFuture
from .recurring import CONTINUE, STOP, Recurrence
from .token import CANCELLED, CLOSED

__all__ = ["CalendarRecurrence", "PoolCalendar", "PoolSeries", "pool_series_handle"]

# How often a paused series looks whether it was resumed (seconds of the pool's clock).
PAUSED_POLL = 1.0


class PoolCalendar:
    """The pool's share of the calendar: its clocks, one watch, one hub, one lock."""

    __slots__ = ("clocks", "hub", "lock", "_watch")

    def __init__(self, clocks: Clocks) -> None:
        self.clocks = clocks
        self.hub = EventHub()
        self.lock = threading.Lock()
        self._watch = ClockWatch(clocks.reading())

    def read(self, fallback: bool = False) -> Reading:
        """Both clocks (``Clocks.reading``): outside the calendar lock, always."""
        return self.clocks.reading(fallback)

    def observe(self, now: Reading, events: list[Event]) -> Any:
        """The jump since the last look, if any (its event added to ``events``); under lock."""
        jump = self._watch.observe(now)
        if jump is not None:
            events.append(clock_jump_event(jump))
        return jump


class CalendarRecurrence(Recurrence):
    """The pool's series record for a ``Series``: each run is a wake-up."""

    __slots__ = ("series", "calendar", "fn", "args", "kwargs", "last", "_skipped",
                 "_coalesced")

    def __init__(self, series: Series, priority: int, calendar: PoolCalendar,
                 fn: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: Mapping[str, Any], now: Reading) -> None:
        super().__init__(CONTINUE if series.on_error == "continue" else STOP, priority)
        self.series = series
        self.calendar = calendar
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.last = now  # the latest reading: the series was made at ``now``
        # fire times skipped and coalesced since next_run last handed them to the book
        self._skipped = 0
        self._coalesced = 0

    def tally(self, events: list[Event]) -> list[Event]:
        """Count the fire times ``events`` skip or coalesce, for the pool's counters; under
        the calendar lock. Returns ``events``."""
        for event in events:
            if event.kind == SKIPPED:
                self._skipped += event.count or 0
            elif event.kind == COALESCED:
                self._coalesced += event.count or 0
        return events

    def ended(self, fut: Future[Any]) -> None:
        """The series' Future is done: the series ends (its event says why).

        A failed Future: the pool ended the series (a run that failed or timed
        out under on_error="stop", or a next wake-up it refused), reason "error".
        """
        reason = fut.cancel_reason if isinstance(fut, TaskFuture) else None
        if reason not in (REPLACED, CLOSED):
            reason = CANCELLED if fut.cancelled() else ERROR
        calendar = self.calendar
        with calendar.lock:
            events = self.series.cancel(reason)
        calendar.hub.emit(events)

    def first_wake(self) -> float:
        """The pool-clock time of the first wake-up."""
        with self.calendar.lock:
            return self._wake(self.last)

    def next_run(self, end: float) -> tuple[float, int, int]:
        """After a wake-up ended at ``end``: the next one (the book's call, under its lock)."""
        with self.calendar.lock:
            counted = self._skipped, self._coalesced
            self._skipped = self._coalesced = 0
            last = self.last
            return self._wake(Reading(last.wall + (end - last.mono), end)), *counted

    def _wake(self, now: Reading) -> float:
        wake = self.series.next_wake(now)
        if wake is None:
            # paused: look again soon; ended (no fire time left): the book ends the series
            return now.mono + PAUSED_POLL if self.series.paused else float("inf")
        return wake

    def run(self) -> None:
        """A wake-up, on a worker: run the user's function if a fire time starts now."""
        calendar = self.calendar
        series = self.series
        events: list[Event] = []
        self.fired = False
        now = calendar.read(fallback=True)
        with calendar.lock:
            self.last = now
            jump = calendar.observe(now, events)
            decision = series.poll(now, jump)
            events += self.tally(decision.events)
            fire = None
            if decision.start is not None:
                start, begun = series.begin(now)
                events += self.tally(begun)
                if start:
                    fire = series.running  # with its lateness as it starts
        calendar.hub.emit(events)
        if fire is None:
            return
        self.fired = True
        failed = True
        context = CURRENT_FIRE.set(fire)
        try:
            self.fn(*self.args, **self.kwargs)
            failed = False
        finally:
            CURRENT_FIRE.reset(context)
            self._end_run(failed)

    def _end_run(self, failed: bool) -> None:
        """The run ended: the series is free again."""
        calendar = self.calendar
        end = calendar.read(fallback=True)
        with calendar.lock:
            events = self.tally(self.series.finished(end, failed))
            self.last = end
        calendar.hub.emit(events)


class PoolSeries:
    """A pool series as its ``SeriesHandle`` acts on it (``pysched.calendar.handle.SeriesOwner``).

    The series is the pool's while its Future is not done. Pausing and
    resuming act on the series under the calendar lock (the handle's);
    cancelling is the Future's cancel, which takes the pool's lock, so it is
    never called under the calendar lock. A paused series looks every
    ``PAUSED_POLL`` seconds whether it was resumed: nothing to notify.
    """

    __slots__ = ("record", "future", "_outbox")

    def __init__(self, record: CalendarRecurrence, future: TaskFuture) -> None:
        self.record = record
        self.future = future
        self._outbox: deque[Event] = deque()  # flush() pops unlocked while resume() appends

    def get(self, series_id: Hashable) -> Series | None:
        return None if self.future.done() else self.record.series

    def pause(self, series_id: Hashable) -> None:
        self.record.series.pause()

    def resume(self, series_id: Hashable, now: Reading) -> None:
        self._outbox.extend(self.record.tally(self.record.series.resume(now)))

    def cancel(self, series: Series) -> bool:
        return not self.future.done() and self.future.cancel()

    def flush(self) -> None:
        events: list[Event] = []
        while self._outbox:
            events.append(self._outbox.popleft())
        self.record.calendar.hub.emit(events)


def pool_series_handle(task_id: Hashable, future: TaskFuture,
                       record: CalendarRecurrence) -> SeriesHandle:
    """The handle ``ThreadPoolScheduler.schedule_recurring`` returns for ``record``."""
    calendar = record.calendar
    return SeriesHandle(PoolSeries(record, future), record.series, read=calendar.read,
                        lock=calendar.lock, future=future)
