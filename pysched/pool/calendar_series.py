"""Recurring series in the pool: a ``pysched.calendar.Series`` driven by the pool's own heap.

Every recurring series of the pool, ``schedule_recurring``'s and
``schedule_every``'s, is one ``SeriesVersion``. Each pending version of a series is a
wake-up: the core holds it at the series' next wake time on the pool's clock,
and when a worker runs it, ``SeriesVersion.wake_up`` reads both clocks, lets
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

import math
import threading
from collections import deque
from collections.abc import Hashable, Mapping
from concurrent.futures import Future
from typing import Any

from ..calendar import ClockWatch, Event, EventHub, Reading, Series, clock_jump_event
from ..calendar.current import CURRENT_FIRE
from ..calendar.events import COALESCED, ERROR, SKIPPED
from ..calendar.handle import SeriesHandle
from ..calendar.ledger import RunLedger
from ..calendar.series import Fire
from ..calendar.snapshot import wall_of
from ..jobs import DEFAULT_HISTORY
from .book import REPLACED
from .clocks import Clocks
from .future import FutureOwner, TaskFuture
from .pool_book import NO_KWARGS, PoolOwner, PoolVersion
from .recurring import CONTINUE, STOP
from .token import CANCELLED, CLOSED

__all__ = ["PoolCalendar", "PoolSeries", "SeriesFuture", "SeriesVersion", "end_series",
           "pool_series_handle"]

# How often a paused series looks whether it was resumed (seconds of the pool's clock).
PAUSED_POLL = 1.0


class PoolCalendar:
    """The pool's share of the calendar: its clocks, one watch, one hub, one lock, and one
    ledger of its series' recent runs and counts (``history`` runs in all)."""

    __slots__ = ("clocks", "hub", "lock", "future_lock", "ledger", "wall_offset", "_watch")

    def __init__(self, clocks: Clocks, history: int = DEFAULT_HISTORY) -> None:
        self.clocks = clocks
        self.ledger = RunLedger(history)
        self.hub = EventHub()
        self.hub.add_listener(self.ledger.observe)
        self.lock = threading.Lock()
        # The lock of every series' Future (see SeriesFuture).
        self.future_lock = threading.RLock()
        now = clocks.reading()
        self._watch = ClockWatch(now)
        # wall minus monotonic at the latest reading of any wake-up: a series' next
        # wake-up is worked out from it (one pair of floats for all, not one per series)
        self.wall_offset = now.wall - now.mono

    def read(self, fallback: bool = False) -> Reading:
        """Both clocks (``Clocks.reading``): outside the calendar lock, always."""
        return self.clocks.reading(fallback)

    def at(self, mono: float) -> Reading:
        """Both clocks at ``mono`` on the monotonic one, as the latest reading has them;
        under lock."""
        return Reading(mono + self.wall_offset, mono)

    def note(self, now: Reading) -> None:
        """``now`` is the latest reading (``at``); under lock."""
        self.wall_offset = now.wall - now.mono

    def observe(self, now: Reading, events: list[Event]) -> Any:
        """The jump since the last look, if any (its event added to ``events``), and
        ``now`` noted as the latest reading; under lock."""
        self.note(now)
        jump = self._watch.observe(now)
        if jump is not None:
            events.append(clock_jump_event(jump))
        return jump


