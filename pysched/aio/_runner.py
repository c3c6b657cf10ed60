"""The loop side of an AsyncScheduler: what runs its versions on the event loop.

``LoopRunner`` binds to the loop, pumps due versions into calls and asyncio
Tasks, arms the timer for the head, keeps the host Task while there is work,
ends what never started and stops what runs; the book (``pysched.pool.book``)
holds the versions' records (``AioVersion``), as ``pysched.pool.threads``
does for the thread pool; the Futures change only through their own methods.
Everything here runs on the loop's thread (see ``pysched.aio`` for the
invariants). The scheduler's public calls and the versions' Futures
(``cancel_future``, ``has_begun``) come in here; what the runner needs of the
scheduler is one callable, the close a lost loop asks for.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Hashable
from contextvars import Context
from inspect import isawaitable
from threading import get_ident
from types import CoroutineType
from typing import Any

from .._close_state import CLOSED as STATE_CLOSED
from .._close_state import CLOSING, OPEN
from ..pool.book import Book
from ..pool.clocks import Clocks
from ._calls import TASKS_TAKE_A_CONTEXT, settable
from ._future import CANCELLED, CLOSED, REPLACED, AsyncTaskFuture
from ._host import Host
from ._timer import DeadlineTimer
from ._version import AioVersion

__all__ = ["LoopRunner"]


def _never() -> bool:
    return False


class LoopRunner:
    """The loop, the pump, the timer, the host and the Tasks of one scheduler."""

    def __init__(self, book: Book[AioVersion], max_concurrency: int | None,
                 core_factory: Callable[..., Any], close_on_loop_shutdown: Callable[[], None],
                 clocks: Clocks) -> None:
        self.book = book
        self.clocks = clocks  # reads loop.time() once bound
        self._max_concurrency = max_concurrency
        self._core_factory = core_factory
        self._close_on_loop_shutdown = close_on_loop_shutdown  # close(cancel_running=True)
        self.loop: asyncio.AbstractEventLoop | None = None
        # The thread bind() or the pump last saw the loop run on, and the loop's
        # is_running: schedule()'s check that it is called from the running loop.
        self.thread: int | None = None
        self.loop_running: Callable[[], bool] = _never
        # asyncio Tasks of versions released before they began: each ends at its
        # first step without running any of its code.
        self.orphans: set[asyncio.Task[Any]] = set()
        self._calling: AioVersion | None = None  # the version whose fn is being called
        self.host: Host | None = None  # while there is work
        self.ended_host: asyncio.Task[None] | None = None  # the last host, still returning
        # The runner's own callbacks run in a context of their own: none of
        # them reads a context variable, and it spares a copy per call_soon.
        self._own_context = contextvars.Context()
        # The pump to come (at most one); the scheduler reads it: no pump asked for twice.
        self.pump_handle: asyncio.Handle | None = None
        self.timer: DeadlineTimer | None = None  # made with the core, on the loop
        self._settle_waiters: list[asyncio.Future[None]] = []

    def bind(self) -> asyncio.AbstractEventLoop:
        """The running loop, which the scheduler binds to on first use; RuntimeError otherwise."""
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self.clocks.bind(loop.time, "loop.time")  # refuses a loop whose time is no time
            self.loop = loop
            self.loop_running = loop.is_running
            self.book.core = self._core_factory(clock=loop.time)
            self.timer = DeadlineTimer(loop, self._pump, self._own_context)
        elif self.loop is not loop:
            raise RuntimeError("this AsyncScheduler is bound to a different event loop")
        self.thread = get_ident()
        return loop

    def check_caller(self) -> None:
        """Refuse (RuntimeError) a call from another thread while the loop runs, or once
        it closed with work held.

        From another thread it would change the books and resolve Futures
        while the pump runs on the loop's thread; once the loop closed, each
        ended Future's callbacks would fail to be scheduled half-way (an idle
        scheduler has none to end). With the loop stopped, not closed,
        nothing races the call and callbacks wait.
        """
        if get_ident() == self.thread and self.loop_running():
            return
        if self.loop_running():
            self.bind()  # raises unless the loop now runs on this thread
        elif (self.loop is not None and self.loop.is_closed()
              and (self.book.pending or self.book.running)):
            raise RuntimeError("the event loop of this AsyncScheduler is closed")

    def version_added(self) -> None:
        """After a schedule: a host while there is work, and a pump to come."""
        loop: Any = self.loop
        if self.host is None:
            self.host = Host(loop, self.on_loop_shutdown)
        if self.pump_handle is None:
            self.pump_handle = loop.call_soon(self._pump, context=self._own_context)

    def own_run(self) -> AioVersion | None:
        """The running version whose code is calling us, if any."""
        if self._calling is not None:
            return self._calling
        if self.loop is None:
            return None
        current = asyncio.current_task(self.loop)  # None, not an error, off the loop
        if current is not None:
            for run in self.book.running.values():
                if run.aio is current:
                    return run
        return None

    def is_calling(self, fut: AsyncTaskFuture[Any]) -> bool:
        """Whether the caller is the own code of ``fut``'s version: its fn, or a step of its
        Task (the Future's ``_Owner``)."""
        run = self._calling
        if run is not None and run.future is fut:
            return True
        run = self.book.running.get(fut.task_id)
        return (run is not None and run.future is fut and run.aio is not None
                and run.aio is asyncio.current_task(self.loop))

    # -- ending versions: what never started, and what runs ---------------------------

    def cancel(self, task_id: Hashable) -> bool:
        """End ``task_id``'s version that has not started, stop the one that runs; whether found.

        The caller settles afterwards (see settle()), as after close().
        """
        ended: list[AioVersion] = []
        found, started = self.book.cancel(task_id, CANCELLED, ended)
        self.end_unstarted(ended)
        if started is not None:
            self._request_stop(started, CANCELLED)
        return found

    def cancel_future(self, fut: AsyncTaskFuture[Any], reason: str, msg: Any = None) -> bool:
        """``fut.cancel(msg)``: end its version unless it started, else stop it (the Future's
        ``_Owner``)."""
        self.check_caller()
        ended: list[AioVersion] = []
        outcome = self.book.cancel_future(fut, ended)
        if outcome is None:  # no longer the book's: it ended already
            return False
        done, run = outcome
        self.end_unstarted(ended, msg)
        self.settle()
        if done:
            return True
        assert run is not None  # a pending version always ends
        return self._request_stop(run, reason, msg)

    def replace_one_shot(self, task_id: Hashable) -> None:
        """A series of ``task_id`` replaces its one-shot version that has not started."""
        book = self.book
        ended: list[AioVersion] = []
        pending = book.pending.get(task_id)
        if pending is not None:
            book.drop_pending(task_id, pending, REPLACED, ended)
        run = book.running.get(task_id)
        if run is not None:
            book.end_claimed(run, REPLACED, ended)  # unless it started
        self.end_unstarted(ended)
        self.settle()

    def close(self) -> None:
        """open -> closing: end every version that has not started, and start nothing more."""
        book = self.book
        ended: list[AioVersion] = []
        book.close(ended)  # open -> closing; every pending version ends
        for run in list(book.running.values()):
            book.end_claimed(run, CLOSED, ended)  # unless it started
        self.end_unstarted(ended)
        self._disarm()
        if self.pump_handle is not None:
            self.pump_handle.cancel()
            self.pump_handle = None

    def cancel_running(self, reason: str) -> None:
        """Stop every running version but the caller's own."""
        own = self.own_run()
        running = self.book.running
        # Only started versions run once closing: close() ended the others.
        for run in list(running.values()):
            if run is not own and running.get(run.task_id) is run:
                self._request_stop(run, reason)

    def end_unstarted(self, ended: list[AioVersion], msg: Any = None) -> None:
        """Resolve the Futures of versions the book ended unstarted; release claimed ones now."""
        running = self.book.running
        for run in ended:
            if running.get(run.task_id) is run:
                self._release(run)
            run.future.notify_cancelled(run.cancel_reason or CANCELLED, msg)

    def _request_stop(self, run: AioVersion, reason: str, msg: Any = None) -> bool:
        """Ask a started version to stop: cancel its Task, or once its fn or first step returns."""
        if run.stop_reason is None:
            run.stop_reason = reason
            run.stop_msg = msg
        # Its fn is being called, or its Task is being made: it stops once that returns.
        if run is self._calling or run.aio is None:
            return True
        return run.aio.cancel(msg if msg is not None else reason)

    def _release(self, run: AioVersion) -> None:
        """A claimed version ended before it began: release it, and its Task ends unrun."""
        self.book.release(run)
        aio = run.aio
        assert aio is not None
        if not aio.done():  # else something cancelled it already (a loop shutting down)
            self.orphans.add(aio)
            aio.add_done_callback(self._orphan_done, context=self._own_context)
            aio.cancel()  # its first step throws into our wrapper before it awaits the coroutine
        run.coro.close()  # so the coroutine is not reported as never awaited
        run.aio = run.coro = None

    def _orphan_done(self, aio: asyncio.Task[Any]) -> None:
        self.orphans.discard(aio)
        self.settle()

    def on_loop_shutdown(self) -> None:
        """The host was cancelled: the loop is going away, so is the scheduler's work."""
        host, self.host = self.host, None
        if host is not None:
            host.end()  # so that its done callback does not call this again
        self._close_on_loop_shutdown()

    # -- running versions ------------------------------------------------------------------

    def _request_pump(self) -> None:
        if self.pump_handle is None and self.book.state is OPEN:
            assert self.loop is not None
            self.pump_handle = self.loop.call_soon(self._pump, context=self._own_context)

    def _pump(self) -> None:
        """Start every due version below the cap, then arm the timer for the next.

        Claims at most as many versions as were pending when it began, so a
        callable that schedules itself due now runs once per loop iteration,
        as with ``call_soon``, instead of starving the loop. A plain callable
        is called and finished right here, the path most versions take; a
        version whose fn returns an awaitable or raises goes on in
        ``_await_result`` or ``_call_raised``.
        """
        self.pump_handle = None
        self.thread = get_ident()  # where the loop runs now, even if it moved
        book = self.book
        if book.state is not OPEN:
            return
        host = self.host
        if host is not None and host.lost():
            self.on_loop_shutdown()
            return
        now = self.clocks.now(fallback=True)  # if it fails, the scheduler closes: pending empties
        # Book.claim() and Book.complete() inline, for the path most versions take
        # (tests/aio/test_aio_book.py pins the two). With schedule()'s inline
        # Book.adopt(), three calls fewer per version: 2,500 of 20,400 instructions
        # of a plain callable's version, counted by callgrind on CPython 3.11.
        core = book.core
        claim = core.next
        complete = core.complete
        pending = book.pending
        running = book.running
        cap = self._max_concurrency
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
            run = pending.pop(task_id)
            run.task = task
            running[task_id] = run
            if len(running) > book.peak:
                book.peak = len(running)
            context: Any = run.context
            if context is None:
                context = Context()
            else:
                run.context = None
            # While its fn is called the version is _calling; only one that returns
            # an awaitable gets the fields of a Task (aio, coro).
            self._calling = run
            try:
                result = context.run(run.task.fn)
            except BaseException as exc:  # noqa: BLE001 - the version's outcome, as in a Task
                self._calling = None
                self._call_raised(run, exc)
            else:
                self._calling = None
                # inspect.isawaitable, with the common answers (None, a coroutine) first.
                if result is not None and (result.__class__ is CoroutineType
                                           or isawaitable(result)):
                    self._await_result(run, result, context)
                elif run.stop_reason is None:  # _end()'s first case
                    del running[task_id]
                    complete(task)
                    run.future.set_result(result)
                else:
                    self._end(run, result, None, in_call=True)
            if book.state is not OPEN:  # a callable closed the scheduler
                break
        else:
            if pending:
                self._request_pump()
            else:
                self._disarm()
        self.settle()

    def _await_result(self, run: AioVersion, result: Any, context: Any) -> None:
        """A version's fn returned an awaitable: await it in an asyncio Task in its context."""
        assert self.loop is not None
        if run.stop_reason is not None:
            # Asked to stop while its fn ran: it ends cancelled, as a plain call
            # does; a Task cancelled before its first step would never finish it.
            if result.__class__ is CoroutineType:
                result.close()  # never awaited, and not reported so
            self._end(run, None, None, in_call=True)
            return
        coro = self._await_version(run, result)
        # What tells whether it has begun: its coroutine, else the wrapper that
        # awaits its other awaitable (a Task cancelled before its first step never
        # enters it, so the version is released as one that has not begun).
        run.coro = result if result.__class__ is CoroutineType else coro
        # An eager task factory runs the first step in here (so the version
        # counts as "calling"), and may even end it before create_task returns.
        self._calling = run
        try:
            if TASKS_TAKE_A_CONTEXT:
                aio = self.loop.create_task(coro, context=context)
            else:  # the Task copies the current context
                aio = context.run(self.loop.create_task, coro)
        except BaseException as exc:  # noqa: BLE001
            self._calling = None
            if self.book.running.get(run.task_id) is not run:  # an eager first step ended it
                raise
            self._call_raised(run, exc)
            return
        self._calling = None
        if self.book.running.get(run.task_id) is run:  # not ended by an eager first step
            run.aio = aio
            if run.stop_reason is not None:  # asked to stop in an eager first step
                aio.cancel(run.stop_msg if run.stop_msg is not None else run.stop_reason)

    def _call_raised(self, run: AioVersion, exc: BaseException) -> None:
        """A version's fn (or its eager first step) raised ``exc``: fail or cancel it."""
        self._end(run, None, exc, in_call=True)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            self._request_pump()  # what is due still runs if the loop goes on
            raise exc

    async def _await_version(self, run: AioVersion, awaitable: Any) -> None:
        """The coroutine of a version's asyncio Task: await its result, then finish it.

        Finishing here rather than in a done callback spares a loop callback
        per version. The Task itself ends normally whatever the version did,
        so asyncio never reports its exception: the version's Future holds it.
        """
        exc: BaseException | None = None
        try:
            result = await awaitable
        except GeneratorExit as error:
            # Thrown in by close() outside any step (the Task is being destroyed with
            # its loop): nothing to record. Raised during a step by the version's own
            # code, it is its outcome, as any other exception.
            current, aio = asyncio.current_task(self.loop), run.aio
            if current is None or (aio is not None and current is not aio):  # None: eager
                raise
            exc, result = error, None
        except BaseException as error:  # noqa: BLE001
            exc, result = error, None
        self._end(run, result, exc, in_call=run.aio is None)  # None: an eager first step
        run.aio = run.coro = None  # the Task holds the version's context
        if not self.book.running or self._settle_waiters:
            self.settle()
        if self.pump_handle is None:  # a slot is free, and a parked newer version may be due
            self._request_pump()
        if exc is not None and isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise exc

    def _end(self, run: AioVersion, result: Any, exc: BaseException | None, *,
             in_call: bool) -> None:
        """Finish a started version: the book (it leaves ``running``), the core, its Future.

        ``in_call`` says it ended without a Task awaiting it (its fn returned
        or raised, or an eager first step ended it).
        """
        fut = run.future
        if exc is None and run.stop_reason is not None and in_call:
            # A call asked to stop while it ran ends cancelled, as a Task
            # cancelled in its last step does.
            exc = asyncio.CancelledError()
        if exc is None:
            self.book.complete(run)
            if not fut.done():
                fut.set_result(result)
        elif isinstance(exc, asyncio.CancelledError):
            self.book.fail(run, exc, cancelled=True)
            msg = run.stop_msg
            if msg is None and exc.args:
                msg = exc.args[0]
            fut.notify_cancelled(run.stop_reason or CANCELLED, msg)
        else:
            self.book.fail(run, exc)
            if not fut.done():
                fut.set_exception(settable(exc))

    def settle(self) -> None:
        """After versions ended: let the host go when idle, close when closing and idle."""
        if not self.book.running:
            host = self.host
            if host is not None and not self.book.pending:
                self.host = None
                host.end()
                self.ended_host = host.task
            if self.book.state is CLOSING and not self.orphans:
                self.book.set_state(STATE_CLOSED)
        if self._settle_waiters:
            waiters, self._settle_waiters = self._settle_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def next_settle(self) -> asyncio.Future[None]:
        """A Future the next settle() resolves (aclose() waits on it)."""
        waiter: asyncio.Future[None] = self.bind().create_future()
        self._settle_waiters.append(waiter)
        return waiter

    def _arm(self, when: float) -> None:
        assert self.timer is not None
        self.timer.arm(when)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.disarm()
