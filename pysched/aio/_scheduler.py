"""AsyncScheduler: the core Scheduler's tasks run on an asyncio event loop.

See the package docstring (``pysched.aio``) for the invariants, the close
states and the lifetime; this module is the scheduler itself.

The public class checks arguments and builds Futures; it is joined to its
parts by composition, as ThreadPoolScheduler is: a ``Book``
(``pysched.pool.book``: versions, state, counts) driven by a ``LoopRunner``
(``pysched.aio._runner``: the loop, the pump, the timer, the host, the
Tasks), and a ``SeriesDriver`` (``pysched.aio.series``) for the recurring
series.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from contextvars import copy_context
from functools import partial
from threading import get_ident
from typing import Any, cast

from .. import _impl
from .._close_state import CLOSED as STATE_CLOSED
from .._close_state import OPEN
from .._validate import check_capacity, check_hashable, check_time
from ..calendar import Cron, Event, Every, SeriesHandle
from ..pool.book import Book, NoWakeups
from ..pool.clocks import Clocks
from ._calls import bound_call
from ._future import CANCELLED, CLOSED, REPLACED, AsyncTaskFuture, version_future
from ._runner import LoopRunner
from ._version import AioVersion
from .series import SeriesDriver

__all__ = ["AsyncScheduler"]

LOGGER = logging.getLogger("pysched.aio")

# schedule()'s default, the same object as every (): without arguments fn is
# stored as it is, and the core checks it.
_NO_ARGS: tuple[Any, ...] = ()
_new_record = object.__new__

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

    Its clocks, ``loop.time()`` and ``wall_clock``, are read through one
    ``pysched.pool.clocks.Clocks``, which checks each reading: a finite real
    number, and on ``loop.time()`` never behind the latest one (a reading
    set back is taken as the latest). A clock that raises or gives anything
    else is broken, and the scheduler closes, as ``close()`` does, logged
    once on the "pysched.aio" logger. The call that read it
    (``schedule_in``, ``schedule_recurring``, a series handle's
    ``next_fire_times`` or ``resume``) raises the clock's error, or
    TypeError/ValueError naming ``loop.time()`` or ``wall_clock()``; the
    loop's own callbacks (the pump, a series' wake-up, a run starting or
    ending) go on with the latest good reading.

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
        # Every reading of the wall clock and of loop.time() goes through these.
        self._clocks = clocks = Clocks(wall_clock)
        clocks.when_broken(self._clock_broken)
        self._clock_failed = False  # logged once
        # The versions, the state and the counts, in the pool's book: nothing to
        # wake (the pump looks for itself), no bound, no aging, no lateness kept.
        # Its core is made on binding, with the loop's clock.
        self._book: Book[AioVersion] = Book(None, max_concurrency or sys.maxsize, None,
                                            NoWakeups())
        self._runner = runner = LoopRunner(self._book, max_concurrency,
                                           _core_factory or _impl.Scheduler,
                                           partial(self.close, cancel_running=True), clocks)
        # The running versions waiting in aclose() (see there).
        self._closers: set[AioVersion] = set()
        # The driver's type names asyncio.Future; AsyncTaskFuture keeps its protocol.
        self._series = SeriesDriver(clocks, cast(Any, self.schedule), runner.on_loop_shutdown,
                                    runner.replace_one_shot, runner.check_caller)

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
        # On the loop's thread with the loop running, as bind() last saw: the
        # loop runs this thread's calls (cheaper than get_running_loop(), which
        # on 3.10 and 3.11 makes a getpid() system call each time).
        runner = self._runner
        if get_ident() != runner.thread or not runner.loop_running():
            runner.bind()
        loop: Any = runner.loop
        book = self._book
        if book.state is not OPEN:
            book.check_open("schedule")
        call = fn if args is _NO_ARGS and kwargs is None else bound_call(fn, args, kwargs)
        version = book.core.schedule(task_id, run_at, priority, call)  # checks the rest
        series = self._series
        if series.entries and series.holds(task_id):  # one id, one thing: this replaces it
            series.end(task_id, REPLACED)
        fut = version_future(loop, runner, task_id, version)
        run = _new_record(AioVersion)  # without __init__: a call per version fewer
        run.future = fut
        # A context without variables is not kept: the version gets a fresh empty
        # one when it starts, the same to it, and nothing more for the
        # collector to walk while it is pending.
        run.context = copy_context() or None
        run.aio = None
        # Book.adopt()'s path for an id with nothing pending or running, inline
        # (tests/aio/test_aio_book.py pins the two; see _pump for why); else the
        # book's own, which ends the version this one replaces.
        old = book.pending.setdefault(task_id, run)
        running = book.running
        if old is run and (not running or task_id not in running):
            run.task_id = task_id
        else:
            ended = book.adopt(task_id, run)
            if ended:
                runner.end_unstarted(ended)
        if runner.host is None or runner.pump_handle is None:
            runner.version_added()  # a host while there is work, and a pump to come
        return fut

    def schedule_in(self, task_id: Hashable, delay: float, priority: int, fn: Callable[..., Any],
                    args: Iterable[Any] = (), kwargs: Mapping[str, Any] | None = None,
                    ) -> AsyncTaskFuture[Any]:
        """``schedule()`` at ``delay`` (>= 0) seconds from now on ``loop.time()``."""
        delay = check_time(delay, "delay")
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay!r}")
        self._runner.bind()
        return self.schedule(task_id, self._clocks.now() + delay, priority, fn, args, kwargs)

    def cancel(self, task_id: Hashable) -> bool:
        """Cancel the version of ``task_id`` that has not started, and the one that runs.

        A version that has not started (pending, or claimed while its
        coroutine has not begun) never starts, and its Future is cancelled at
        once; a running one has its asyncio Task cancelled, and its Future
        resolves when its function has returned or raised. Returns False
        when nothing of ``task_id`` is pending or running. Called from another
        thread while the loop runs, or once the loop closed, raises
        RuntimeError and changes nothing. O(1) amortised.
        """
        check_hashable(task_id, "task_id")
        self._runner.check_caller()
        found = self._runner.cancel(task_id)
        series = self._series.end(task_id, CANCELLED)
        self._runner.settle()
        return found or series

    def state_of(self, task_id: Hashable) -> str | None:
        """The core's state of ``task_id``'s newest version: "pending", "running" or None."""
        check_hashable(task_id, "task_id")
        core = self._book.core
        return None if core is None else core.state(task_id)

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
        loop = self._runner.bind()
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
        call with ``cancel_running=True`` still cancels what runs. Called
        from another thread while the loop runs, or once the loop closed,
        raises RuntimeError and changes nothing.
        """
        if cancel_running is None:
            cancel_running = self._cancel_running_on_close
        runner = self._runner
        runner.check_caller()
        if self._book.state is OPEN:
            runner.close()  # open -> closing: what has not started ends, the pump stops
            self._series.close()  # its listeners are called
        if cancel_running:
            runner.cancel_running(CLOSED)
        runner.settle()

    async def aclose(self, *, cancel_running: bool | None = None) -> None:
        """``close()``, then wait until every running version has finished.

        Called from inside one of its own running versions it waits for the
        others only, and not for those that wait in ``aclose()`` too (the
        scheduler is closed once they return). If the caller is cancelled
        while it waits, the running versions are cancelled too, waited for,
        and the CancelledError is raised again; cancelled a second time, it
        stops waiting at once.
        """
        runner = self._runner
        # Running versions waiting in here are not waited for: each of two would
        # wait for the other. One joins before close() wakes the others to look.
        own = runner.own_run()
        if own is not None:
            self._closers.add(own)
        interrupted: asyncio.CancelledError | None = None
        try:
            self.close(cancel_running=cancel_running)
            while len(self._book.running) > len(self._closers) or runner.orphans:
                try:
                    await runner.next_settle()
                except asyncio.CancelledError as exc:
                    if interrupted is not None:  # cancelled again: stop waiting
                        raise
                    interrupted = exc
                    runner.cancel_running(CLOSED)
        finally:
            if own is not None:
                self._closers.discard(own)
        if interrupted is not None:
            raise interrupted
        host = runner.ended_host
        if host is not None and not host.done():  # it returns on its next step
            await asyncio.wait((host,))

    async def __aenter__(self) -> AsyncScheduler:
        self._runner.bind()
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

    def _clock_broken(self, error: BaseException) -> None:
        """A clock failed (``pysched.pool.clocks``): the scheduler's one way with it is to log
        it, once, and close, as ``close()`` does."""
        if not self._clock_failed:
            self._clock_failed = True
            LOGGER.error("pysched: the clock failed; closing the AsyncScheduler", exc_info=error)
        self.close()

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
        core = book.core
        if core is not None:
            core._check()
            assert len(core) == len(pending), "pending mirrors the core"
            assert core.stats()["running"] == len(running), "running mirrors the core"
            for task_id in pending:
                assert core.state(task_id) == "pending"
        runner = self._runner
        if book.state is OPEN:
            assert (runner.host is None) == (not pending and not running), "host"
        else:
            assert not pending and not (runner.timer and runner.timer.armed)
        if book.state is STATE_CLOSED:
            assert not running and not runner.orphans

    @property
    def _core(self) -> Any:
        """The core Scheduler, made on binding (None before); tests read it."""
        return self._book.core

    def _counts(self) -> dict[str, int]:
        """How many versions were scheduled and how they ended (see _COUNTERS)."""
        core = self._book.core
        core_stats = {"scheduled": 0, "completed": 0} if core is None else core.stats()
        result = {"scheduled": core_stats["scheduled"], "completed": core_stats["completed"]}
        result.update((name, getattr(self._book.counts, name)) for name in _COUNTERS)
        return result