class SeriesVersion(PoolVersion):
    """The pool's one record of a series: its version in the book and its ``Recurrence``.

    Each pending version of the series is a wake-up of this record: the core
    holds ``wake_up``, one function for every series, so it keeps no object of
    any one series; a worker calls ``fn(*args)``, which is ``wake_up(self)``,
    with ``args`` made at that call (held here it would be a reference cycle).
    For the same reason ``series``, the book's ``Recurrence``, is this record
    itself, read through a property. ``decisions`` is the ``Series`` that
    decides which fire times run. All fields are slots: a ``PoolVersion``
    keeps the fields most versions leave at their default in a ``__dict__``
    made on first use, which a series would make at once and keep.
    """

    # Set at every run: slots. What a run seldom sets (a token, a deadline, a skipped fire
    # time...) keeps the class default until it does, then goes in the ``__dict__``.
    __slots__ = ("decisions", "calendar", "call_fn", "call_args", "stopped", "fired", "in_run",
                 "run_no")

    call_kwargs: Mapping[str, Any] = NO_KWARGS
    # fire times skipped and coalesced since next_run last handed them to the book
    _skipped = 0
    _coalesced = 0

    def __init__(self, pool: PoolOwner, series: Series, calendar: PoolCalendar,
                 call: PoolVersion, priority: int) -> None:
        # PoolVersion's fields; its __init__ is not called, as it would set ``args``
        self.pool = pool
        self.fn = SeriesVersion.wake_up
        self.task_id: Hashable = None
        self.future: TaskFuture | None = None
        self.run_at = -math.inf
        self.priority = priority
        self.task: Any = None
        self.decisions = series
        self.calendar = calendar
        # what the user's call is, checked by the scheduler
        self.call_fn = call.fn
        self.call_args = call.args
        if call.kwargs:
            self.call_kwargs = call.kwargs
        if call.timeout is not None:
            self.timeout = call.timeout
        self.stopped = False
        self.fired = True
        self.in_run = False
        self.run_no = 0

    # read-only: this record is its own Recurrence
    @property
    def series(self) -> SeriesVersion:  # type: ignore[override]
        """The book's ``Recurrence`` of this version: the record itself."""
        return self

    # made at each call: held, it would be a cycle
    @property
    def args(self) -> tuple[SeriesVersion]:  # type: ignore[override]
        """What the worker calls ``fn`` with: this record."""
        return (self,)

    @property
    def on_error(self) -> str:
        """``STOP`` or ``CONTINUE``, the series' own."""
        return CONTINUE if self.decisions.on_error == "continue" else STOP

    def new_future(self, task_id: Hashable, version: int) -> SeriesFuture:
        """The series' Future, which ends its ``Series`` as it resolves."""
        return SeriesFuture(self.pool, task_id, version, self.decisions, self.calendar)

    def tally(self, events: list[Event]) -> list[Event]:
        """Count the fire times ``events`` skip or coalesce, for the pool's counters; under
        the calendar lock. Returns ``events``."""
        for event in events:
            if event.kind == SKIPPED:
                self._skipped += event.count or 0
            elif event.kind == COALESCED:
                self._coalesced += event.count or 0
        return events

    def first_wake(self, now: Reading) -> float:
        """The pool-clock time of the first wake-up, for a series made at ``now``."""
        with self.calendar.lock:
            return self._wake(now)

    def next_run(self, end: float) -> tuple[float, int, int]:
        """After a wake-up ended at ``end``: the next one (the book's call, under its lock)."""
        with self.calendar.lock:
            counted = self._skipped, self._coalesced
            if counted != (0, 0):
                self._skipped = self._coalesced = 0
            return self._wake(self.calendar.at(end)), *counted

    def _wake(self, now: Reading) -> float:
        wake = self.decisions.next_wake(now)
        if wake is None:
            # paused: look again soon; ended (no fire time left): the book ends the series
            return now.mono + PAUSED_POLL if self.decisions.paused else float("inf")
        return wake

    def wake_up(self) -> None:
        """A wake-up, on a worker: run the user's function if a fire time starts now."""
        calendar = self.calendar
        series = self.decisions
        events: list[Event] = []
        self.fired = False
        now = calendar.read(fallback=True)
        with calendar.lock:
            jump = calendar.observe(now, events)
            decision = series.poll(now, jump)
            events += self.tally(decision.events)
            fire = None
            if decision.start is not None:
                start, begun = series.begin(now)
                events += self.tally(begun)
                if start:
                    fire = series.running  # with its lateness as it starts
        if events:
            calendar.hub.emit(events)
        if fire is None:
            return
        self.fired = True
        error: BaseException | None = None
        context = CURRENT_FIRE.set(fire)
        try:
            kwargs = self.call_kwargs
            self.call_fn(*self.call_args, **kwargs) if kwargs else self.call_fn(*self.call_args)
        except BaseException as exc:
            error = exc
            raise
        finally:
            CURRENT_FIRE.reset(context)
            self._end_run(fire, now, error)

    def _end_run(self, fire: Fire, began: Reading, error: BaseException | None) -> None:
        """The run of ``fire`` begun at ``began`` ended (raising ``error``, or None): it is
        recorded, and the series is free again."""
        calendar = self.calendar
        end = calendar.read(fallback=True)
        series = self.decisions
        with calendar.lock:
            events = self.tally(series.finished(end, error is not None))
            calendar.note(end)
        calendar.ledger.run_ended(series.series_id, fire.fire_time,
                                  wall_of(series, fire.fire_time, began), began.wall, end.wall,
                                  error)
        if events:
            calendar.hub.emit(events)


