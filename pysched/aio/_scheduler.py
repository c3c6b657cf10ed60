"""AsyncScheduler: the core Scheduler's tasks run on an asyncio event loop.

See the package docstring (``pysched.aio``) for the invariants, the close
states and the lifetime; this module is the scheduler itself.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from contextvars import Context, copy_context
from inspect import isawaitable
from threading import get_ident
from types import CoroutineType
from typing import Any, cast

from .. import _impl
from .._close_state import CLOSED as STATE_CLOSED
from .._close_state import CLOSING, OPEN
from .._validate import check_capacity, check_hashable, check_time
from ..calendar import Cron, Event, Every, SeriesHandle
from ..pool.book import Book, NoWakeups
from ._calls import TASKS_TAKE_A_CONTEXT, bound_call, has_begun, settable
from ._future import CANCELLED, CLOSED, FINISHED, PENDING, REPLACED, AsyncTaskFuture
from ._host import Host
from ._timer import DeadlineTimer
from .series import SeriesDriver

__all__ = ["AsyncScheduler"]

# schedule()'s default, the same object as every (): without arguments fn is
# stored as it is, and the core checks it.
_NO_ARGS: tuple[Any, ...] = ()
# A version's Future is made without __init__: schedule() sets its fields.
_new_future = object.__new__


def _never() -> bool:
    return False

# How versions ended, besides completed, as stats() tells them: the book's
# counts. "scheduled" and "completed" are the core's own counts (every
# version is one core.schedule() call, every completed one a
# core.complete()), which spares the two counts every version would pay for.
_COUNTERS = ("failed", "cancelled", "replaced")


class AsyncScheduler:
    """Run scheduled coroutine functions and callables on the running event loop.

    ``schedule(task_id, run_at, priority, fn)`` keeps the core's contract:
    earliest ``run_at`` (on ``loop.time()``) first, then higher priority, then
    first come; scheduling an id again replaces its version that has not
    started (whose Future is cancelled, reason "replaced"); a newer version
    waits for a running one. Each call returns the ``AsyncTaskFuture`` of its
    version. At most ``max_concurrency`` versions run at once (None: no limit).

    Each version runs in a copy of the context ``schedule()`` was called in,
    as ``loop.call_at`` and ``asyncio.create_task`` do: a plain callable is
    called directly on the loop, and whatever awaitable it returns (a
    coroutine function's coroutine, say) is awaited in an asyncio Task.

    The scheduler binds to the loop it is first used on. ``async with`` closes
    it on exit (see ``pysched.aio`` for the close states and for what happens
    to a scheduler left open); running versions finish unless
    ``cancel_running_on_close``. ``_core_factory`` picks the core class (tests
    run both implementations).

    >>> async def main():
    ...     async with AsyncScheduler(max_concurrency=2) as s:
    ...         later = s.schedule_in("b", 0.01, 0, str.upper, ("later",))
    ...         first = s.schedule_in("a", 0.0, 0, asyncio.sleep, (0, "first"))
    ...         return await first, await later
    >>> asyncio.run(main())
    ('first', 'LATER')
    """

    def __init__(self, max_concurrency: int | None = None, *,
                 cancel_running_on_close: bool = False,
                 wall_clock: Callable[[], float] = time.time,
                 _core_factory: Callable[..., Any] | None = None) -> None:
        if max_concurrency is not None:
            max_concurrency = check_capacity(max_concurrency, "max_concurrency")
            if max_concurrency < 1:
                raise ValueError(f"max_concurrency must be >= 1 or None, got {max_concurrency}")
        self._max_concurrency = max_concurrency
        self._cancel_running_on_close = bool(cancel_running_on_close)
        self._core_factory = _core_factory or _impl.Scheduler
        self._loop: asyncio.AbstractEventLoop | None = None
        # The thread _bind() or the pump last saw the loop run on, and the loop's
        # is_running: schedule()'s check that it is called from the running loop.
        self._thread: int | None = None
        self._loop_running: Callable[[], bool] = _never
        self._core: Any = None  # made on binding, with the loop's clock
        # The versions, the state and the counts, in the pool's book: nothing to
        # wake (the pump looks for itself), no bound, no aging, no lateness kept.
        self._book: Book[AsyncTaskFuture[Any]] = Book(
            None, max_concurrency or sys.maxsize, 0.0, None, None, 1, NoWakeups())
        # asyncio Tasks of versions released before they began: each ends at its
        # first step without running any of its code.
        self._orphans: set[asyncio.Task[Any]] = set()
        self._calling: AsyncTaskFuture[Any] | None = None  # the version whose fn is being called
        self._host: Host | None = None  # while there is work
        self._ended_host: asyncio.Task[None] | None = None  # the last host, still returning
        # The scheduler's own callbacks run in a context of their own: none of
        # them reads a context variable, and it spares a copy per call_soon.
        self._own_context = contextvars.Context()
        self._pump_handle: asyncio.Handle | None = None
        self._timer: DeadlineTimer | None = None  # made with the core, on the loop
        self._drain_waiters: list[asyncio.Future[None]] = []
        # The driver's type names asyncio.Future; AsyncTaskFuture keeps its protocol.
        self._series = SeriesDriver(wall_clock, cast(Any, self.schedule), self._on_loop_shutdown,
                                    self._replace_one_shot)

    # -- public API -------------------------------------------------------

    @property
    def state(self) -> str:
        """The life-cycle state: open, closing or closed."""
        return self._book.state

    @property
    def max_concurrency(self) -> int | None:
        """The most versions that run at once; None for no limit."""
        return self._max_concurrency

    def schedule(self, task_id: Hashable, run_at: float, priority: int, fn: Callable[..., Any],
                 args: Iterable[Any] = (), kwargs: Mapping[str, Any] | None = None,
                 ) -> AsyncTaskFuture[Any]:
        """Run ``fn(*args, **kwargs)`` at ``run_at`` on ``loop.time()``, as the newest version.

        Returns that version's Future. The version replaces the one of
        ``task_id`` that has not started, if any; it runs in a copy of the
        current context. Must be called on the loop's thread, with the loop
        running. Raises SchedulerClosed unless open, and
        TypeError/ValueError/OverflowError naming a bad argument; a refused
        call changes nothing. O(log n).
        """
        # On the loop's thread with the loop running, as _bind() last saw: the
        # loop runs this thread's calls (cheaper than get_running_loop(), which
        # on 3.10 and 3.11 makes a getpid() system call each time).
        if get_ident() != self._thread or not self._loop_running():
            self._bind()
        loop: Any = self._loop
        book = self._book
        if book.state is not OPEN:
            book.check_open("schedule")
        call = fn if args is _NO_ARGS and kwargs is None else bound_call(fn, args, kwargs)
        version = self._core.schedule(task_id, run_at, priority, call)  # checks the rest
        if self._series.holds(task_id):  # a task id is one thing: this replaces its series
            self._series.end(task_id, REPLACED)
        fut: AsyncTaskFuture[Any] = _new_future(AsyncTaskFuture)  # its fields, set here:
        fut._loop = loop
        fut._state = PENDING
        fut._owner = self
        fut._task_id = task_id
        fut._version = version
        # A context without variables is not kept: the version gets a fresh empty
        # one when it starts, the same to it, and nothing more for the
        # collector to walk while it is pending.
        fut._context = copy_context() or None
        # The book's add(), inline: it is the path every version takes.
        old = book.pending.setdefault(task_id, fut)  # one lookup when nothing is replaced
        if old is not fut:  # the core has just replaced its version
            book.pending[task_id] = fut
            ended: list[AsyncTaskFuture[Any]] = []
            book.replaced(old, ended)
            self._end_unstarted(ended)
        elif book.running:
            run = book.running.get(task_id)
            if run is not None:  # ended unless it started
                ended = []
                book.end_claimed(run, REPLACED, ended)
                self._end_unstarted(ended)
        if self._host is None:
            self._host = Host(loop, self._on_loop_shutdown)
        if self._pump_handle is None:
            self._pump_handle = loop.call_soon(self._pump, context=self._own_context)
        return fut

    def schedule_in(self, task_id: Hashable, delay: float, priority: int, fn: Callable[..., Any],
                    args: Iterable[Any] = (), kwargs: Mapping[str, Any] | None = None,
                    ) -> AsyncTaskFuture[Any]:
        """``schedule()`` at ``delay`` (>= 0) seconds from now on ``loop.time()``."""
        delay = check_time(delay, "delay")
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay!r}")
        return self.schedule(task_id, self._bind().time() + delay, priority, fn, args, kwargs)

    def cancel(self, task_id: Hashable) -> bool:
        """Cancel the version of ``task_id`` that has not started, and the one that runs.

        A version that has not started (pending, or claimed while its
        coroutine has not begun) never starts, and its Future is cancelled at
        once; a running one has its asyncio Task cancelled, and its Future
        resolves when its function has returned or raised. Returns False
        when nothing of ``task_id`` is pending or running. O(1) amortised.
        """
        check_hashable(task_id, "task_id")
        ended: list[AsyncTaskFuture[Any]] = []
        found, started = self._book.cancel(task_id, CANCELLED, ended)
        self._end_unstarted(ended)
        if started is not None:
            self._stop(started, CANCELLED)
        series = self._series.end(task_id, CANCELLED)
        self._settle()
        return found or series

    def _replace_one_shot(self, task_id: Hashable) -> None:
        """A series of ``task_id`` replaces its one-shot version that has not started."""
        book = self._book
        ended: list[AsyncTaskFuture[Any]] = []
        fut = book.pending.get(task_id)
        if fut is not None:
            book.drop_pending(task_id, fut, REPLACED, ended)
        run = book.running.get(task_id)
        if run is not None:
            book.end_claimed(run, REPLACED, ended)  # unless it started
        self._end_unstarted(ended)
        self._settle()

    def state_of(self, task_id: Hashable) -> str | None:
        """The core's state of ``task_id``'s newest version: "pending", "running" or None."""
        check_hashable(task_id, "task_id")
        return None if self._core is None else self._core.state(task_id)

    def schedule_recurring(self, task_id: Hashable, trigger: Cron | Every, priority: int,
                           fn: Callable[..., Any], args: Iterable[Any] = (),
                           kwargs: Mapping[str, Any] | None = None, *,
                           misfire_grace: float | None = 1.0, catch_up: str = "latest",
                           overlap: str = "skip", on_error: str = "continue",
                           max_catch_up: int = 100) -> SeriesHandle:
        """Run ``fn`` at each fire time of ``trigger`` (a ``Cron`` or an ``Every``).

        A calendar trigger fires on ``wall_clock``, never before its instant;
        an interval on ``loop.time()``. ``misfire_grace``, ``catch_up``
        ("none", "latest", "all", at most ``max_catch_up``), ``overlap``
        ("skip", "coalesce", "queue") and ``on_error`` ("continue", "stop") are
        ``pysched.calendar.Series``'s; every skipped, coalesced or late fire
        time is an event for ``add_listener``, counted in
        ``stats()["series_events"]``. Each run is a version (see
        ``pysched.aio.series``) in a copy of the current context. The same
        ``task_id`` again replaces the whole series. Returns a handle with
        ``next_fire_times(n)``, ``pause()``, ``resume()`` and ``cancel()``.
        """
        loop = self._bind()
        self._book.check_open("schedule")
        return self._series.add(loop, task_id, trigger, priority, fn, args, kwargs,
                                misfire_grace=misfire_grace, catch_up=catch_up,
                                overlap=overlap, on_error=on_error, max_catch_up=max_catch_up)

    def add_listener(self, fn: Callable[[Event], object]) -> None:
        """Call ``fn(event)`` for each event of the recurring series (``pysched.calendar``)."""
        self._series.hub.add_listener(fn)

    def remove_listener(self, fn: Callable[[Event], object]) -> None:
        """Stop calling ``fn``; KeyError if it was not added."""
        self._series.hub.remove_listener(fn)

    def close(self, *, cancel_running: bool | None = None) -> None:
        """Start closing, without waiting: open -> closing (-> closed once nothing runs).

        Cancels every version that has not started (reason "closed"); with
        ``cancel_running`` (default: the constructor's
        ``cancel_running_on_close``) also the asyncio Tasks of running ones,
        except the caller's own when it is one of them. Idempotent; a later
        call with ``cancel_running=True`` still cancels what runs.
        """
        if cancel_running is None:
            cancel_running = self._cancel_running_on_close
        book = self._book
        if book.state is OPEN:
            ended: list[AsyncTaskFuture[Any]] = []
            book.close(ended)  # open -> closing; every pending version ends
            for run in list(book.running.values()):
                book.end_claimed(run, CLOSED, ended)  # unless it started
            self._end_unstarted(ended)
            self._disarm()
            if self._pump_handle is not None:
                self._pump_handle.cancel()
                self._pump_handle = None
            self._series.close()  # its listeners are called
        if cancel_running:
            self._cancel_running(CLOSED)
        self._settle()

    async def aclose(self, *, cancel_running: bool | None = None) -> None:
        """``close()``, then wait until every running version has finished.

        Called from inside one of its own running versions it waits for the
        others only (the scheduler is closed once the caller returns). If the
        caller is cancelled while it waits, the running versions are cancelled
        too, waited for, and the CancelledError is raised again; cancelled a
        second time, it stops waiting at once.
        """
        self.close(cancel_running=cancel_running)
        interrupted: asyncio.CancelledError | None = None
        while len(self._book.running) > (self._own_run() is not None) or self._orphans:
            waiter: asyncio.Future[None] = self._bind().create_future()
            self._drain_waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError as exc:
                if interrupted is not None:  # cancelled again: stop waiting
                    raise
                interrupted = exc
                self._cancel_running(CLOSED)
        if interrupted is not None:
            raise interrupted
        host = self._ended_host
        if host is not None and not host.done():  # it returns on its next step
            await asyncio.wait((host,))

    async def __aenter__(self) -> AsyncScheduler:
        self._bind()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def stats(self) -> dict[str, Any]:
        """Counts and sizes: pending, running, peak_running and how versions ended. O(1)."""
        result: dict[str, Any] = {
            "state": self._book.state,
            "pending": len(self._book.pending),
            "running": len(self._book.running),
            "peak_running": self._book.peak,
            "max_concurrency": self._max_concurrency,
        }
        result.update(self._counts())
        result["series_events"] = self._series.hub.stats()
        return result

    def __repr__(self) -> str:
        return (f"<AsyncScheduler {self._book.state} max_concurrency={self._max_concurrency}"
                f" pending={len(self._book.pending)} running={len(self._book.running)}>")

    def _check(self) -> None:
        """Assert the invariants of the package docstring (tests call this)."""
        book = self._book
        pending, running = book.pending, book.running
        counts = self._counts()
        assert counts["scheduled"] == len(pending) + len(running) + (
            counts["completed"] + counts["failed"] + counts["cancelled"] + counts["replaced"]
        ), "ledger"
        cap = self._max_concurrency
        assert cap is None or len(running) <= cap, "cap"
        if self._core is not None:
            self._core._check()
            assert len(self._core) == len(pending), "pending mirrors the core"
            assert self._core.stats()["running"] == len(running), "running mirrors the core"
            for task_id in pending:
                assert self._core.state(task_id) == "pending"
        if book.state is OPEN:
            assert (self._host is None) == (not pending and not running), "host"
        else:
            assert not pending and not (self._timer and self._timer.armed)
        if book.state is STATE_CLOSED:
            assert not running and not self._orphans

    # -- internals ----------------------------------------------------------

    def _counts(self) -> dict[str, int]:
        """How many versions were scheduled and how they ended (see _COUNTERS)."""
        core_stats = {"scheduled": 0, "completed": 0} if self._core is None else self._core.stats()
        result = {"scheduled": core_stats["scheduled"], "completed": core_stats["completed"]}
        result.update((name, getattr(self._book.counts, name)) for name in _COUNTERS)
        return result

    def _bind(self) -> asyncio.AbstractEventLoop:
        """The running loop, which the scheduler binds to on first use; RuntimeError otherwise."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
            self._loop_running = loop.is_running
            self._core = self._book.core = self._core_factory(clock=loop.time)
            self._timer = DeadlineTimer(loop, self._pump, self._own_context)
        elif self._loop is not loop:
            raise RuntimeError("this AsyncScheduler is bound to a different event loop")
        self._thread = get_ident()
        return loop

    def _own_run(self) -> AsyncTaskFuture[Any] | None:
        """The running version whose code is calling us, if any."""
        if self._calling is not None:
            return self._calling
        current = asyncio.current_task()
        if current is not None:
            for run in self._book.running.values():
                if run._aio is current:
                    return run
        return None

    def _has_begun(self, run: AsyncTaskFuture[Any]) -> bool:
        """Whether any code of a running (claimed) version has run."""
        return run is self._calling or run._aio is None or has_begun(run._coro)

    def _cancel_version(self, fut: AsyncTaskFuture[Any], reason: str, msg: Any = None) -> bool:
        """``fut.cancel(msg)``: end its version unless it started, else stop it (see _stop)."""
        ended: list[AsyncTaskFuture[Any]] = []
        done = self._book.cancel_future(fut, ended)
        if done is None:  # no longer the book's: it ended already
            return False
        self._end_unstarted(ended, msg)
        self._settle()
        return done or self._stop(fut, reason, msg)

    def _end_unstarted(self, ended: list[AsyncTaskFuture[Any]], msg: Any = None) -> None:
        """Resolve the Futures of versions the book ended unstarted; release claimed ones now."""
        running = self._book.running
        for fut in ended:
            if running.get(fut._task_id) is fut:
                self._release(fut)
            fut._resolve_cancelled(fut._cancel_reason or CANCELLED, msg)

    def _stop(self, fut: AsyncTaskFuture[Any], reason: str, msg: Any = None) -> bool:
        """Ask a started version to stop: cancel its Task, or once its fn or first step returns."""
        if fut._stop_reason is None:
            fut._stop_reason = reason
            fut._stop_msg = msg
        # Its fn is being called, or its Task is being made: it stops once that returns.
        if fut is self._calling or fut._aio is None:
            return True
        return fut._aio.cancel(msg if msg is not None else reason)

    def _release(self, run: AsyncTaskFuture[Any]) -> None:
        """A claimed version ended before it began: release it, and its Task ends unrun."""
        self._book.release(run._task, run)
        run._task = None
        aio = run._aio
        assert aio is not None
        if not aio.done():  # else something cancelled it already (a loop shutting down)
            self._orphans.add(aio)
            aio.add_done_callback(self._orphan_done, context=self._own_context)
            aio.cancel()  # its first step throws into our wrapper before it awaits the coroutine
        run._coro.close()  # so the coroutine is not reported as never awaited
        run._aio = run._coro = None

    def _orphan_done(self, aio: asyncio.Task[Any]) -> None:
        self._orphans.discard(aio)
        self._settle()

    def _cancel_running(self, reason: str) -> None:
        own = self._own_run()
        running = self._book.running
        # Only started versions run once closing: close() ended the others.
        for run in list(running.values()):
            if run is not own and running.get(run._task_id) is run:
                self._stop(run, reason)

    def _on_loop_shutdown(self) -> None:
        """The host was cancelled: the loop is going away, so is the scheduler's work."""
        host, self._host = self._host, None
        if host is not None:
            host.end()  # so that its done callback does not call this again
        self.close(cancel_running=True)

    def _request_pump(self) -> None:
        if self._pump_handle is None and self._book.state is OPEN:
            assert self._loop is not None
            self._pump_handle = self._loop.call_soon(self._pump, context=self._own_context)

    def _pump(self) -> None:
        """Start every due version below the cap, then arm the timer for the next.

        Claims at most as many versions as were pending when it began, so a
        callable that schedules itself due now runs once per loop iteration,
        as with ``call_soon``, instead of starving the loop. A plain callable
        is called and finished right here, the path most versions take; a
        version whose fn returns an awaitable or raises goes on in
        ``_await_result`` or ``_call_raised``.
        """
        self._pump_handle = None
        self._thread = get_ident()  # where the loop runs now, even if it moved
        book = self._book
        if book.state is not OPEN:
            return
        host = self._host
        if host is not None and host.lost():
            self._on_loop_shutdown()
            return
        assert self._loop is not None
        core = self._core
        claim = core.next
        now = self._loop.time()
        cap = self._max_concurrency
        pending = book.pending
        running = book.running
        complete = core.complete
        finished = FINISHED
        for _ in range(len(pending)):  # more may be due after: look again on the next iteration
            if cap is not None and len(running) >= cap:
                self._disarm()  # a finishing run pumps again
                break
            task = claim(now)
            if task is None:
                self._disarm()
                break
            if task.__class__ is float:  # not due yet: wake at the head's own run_at
                self._arm(core.peek()[0])
                break
            task_id = task.task_id
            fut = pending.pop(task_id)
            running[task_id] = fut
            if len(running) > book.peak:
                book.peak = len(running)
            context: Any = fut._context
            if context is None:
                context = Context()
            else:
                fut._context = None
            # While its fn is called the version is _calling; only one that returns
            # an awaitable gets the fields of a Task (_task, _aio, _coro).
            self._calling = fut
            try:
                result = context.run(task.fn)
            except BaseException as exc:  # noqa: BLE001 - the version's outcome, as in a Task
                self._calling = None
                self._call_raised(fut, task, exc)
            else:
                self._calling = None
                # inspect.isawaitable, with the common answers (None, a coroutine) first.
                if result is not None and (result.__class__ is CoroutineType
                                           or isawaitable(result)):
                    self._await_result(fut, task, result, context)
                else:
                    del running[task_id]
                    if fut._stop_reason is None:  # _end()'s first case, inline
                        complete(task)
                        fut._result = result  # set_result(), inline
                        fut._state = finished
                        if fut._callbacks:
                            fut._schedule_callbacks()
                    else:
                        self._end(fut, task, result, None, in_call=True)
            if book.state is not OPEN:  # a callable closed the scheduler
                break
        else:
            if pending:
                self._request_pump()
            else:
                self._disarm()
        self._settle()

    def _await_result(self, fut: AsyncTaskFuture[Any], task: Any, result: Any,
                      context: Any) -> None:
        """A version's fn returned an awaitable: await it in an asyncio Task in its context."""
        assert self._loop is not None
        fut._task = task
        fut._aio = None
        fut._coro = result if result.__class__ is CoroutineType else None
        # An eager task factory runs the first step in here (so the version
        # counts as "calling"), and may even end it before create_task returns.
        self._calling = fut
        try:
            coro = self._await_version(fut, result)
            if TASKS_TAKE_A_CONTEXT:
                aio = self._loop.create_task(coro, context=context)
            else:  # the Task copies the current context
                aio = context.run(self._loop.create_task, coro)
        except BaseException as exc:  # noqa: BLE001
            self._calling = None
            if self._book.running.get(fut._task_id) is not fut:  # an eager first step ended it
                raise
            self._call_raised(fut, task, exc)
            return
        self._calling = None
        if self._book.running.get(fut._task_id) is fut:  # not ended by an eager first step
            fut._aio = aio
            if fut._stop_reason is not None:  # cancelled while its fn ran
                aio.cancel(fut._stop_msg if fut._stop_msg is not None else fut._stop_reason)

    def _call_raised(self, fut: AsyncTaskFuture[Any], task: Any, exc: BaseException) -> None:
        """A version's fn (or its eager first step) raised ``exc``: fail or cancel it."""
        del self._book.running[fut._task_id]
        self._end(fut, task, None, exc, in_call=True)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            self._request_pump()  # what is due still runs if the loop goes on
            raise exc

    async def _await_version(self, fut: AsyncTaskFuture[Any], awaitable: Any) -> None:
        """The coroutine of a version's asyncio Task: await its result, then finish it.

        Finishing here rather than in a done callback spares a loop callback
        per version. The Task itself ends normally whatever the version did,
        so asyncio never reports its exception: the version's Future holds it.
        """
        exc: BaseException | None = None
        try:
            result = await awaitable
        except GeneratorExit:  # the Task is being destroyed with its loop: nothing to record
            raise
        except BaseException as error:  # noqa: BLE001
            exc, result = error, None
        running = self._book.running
        del running[fut._task_id]
        task, fut._task = fut._task, None
        self._end(fut, task, result, exc, in_call=fut._aio is None)  # None: an eager first step
        fut._aio = fut._coro = None  # the Task holds the version's context
        if not running or self._drain_waiters:
            self._settle()
        if self._pump_handle is None:  # a slot is free, and a parked newer version may be due
            self._request_pump()
        if exc is not None and isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise exc

    def _end(self, fut: AsyncTaskFuture[Any], task: Any, result: Any, exc: BaseException | None,
             *, in_call: bool) -> None:
        """Finish a version that has left ``_running``: the core, the counters, its Future.

        ``task`` is its core Task; ``in_call`` says it ended without a Task
        awaiting it (its fn returned or raised, or an eager first step ended it).
        """
        if exc is None and fut._stop_reason is not None and in_call:
            # A call asked to stop while it ran ends cancelled, as a Task
            # cancelled in its last step does.
            exc = asyncio.CancelledError()
        if exc is None:
            self._core.complete(task)
            if not fut.done():
                fut.set_result(result)
        elif isinstance(exc, asyncio.CancelledError):
            self._core.fail(task, exc)
            self._book.counts.cancelled += 1
            msg = fut._stop_msg
            if msg is None and exc.args:
                msg = exc.args[0]
            fut._resolve_cancelled(fut._stop_reason or CANCELLED, msg)
        else:
            self._core.fail(task, exc)
            self._book.counts.failed += 1
            if not fut.done():
                fut.set_exception(settable(exc))

    def _settle(self) -> None:
        """After versions ended: let the host go when idle, close when closing and idle."""
        if not self._book.running:
            host = self._host
            if host is not None and not self._book.pending:
                self._host = None
                host.end()
                self._ended_host = host.task
            if self._book.state is CLOSING and not self._orphans:
                self._book.set_state(STATE_CLOSED)
        if self._drain_waiters:
            waiters, self._drain_waiters = self._drain_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def _arm(self, when: float) -> None:
        assert self._timer is not None
        self._timer.arm(when)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.disarm()
