"""Recurring series in the AsyncScheduler: a ``pysched.calendar.SeriesBook`` on the event loop.

The book decides; this module only wakes it and runs what it decides. One
``loop.call_at`` timer is armed for the book's next wake-up on the loop's
clock (the monotonic one); at a wake-up both clocks are read, the book says
which fire times start now, and each becomes an ordinary version of the
scheduler, due at once, so ``max_concurrency``, priorities, ``close()`` and
the context rules apply to it as to any version. A version's id is a
``FireKey`` of the series' id, apart from the scheduler's one-shot ids; the
task id itself is still one thing, as in the pool: a one-shot ``schedule()``
of the id replaces its series whole (``end``), a series replaces the id's
one-shot version that has not started (``replace_task``), and
``cancel(task_id)`` ends both.

Invariants:

- Everything runs on the loop's thread, so the book needs no lock.
- A fire time never starts before its instant: the book decides a fire time
  due only once the series' clock reads it, and a run that waited for a free
  slot reads the wall clock again as it starts; set back meanwhile, it waits
  (a new version, later on the loop's clock) instead of starting early.
- Each decided run ends in ``book.finished`` exactly once, or, if its
  version never started (the series ended, the scheduler closed), in a
  "skipped" event naming why: nothing the book decided is dropped silently.
- Each run sees a copy of the context ``schedule_recurring`` was called in,
  with ``current_fire()`` set.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from inspect import isawaitable, iscoroutine, iscoroutinefunction
from typing import Any, NamedTuple

from .._errors import SchedulerClosed
from .._validate import check_hashable, check_priority
from ..calendar import Cron, Event, EventHub, Every, Fire, Reading, Series, SeriesBook
from ..calendar.current import CURRENT_FIRE
from ..calendar.events import CANCELLED, CLOSED, REPLACED, SKIPPED
from ..calendar.handle import SeriesHandle
from ..pool.clocks import Clocks
from ._calls import bound_call
from ._host import Host
from ._timer import DeadlineTimer

__all__ = ["FireKey", "SeriesDriver"]

logger = logging.getLogger("pysched.aio")

# schedule(task_id, run_at, priority, fn): the scheduler's own, with its checks and rules.
Submit = Callable[[Hashable, float, int, Callable[[], Any]], "asyncio.Future[Any]"]


class FireKey(NamedTuple):
    """The task id of the versions that run a series' fire times."""

    series_id: Hashable


class _Entry(NamedTuple):
    """What a series runs: its bound function, priority and the caller's context."""

    call: Callable[[], Any]
    priority: int
    context: contextvars.Context


class _Run:
    """One decided fire time on its way through the scheduler."""

    __slots__ = ("series", "fire", "entry", "began", "ended", "awaitable")

    def __init__(self, series: Series, fire: Fire, entry: _Entry) -> None:
        self.series = series
        self.fire = fire
        self.entry = entry
        self.began = False  # the book's begin() let it start
        self.ended = False  # its outcome was told: book.finished(), or a skip with its event
        self.awaitable: object = None  # what a plain callable returned, to await


class _LoopThreadOnly:
    """A series handle's lock on the loop: one thread needs no lock, but a call from
    another thread is refused (``check`` raises) before it changes anything."""

    __slots__ = ("_check",)

    def __init__(self, check: Callable[[], None]) -> None:
        self._check = check

    def __enter__(self) -> None:
        self._check()

    def __exit__(self, *exc_info: object) -> None:
        return None


def _any_caller() -> None:
    return None