class SeriesFuture(TaskFuture):
    """The Future of a pool series: it ends its ``Series`` as it resolves.

    Cancelled, replaced, closed, or failed by a run that stopped the series:
    the series ends (``end_series``) once, before any done callback, as a done
    callback of its own would, without the list and bound method one costs
    for every series. It holds the ``Series`` and the pool's calendar, not the
    series' record, which holds this Future (that would be a cycle); both are
    dropped then, so a Future kept after its series ended holds nothing of it.

    The series' Futures of one pool share one ``RLock`` (a tracked object
    each otherwise). That lock is only held for a state change and the
    notifying of waiters, which block on a Condition of their own Future and
    release it while they wait; no callback runs under it. Waiting on many
    Futures at once (``concurrent.futures.wait``) takes it once per Future,
    which an RLock allows.
    """

    def __init__(self, owner: FutureOwner, task_id: Hashable, version: int, series: Series,
                 calendar: PoolCalendar) -> None:
        super().__init__(owner, task_id, version)
        self._lock = self._condition = calendar.future_lock  # type: ignore[assignment]
        self._series: Series | None = series
        self._calendar: PoolCalendar | None = calendar

    def has_done_callbacks(self) -> bool:
        """Ending its series emits events to listeners, user code: as a done callback."""
        return self._series is not None or super().has_done_callbacks()

    def cancel(self) -> bool:
        cancelled = super().cancel()
        self._end_series()
        return cancelled

    def notify_cancelled(self, reason: str) -> bool:
        told = super().notify_cancelled(reason)
        self._end_series()
        return told

    def settle(self, result: Any, exception: BaseException | None) -> bool:
        settled = super().settle(result, exception)
        self._end_series()
        return settled

    def _invoke_callbacks(self) -> None:
        self._end_series()  # first, as the first done callback would run
        super()._invoke_callbacks()  # type: ignore[misc]

    def _end_series(self) -> None:
        """Once done: end the series (at most once; ``Series.cancel`` is idempotent too)."""
        series, calendar = self._series, self._calendar
        if series is not None and calendar is not None and self.done():
            self._series = self._calendar = None
            end_series(series, calendar, self)


def end_series(series: Series, calendar: PoolCalendar, fut: Future[Any]) -> None:
    """The series' Future ``fut`` is done: the series ends (its event says why).

    A failed Future: the pool ended the series (a run that failed or timed
    out under on_error="stop", or a next wake-up it refused), reason "error".
    """
    reason = fut.cancel_reason if isinstance(fut, TaskFuture) else None
    if reason not in (REPLACED, CLOSED):
        reason = CANCELLED if fut.cancelled() else ERROR
    with calendar.lock:
        events = series.cancel(reason)
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

    def __init__(self, record: SeriesVersion, future: TaskFuture) -> None:
        self.record = record
        self.future = future
        self._outbox: deque[Event] = deque()  # flush() pops unlocked while resume() appends

    def get(self, series_id: Hashable) -> Series | None:
        return None if self.future.done() else self.record.decisions

    def pause(self, series_id: Hashable) -> None:
        self.record.decisions.pause()

    def resume(self, series_id: Hashable, now: Reading) -> None:
        self._outbox.extend(self.record.tally(self.record.decisions.resume(now)))

    def cancel(self, series: Series) -> bool:
        return not self.future.done() and self.future.cancel()

    def flush(self) -> None:
        events: list[Event] = []
        while self._outbox:
            events.append(self._outbox.popleft())
        self.record.calendar.hub.emit(events)


def pool_series_handle(task_id: Hashable, future: TaskFuture,
                       record: SeriesVersion) -> SeriesHandle:
    """The handle ``ThreadPoolScheduler.schedule_recurring`` returns for ``record``."""
    calendar = record.calendar
    return SeriesHandle(PoolSeries(record, future), record.decisions, read=calendar.read,
                        lock=calendar.lock, future=future, notes=calendar.ledger.set_note)
