"""AsyncScheduler: the core Scheduler's tasks run on an asyncio event loop.

Invariants (the scheduler is used from its loop's thread only, as asyncio
objects are, so no lock is needed):

- ``_pending[tid]`` is the Future of the core's pending version of ``tid``
  and ``_running[tid]`` the run of its running version; both change only
  together with the core, so ``len(_pending) == len(core)``.
- ``len(_running)`` never exceeds ``max_concurrency``: ``_pump`` claims only
  below it, and only while open.
- Nothing polls: ``_pump`` claims every due version, then arms one
  ``loop.call_at`` timer for the head (none when at the cap or empty); a
  schedule, a finished run or the timer queue the next pump with
  ``call_soon``, at most one at a time.
- Each version ends in exactly one of completed, failed, cancelled or
  replaced: ``scheduled == pending + running + completed + failed + cancelled
  + replaced`` between any two calls.

Close states, as the ThreadPoolScheduler's (``pysched._close_state``)::

    open    -> closing   close()/aclose()/leaving ``async with``: new schedules
                         raise SchedulerClosed, every pending version is
                         cancelled (its Future too, reason "closed"), claiming
                         stops; running ones finish, or get cancelled with
                         ``cancel_running``
    closing -> closed    the last running version finished

A task's function runs on the loop: it is called with its arguments, and if it
returns an awaitable (a coroutine function's coroutine, say) that is awaited in
an asyncio Task of its own. Plain callables must not block the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from . import _impl
from ._close_state import CLOSED, CLOSING, OPEN, check_transition
from ._errors import SchedulerClosed
from ._validate import check_callable, check_capacity, check_hashable, check_time

CANCELLED = "cancelled"
REPLACED = "replaced"

__all__ = ["AsyncScheduler", "AsyncTaskFuture"]

# The run whose function the current asyncio Task executes, if it is one of ours.
_CURRENT_RUN: contextvars.ContextVar[_Run | None] = contextvars.ContextVar(
    "pysched_async_run", default=None)


class AsyncTaskFuture(asyncio.Future):  # type: ignore[type-arg]
    """The asyncio Future of one version of a scheduled task.

    ``cancel()`` cancels the version: a pending one never starts and the
    Future is cancelled at once; a running one has its asyncio Task cancelled
    and, as with an asyncio Task, the Future resolves when the function
    actually returns or raises.
    """

    _cancel_reason: str | None = None
    _owner: AsyncScheduler | None = None  # set while the version is pending or running

    def __init__(self, owner: AsyncScheduler, task_id: Hashable, version: int,
                 loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self._owner = owner
        self._task_id = task_id
        self._version = version

    @property
    def task_id(self) -> Hashable:
        """The task id this version belongs to."""
        return self._task_id

    @property
    def version(self) -> int:
        """The version number the core gave it, from 1 per task id."""
        return self._version

    @property
    def cancel_reason(self) -> str | None:
        """Why it was cancelled: "cancelled", "replaced" or "closed"; else None."""
        return self._cancel_reason

    def cancel(self, msg: Any = None) -> bool:
        """Cancel this version (see the class docstring); False if already done."""
        if self.done():
            return False
        if self._owner is None:  # not handed out by a scheduler: a plain Future
            return self._resolve_cancelled(CANCELLED, msg)
        return self._owner._cancel_version(self, CANCELLED, msg)

    def _resolve_cancelled(self, reason: str, msg: Any = None) -> bool:
        self._owner = None
        if self.done():
            return False
        self._cancel_reason = reason
        return super().cancel(msg if msg is not None else reason)


class _Run:
    """A running version: its core Task, its Future and the asyncio Task that runs it."""

    __slots__ = ("task", "future", "aio", "stop_reason")

    def __init__(self, task: Any, future: AsyncTaskFuture) -> None:
        self.task = task
        self.future = future
        self.aio: asyncio.Task[Any] | None = None  # None only while create_task runs it eagerly
        self.stop_reason: str | None = None  # set when its asyncio Task is (to be) cancelled


async def _call(run: _Run) -> Any:
    _CURRENT_RUN.set(run)  # in this Task's own context copy
    result = run.task.fn()
    if inspect.isawaitable(result):
        result = await result
    return result


class AsyncScheduler:
    """Run scheduled coroutine functions and callables on the running event loop.

    ``schedule(task_id, run_at, priority, fn)`` keeps the core's contract:
    earliest ``run_at`` (on ``loop.time()``) first, then higher priority, then
    first come; scheduling an id again replaces its pending version (whose
    Future is cancelled, reason "replaced"); a newer version waits for a
    running one. Each call returns the ``AsyncTaskFuture`` of its version. At
    most ``max_concurrency`` versions run at once (None: no limit).

    The scheduler binds to the loop it is first used on. ``async with`` closes
    it on exit (see the module docstring for the close states); running
    versions finish unless ``cancel_running_on_close``. ``_core_factory``
    picks the core class (tests run both implementations).

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
                 _core_factory: Callable[..., Any] | None = None) -> None:
        if max_concurrency is not None:
            max_concurrency = check_capacity(max_concurrency, "max_concurrency")
            if max_concurrency < 1:
                raise ValueError(f"max_concurrency must be >= 1 or None, got {max_concurrency}")
        self._max_concurrency = max_concurrency
        self._cancel_running_on_close = bool(cancel_running_on_close)
        self._core_factory = _core_factory or _impl.Scheduler
        self._loop: asyncio.AbstractEventLoop | None = None
        self._core: Any = None  # made on binding, with the loop's clock
        self._state = OPEN
        self._pending: dict[Hashable, AsyncTaskFuture] = {}
        self._running: dict[Hashable, _Run] = {}
        self._pump_handle: asyncio.Handle | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._counts = dict.fromkeys(
            ("scheduled", "completed", "failed", "cancelled", "replaced"), 0)
        self._peak = 0

    # -- public API -------------------------------------------------------

    @property
    def state(self) -> str:
        """The life-cycle state: open, closing or closed."""
        return self._state

    @property
    def max_concurrency(self) -> int | None:
        """The most versions that run at once; None for no limit."""
        return self._max_concurrency

    def schedule(self, task_id: Hashable, run_at: float, priority: int, fn: Callable[..., Any],
                 args: Iterable[Any] = (), kwargs: Mapping[str, Any] | None = None,
                 ) -> AsyncTaskFuture:
        """Run ``fn(*args, **kwargs)`` at ``run_at`` on ``loop.time()``, as the newest version.

        Returns that version's Future. Must be called on the loop's thread,
        with the loop running. Raises SchedulerClosed unless open, and
        TypeError/ValueError/OverflowError naming a bad argument; a refused
        call changes nothing. O(log n).
        """
        loop = self._bind()
        if self._state is not OPEN:
            raise SchedulerClosed(f"cannot schedule: the scheduler is {self._state}")
        call = _bound_call(fn, args, kwargs)
        version = self._core.schedule(task_id, run_at, priority, call)  # checks the rest
        fut = AsyncTaskFuture(self, task_id, version, loop)
        old = self._pending.get(task_id)
        self._pending[task_id] = fut
        self._counts["scheduled"] += 1
        if old is not None:  # the core has just replaced its version
            old._resolve_cancelled(REPLACED)
            self._counts["replaced"] += 1
        self._request_pump()
        return fut

    def schedule_in(self, task_id: Hashable, delay: float, priority: int, fn: Callable[..., Any],
                    args: Iterable[Any] = (), kwargs: Mapping[str, Any] | None = None,
                    ) -> AsyncTaskFuture:
        """``schedule()`` at ``delay`` (>= 0) seconds from now on ``loop.time()``."""
        delay = check_time(delay, "delay")
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay!r}")
        return self.schedule(task_id, self._bind().time() + delay, priority, fn, args, kwargs)

    def cancel(self, task_id: Hashable) -> bool:
        """Cancel the pending version of ``task_id`` and the asyncio Task of its running one.

        The pending version never starts (its Future is cancelled at once);
        the running one's Future resolves when its function has returned or
        raised. Returns False when nothing of ``task_id`` is pending or
        running. O(1) amortised.
        """
        check_hashable(task_id, "task_id")
        fut = self._pending.get(task_id)
        run = self._running.get(task_id)
        if fut is not None:
            self._cancel_version(fut, CANCELLED)
        if run is not None:
            self._cancel_version(run.future, CANCELLED)
        return fut is not None or run is not None

    def state_of(self, task_id: Hashable) -> str | None:
        """The core's state of ``task_id``'s newest version: "pending", "running" or None."""
        check_hashable(task_id, "task_id")
        return None if self._core is None else self._core.state(task_id)

    def close(self, *, cancel_running: bool | None = None) -> None:
        """Start closing, without waiting: open -> closing (-> closed once nothing runs).

        Cancels every pending version (reason "closed"); with
        ``cancel_running`` (default: the constructor's
        ``cancel_running_on_close``) also the asyncio Tasks of running ones,
        except the caller's own when it is one of them. Idempotent; a later
        call with ``cancel_running=True`` still cancels what runs.
        """
        if cancel_running is None:
            cancel_running = self._cancel_running_on_close
        if self._state is OPEN:
            self._state = check_transition(self._state, CLOSING)
            self._disarm()
            if self._pump_handle is not None:
                self._pump_handle.cancel()
                self._pump_handle = None
            for fut in list(self._pending.values()):
                self._cancel_version(fut, CLOSED)
        if cancel_running:
            self._cancel_running(CLOSED)
        self._maybe_closed()

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
        while len(self._running) > (self._own_run() is not None):
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

    async def __aenter__(self) -> AsyncScheduler:
        self._bind()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def stats(self) -> dict[str, Any]:
        """Counts and sizes: pending, running, peak_running and how versions ended. O(1)."""
        result: dict[str, Any] = {
            "state": self._state,
            "pending": len(self._pending),
            "running": len(self._running),
            "peak_running": self._peak,
            "max_concurrency": self._max_concurrency,
        }
        result.update(self._counts)
        return result

    def __repr__(self) -> str:
        return (f"<AsyncScheduler {self._state} max_concurrency={self._max_concurrency}"
                f" pending={len(self._pending)} running={len(self._running)}>")

    def _check(self) -> None:
        """Assert the invariants of the module docstring (tests call this)."""
        counts = self._counts
        assert counts["scheduled"] == len(self._pending) + len(self._running) + sum(
            counts[k] for k in ("completed", "failed", "cancelled", "replaced")), "ledger"
        cap = self._max_concurrency
        assert cap is None or len(self._running) <= cap, "cap"
        if self._core is not None:
            self._core._check()
            assert len(self._core) == len(self._pending), "pending mirrors the core"
            assert self._core.stats()["running"] == len(self._running), "running mirrors the core"
            for task_id in self._pending:
                assert self._core.state(task_id) == "pending"
        if self._state is not OPEN:
            assert not self._pending and self._timer is None
        if self._state is CLOSED:
            assert not self._running

    # -- internals ----------------------------------------------------------

    def _bind(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
            self._core = self._core_factory(clock=loop.time)
        elif self._loop is not loop:
            raise RuntimeError("this AsyncScheduler is bound to a different event loop")
        return loop

    def _own_run(self) -> _Run | None:
        run = _CURRENT_RUN.get()
        return run if run is not None and self._running.get(run.task.task_id) is run else None

    def _cancel_version(self, fut: AsyncTaskFuture, reason: str, msg: Any = None) -> bool:
        """Cancel the version of ``fut``, pending or running."""
        task_id = fut.task_id
        if self._pending.get(task_id) is fut:
            del self._pending[task_id]
            # Drops the pending version; a running older one only gets the
            # core's cancel_requested flag, which this class does not act on.
            self._core.cancel(task_id)
            self._counts["cancelled"] += 1
            return fut._resolve_cancelled(reason, msg)
        run = self._running.get(task_id)
        if run is None or run.future is not fut:  # already finished
            return False
        if run.stop_reason is None:
            run.stop_reason = reason
        if run.aio is None:  # starting eagerly: cancelled by _start once create_task returns
            return True
        return run.aio.cancel(msg if msg is not None else reason)

    def _cancel_running(self, reason: str) -> None:
        own = self._own_run()
        for run in list(self._running.values()):
            if run is not own:
                self._cancel_version(run.future, reason)

    def _request_pump(self) -> None:
        if self._pump_handle is None and self._state is OPEN:
            assert self._loop is not None
            self._pump_handle = self._loop.call_soon(self._pump)

    def _pump(self) -> None:
        """Claim every due version below the cap, then arm the timer for the next."""
        self._pump_handle = None
        if self._state is not OPEN:
            return
        assert self._loop is not None
        core = self._core
        now = self._loop.time()
        cap = self._max_concurrency
        while cap is None or len(self._running) < cap:
            head = core.next(now)
            if head is None:
                break
            if isinstance(head, float):
                self._arm(now + head)
                return
            self._start(head)
        self._disarm()  # empty, or at the cap: a finishing run pumps again

    def _start(self, task: Any) -> None:
        fut = self._pending.pop(task.task_id)
        run = _Run(task, fut)
        self._running[task.task_id] = run
        self._peak = max(self._peak, len(self._running))
        assert self._loop is not None
        run.aio = self._loop.create_task(_call(run))
        run.aio.add_done_callback(functools.partial(self._finished, run))
        if run.stop_reason is not None:  # cancelled while an eager task factory ran it
            run.aio.cancel(run.stop_reason)

    def _finished(self, run: _Run, aio: asyncio.Task[Any]) -> None:
        """Done callback of a run's asyncio Task: record the outcome, resolve its Future."""
        task, fut = run.task, run.future
        del self._running[task.task_id]
        fut._owner = None
        if aio.cancelled():
            self._core.fail(task, asyncio.CancelledError())
            self._counts["cancelled"] += 1
            fut._resolve_cancelled(run.stop_reason or CANCELLED)
        else:
            exc = aio.exception()
            if exc is None:
                self._core.complete(task)
                self._counts["completed"] += 1
                if not fut.done():
                    fut.set_result(aio.result())
            else:
                self._core.fail(task, exc)
                self._counts["failed"] += 1
                if not fut.done():
                    fut.set_exception(exc)
        self._maybe_closed()
        self._request_pump()  # a slot is free, and a parked newer version may be due

    def _maybe_closed(self) -> None:
        if self._state is CLOSING and not self._running:
            self._state = check_transition(self._state, CLOSED)
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _arm(self, when: float) -> None:
        timer = self._timer
        if timer is not None:
            if timer.when() == when:
                return
            timer.cancel()
        assert self._loop is not None
        self._timer = self._loop.call_at(when, self._on_timer)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        self._timer = None
        self._pump()


def _bound_call(fn: Callable[..., Any], args: Iterable[Any],
                kwargs: Mapping[str, Any] | None) -> Callable[[], Any]:
    """``fn`` with its arguments bound, after checking all three."""
    check_callable(fn, "fn")
    if isinstance(args, (str, bytes)) or not isinstance(args, Iterable):
        raise TypeError(f"args must be an iterable of arguments, not {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a mapping, not {type(kwargs).__name__}")
    args = tuple(args)
    if not args and not kwargs:
        return fn
    return functools.partial(fn, *args, **(kwargs or {}))