class SeriesDriver:
    """The AsyncScheduler's series: one book, one timer, one hub of events."""

    __slots__ = ("hub", "_clocks", "_submit", "_on_lost", "_replace_task", "_handle_lock",
                 "_loop", "_book", "entries", "_timer", "_host", "_closed")

    def __init__(self, clocks: Clocks, submit: Submit, on_lost: Callable[[], None],
                 replace_task: Callable[[Hashable], None] = lambda task_id: None,
                 check_caller: Callable[[], None] = _any_caller) -> None:
        self.hub = EventHub()  # listeners may be added before the loop runs
        self._clocks = clocks  # the scheduler's, bound to the loop before any series
        self._submit = submit
        self._on_lost = on_lost  # the loop is shutting down: the scheduler closes
        # ends the one-shot version of a task id that has not started: a series replaces it
        self._replace_task = replace_task
        # A handle's pause, resume and cancel follow the scheduler's thread rule.
        self._handle_lock = _LoopThreadOnly(check_caller)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._book: SeriesBook | None = None  # made on the first series, on its loop
        # What each series of the book runs; read by the scheduler (empty: no series).
        self.entries: dict[Hashable, _Entry] = {}
        self._timer: DeadlineTimer | None = None  # made on the loop, with the book
        # While the book holds a series, as while the scheduler has a version: the loop's
        # shutdown cancels it, which closes the scheduler, so no run starts in the teardown.
        self._host: Host | None = None
        self._closed = False

    def read(self, fallback: bool = False) -> Reading:
        """Both clocks (``Clocks.reading``): ``fallback`` in the loop's callbacks, which
        have no caller to tell of a broken clock."""
        return self._clocks.reading(fallback)

    # -- the scheduler's calls -------------------------------------------------------------

    def add(self, loop: asyncio.AbstractEventLoop, task_id: Hashable, trigger: Cron | Every,
            priority: int, fn: Callable[..., Any], args: Iterable[Any],
            kwargs: Mapping[str, Any] | None, *, misfire_grace: float | None, catch_up: str,
            overlap: str, on_error: str, max_catch_up: int) -> SeriesHandle:
        """A new series (replacing any of the same id, whole); the caller checked it is open."""
        check_hashable(task_id, "task_id")
        priority = check_priority(priority, "priority")
        if not isinstance(trigger, (Cron, Every)):
            raise TypeError(f"trigger must be a Cron or an Every, not {type(trigger).__name__}")
        call = bound_call(fn, args, kwargs)
        if self._loop is None:
            self._loop = loop
            self._timer = DeadlineTimer(loop, self._wake)
        book = self._book
        if book is None:
            book = self._book = SeriesBook(self.read(), self.hub)
        now = self.read()
        series = Series(task_id, trigger, now, misfire_grace=misfire_grace, catch_up=catch_up,
                        overlap=overlap, on_error=on_error, max_catch_up=max_catch_up)
        self._replace_task(task_id)  # every argument is checked: the change may begin
        book.add(series, now)
        self.entries[task_id] = _Entry(call, priority, contextvars.copy_context())
        book.flush()
        self._rearm()
        return SeriesHandle(book, series, read=self.read, lock=self._handle_lock,
                            notify=lambda: self._changed(task_id, series))

    def holds(self, task_id: Hashable) -> bool:
        """Whether a series of this id is running here."""
        return task_id in self.entries

    def end(self, task_id: Hashable, reason: str = CANCELLED) -> bool:
        """End the series of ``task_id``: "cancelled", or "replaced" by a one-shot version
        of the id; False if there is none. Its fire times not yet started never start."""
        book = self._book
        if book is None or not book.cancel(task_id, reason):
            return False
        self.entries.pop(task_id, None)
        book.flush()
        self._rearm()
        return True

    def close(self) -> None:
        """End every series (events say "closed"); nothing starts any more."""
        self._closed = True
        self._disarm()
        self._end_host()
        book = self._book
        if book is None:
            return
        events: list[Event] = []
        for series_id in list(self.entries):
            series = book.get(series_id)
            if series is not None:
                events += series.cancel(CLOSED)
        self.entries.clear()
        self.hub.emit(events)

    def _changed(self, task_id: Hashable, series: Series) -> None:
        """A handle resumed or cancelled ``series``: forget it once it ended, then rearm."""
        assert self._book is not None
        if self._book.get(task_id) is not series:
            self.entries.pop(task_id, None)
        self._rearm()

    # -- waking ------------------------------------------------------------------------------

    def _rearm(self) -> None:
        """Arm the timer for the book's next wake-up (none while it holds no series)."""
        book = self._book
        if book is None or self._closed:
            return
        if not book:
            self._end_host()
        elif self._host is None:
            assert self._loop is not None
            self._host = Host(self._loop, self._on_lost)
        when = book.next_wake()
        timer = self._timer
        assert timer is not None
        if when is None:
            timer.disarm()
        else:
            timer.arm(when)

    def _end_host(self) -> None:
        host, self._host = self._host, None
        if host is not None:
            host.end()

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.disarm()

    def _wake(self) -> None:
        if self._host is not None and self._host.lost():
            self._on_lost()  # a timer due in the loop's teardown starts nothing
            return
        book = self._book
        assert book is not None
        # What each run calls is looked up before flush(): a listener may cancel or replace
        # its series, and the run then reports itself skipped rather than run.
        runs = [_Run(series, fire, self.entries[series.series_id])
                for series, fire in book.wake(self.read(fallback=True))]
        book.flush()
        for run in runs:
            self._queue(run, 0.0)
        self._rearm()

    def _queue(self, run: _Run, delay: float) -> None:
        """Submit ``run`` as a version due ``delay`` seconds from now, in the caller's context."""
        assert self._loop is not None
        entry = run.entry
        try:
            fut = entry.context.run(self._submit, FireKey(run.series.series_id),
                                    self._clocks.now(fallback=True) + delay, entry.priority,
                                    lambda: self._start(run))
        except SchedulerClosed:  # a run closed the scheduler while this one waited
            self.hub.emit([self._not_started(run)])
            return
        fut.add_done_callback(lambda done: self._version_done(run, done))

    # -- running -----------------------------------------------------------------------------

    def _start(self, run: _Run) -> Any:
        """The version's fn, in its copy of the caller's context: start the fire time, or not.

        A coroutine function's run begins at its Task's first step, so a
        version released before it (the start rule) has run nothing.
        """
        if iscoroutinefunction(run.entry.call):
            return self._start_coroutine(run)
        if not self._begin(run):
            return None
        try:
            result = run.entry.call()
        except BaseException:
            self._finished(run, failed=True)
            raise
        if isawaitable(result):
            run.awaitable = result
            return self._await(run, result)
        self._finished(run, failed=False)
        return result

    async def _start_coroutine(self, run: _Run) -> Any:
        if not self._begin(run):
            return None
        return await self._await(run, run.entry.call())

    def _begin(self, run: _Run) -> bool:
        """Whether the fire time of ``run`` starts now (``book.begin``), with its events."""
        series = run.series
        book = self._book
        assert book is not None
        now = self.read(fallback=True)  # a clock failing here closes: stopped, just below
        if series.stopped:
            return False  # ended while this waited for a slot: _version_done reports it
        if series.timeline == "wall" and now.wall < run.fire.fire_time:
            # The wall clock was set back while this waited: wait for the instant again.
            self._queue(run, min(run.fire.fire_time - now.wall, book.recheck))
            return False
        run.began = True
        start = book.begin(series, now)
        fire = series.running  # with its lateness as it starts, before any listener runs
        book.flush()
        if not start:
            run.ended = True  # begin() freed the series: a late run skipped, with its event
            self._rearm()
            return False
        if series.stopped:  # a listener of begin()'s events ended the series: never run it
            run.ended = True
            self.hub.emit([self._not_started(run)])
            return False
        CURRENT_FIRE.set(fire)  # in this version's own copy of the context
        return True

    async def _await(self, run: _Run, awaitable: Awaitable[Any]) -> Any:
        failed = True
        try:
            result = await awaitable
            failed = False
            return result
        except asyncio.CancelledError:
            failed = False  # stopped by close(cancel_running=True) or cancel(): not an error
            raise
        finally:
            self._finished(run, failed)

    def _finished(self, run: _Run, failed: bool) -> None:
        if run.ended:
            return
        run.ended = True
        book = self._book
        assert book is not None
        book.finished(run.series, self.read(fallback=True), failed)
        book.flush()
        if run.series.stopped and self.entries.get(run.series.series_id) is run.entry \
                and book.get(run.series.series_id) is None:
            del self.entries[run.series.series_id]  # stopped by its error
        self._rearm()

    def _version_done(self, run: _Run, done: asyncio.Future[Any]) -> None:
        """The version of ``run`` ended: report a fire time that never started."""
        if not done.cancelled():
            exc = done.exception()  # retrieved here: the series' events report it
            if exc is not None and run.began:
                logger.error("series %r: the run of fire time %r raised", run.series.series_id,
                             run.fire.fire_time, exc_info=exc)
        if run.began:
            if not run.ended:  # released before the awaitable its callable returned was awaited
                if iscoroutine(run.awaitable):
                    run.awaitable.close()
                self._finished(run, failed=False)
            return
        if run.ended or not run.series.stopped and not done.cancelled():
            return  # re-queued (clock set back): the newer version carries it
        self.hub.emit([self._not_started(run)])

    def _not_started(self, run: _Run) -> Event:
        """The event for a fire time decided but never started, with the series' end reason."""
        series = run.series
        book = self._book
        assert book is not None
        if self._closed:
            reason = CLOSED
        elif book.get(series.series_id) not in (None, series) or series.stop_reason == REPLACED:
            reason = REPLACED
        else:
            reason = CANCELLED
        fire = run.fire.fire_time
        now = self.read(fallback=True)
        lateness = (now.wall if series.timeline == "wall" else now.mono) - fire
        return Event(series.series_id, SKIPPED, reason, fire, lateness, 1, fire, series.timeline)
