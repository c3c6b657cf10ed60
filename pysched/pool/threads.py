"""The threads of a pool: its workers and its dispatcher, around a PoolBook.

``PoolThreads`` owns the lock, the worker and dispatcher threads and what
they wait on; the book (``pysched.pool.pool_book``) holds the versions, and
this class is its ``Wakeups``. A worker finishes its task and claims the next due
one in one critical section, so a busy pool moves from task to task without
waking anyone. A free worker that finds the head not yet due waits for it
itself, on ``timer_cv`` (the timing worker: one at a time), and claims it
when due, so a task starts after one wake-up rather than a hand-off from the
dispatcher; when it claims, an idle worker takes over the timing. Other free
workers idle on ``work_ready`` until some thread hands them a version it
claimed for them (``handoff``), makes them the timing worker, or the pool
closes. The dispatcher waits for the deadlines of running versions with a
timeout, and for the head only while no worker times it.

The lock is a ``pysched.pool.lock.PoolLock``: under the GIL a
``threading.Lock`` this busy falls into a convoy (see that module).

Lock order and who runs what: one lock, with four Conditions on it (idle
workers, the timing worker, the dispatcher, close waiters); cancel tokens
wait on it too. Under it run only the book, the core, dict, deque and
Condition operations, and task ids' ``__hash__``/``__eq__`` (which therefore
must not call back into the pool). A TaskFuture's own lock is taken only
without this one, except that nothing else is ever locked inside a Future's
lock, so the order is this lock, then a Future's. User code and where it runs:

- task functions: on the worker that started the version;
- done callbacks: on the thread that resolves the Future: the worker that ran
  it, or the thread whose call ended it (cancel, a replacing schedule, close),
  or the thread that adds a callback to a done Future;
- cancel-token callbacks: on the thread whose call set the token (cancel,
  close), and for timeouts on a short-lived thread of their own, never on the
  dispatcher, so a slow or raising callback delays no due task or timeout;
- the clocks: on any of these threads, always outside the lock (a stale
  reading only delays a claim: nothing starts early), read through the
  pool's ``Clocks`` (``pysched.pool.clocks``), except a clock's
  ``wait_until`` hook, which waits on our Condition.

Objects a call drops are held until the lock is released, so their
finalisers run outside it.

Faults: an exception from a task's function fails its Future. A clock that
fails closes the pool, logged once (``clock_broken``, the handler the
pool's ``Clocks`` calls); a pool thread goes on with the latest good reading
meanwhile. A pool thread that dies of any exception (a done callback raising
SystemExit, say) is logged and closes the pool, so every Future resolves.

Life: workers hold the book and this object, never the ThreadPoolScheduler,
which holds them; once the scheduler is no longer referenced the pool drains
and its threads exit, as ThreadPoolExecutor's do. At interpreter exit every
pool still open runs what is running and already due, cancels the rest
(reason "closed"), and its threads are joined before the interpreter goes
on; after that, schedules raise RuntimeError, as ThreadPoolExecutor's.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

from .._close_state import CLOSED as STATE_CLOSED
from .._close_state import CLOSING
from .book import CANCELLED, CLOSED, TIMEOUT, NoWakeups
from .clocks import Clocks, Waiter
from .future import TaskFuture
from .lock import hot_path_ops, pool_lock
from .pool_book import PoolBook, PoolVersion, end_futures
from .token import CancelToken, current_run, run_callbacks, scheduler_token

LOGGER = logging.getLogger("pysched")
_INF = math.inf

__all__ = ["PoolThreads"]

# Pools whose threads may still run: joined at interpreter exit.
_live: weakref.WeakSet[PoolThreads] = weakref.WeakSet()
_exiting = False


def _interpreter_exit() -> None:
    """threading's exit hook: finish what is due in every pool and join its threads."""
    global _exiting
    _exiting = True
    pools = list(_live)
    for pool in pools:
        pool.exit_interpreter()
    for pool in pools:
        pool.wait_closed(None)


threading._register_atexit(_interpreter_exit)  # type: ignore[attr-defined]
if hasattr(os, "register_at_fork"):
    # A forked child has none of its parent's pool threads (and a parent's lock
    # may be held for good there): its exit must not wait for them.
    os.register_at_fork(after_in_child=_live.clear)


def _exit_refusal(message: str) -> RuntimeError:
    return RuntimeError("cannot schedule new futures after interpreter shutdown")


class PoolThreads:
    """The lock, the threads and the loops of one pool (see the module docstring)."""

    def __init__(self, book_factory: Callable[[PoolThreads], PoolBook],
                 clocks: Clocks, wait: Waiter, prefix: str) -> None:
        self.lock = pool_lock()  # see pysched.pool.lock for why it is not a threading.Lock
        # The lock's own methods, for the sections every task goes through.
        self.try_lock, self.wait_lock, self.unlock = hot_path_ops(self.lock)
        self.work_ready = threading.Condition(self.lock)  # idle workers wait here
        self.dispatch_cv = threading.Condition(self.lock)  # the dispatcher waits here
        self.timer_cv = threading.Condition(self.lock)  # the timing worker waits here
        self.closed_cv = threading.Condition(self.lock)  # close(wait=True) waits here
        self.clocks = clocks
        # Held weakly: no reference cycle through the clocks, as through the book.
        clocks.when_broken(partial(_clock_broken, weakref.ref(self)))
        self.clock_failed = False  # logged once
        self.wait = wait
        self.prefix = prefix
        self.book = book = book_factory(self)
        self.handoff: deque[PoolVersion] = deque()  # claimed for idle workers
        self.idle = 0  # workers waiting on work_ready and not yet notified
        self.dispatch_at = -_INF  # when the dispatcher wakes (-inf: it is awake)
        self.timing = False  # a free worker waits on timer_cv for the head to come due
        self.timer_at = _INF  # when it wakes
        self.inside_closers = 0  # pool threads waiting in close(wait=True)
        self.threads: list[threading.Thread] = []
        self.thread_ids: set[int] = set()
        self.workers_alive = book.max_running
        self.alive = book.max_running + 1  # workers and the dispatcher
        self._owner_ref: weakref.ref[Any] | None = None
        for n in range(book.max_running):
            self._start(self._work_loop, f"{prefix}-worker-{n}")
        self._start(self._dispatch_loop, f"{prefix}-dispatcher")
        _live.add(self)
        if _exiting:  # made while the interpreter exits: refuse work, as everything else does
            self.exit_interpreter()

    def _start(self, loop: Callable[[], None], name: str) -> None:
        # Daemon threads: the exit hook joins them, whatever the interpreter does.
        thread = threading.Thread(target=self._run_thread, args=(loop,), name=name, daemon=True)
        self.threads.append(thread)
        thread.start()
        self.thread_ids.add(thread.ident)  # type: ignore[arg-type]

    def watch_owner(self, owner: Any) -> None:
        """Drain and let the threads exit once ``owner`` is no longer referenced."""
        # The callback holds this object weakly too: no reference cycle through it.
        self._owner_ref = weakref.ref(owner, partial(_owner_gone, weakref.ref(self)))

    # -- the book's Wakeups (called under the lock) -------------------------------------

    def pending_added(self, run_at: float, now: float) -> None:
        if run_at <= now:
            if self.idle:
                self.fill_handoff(now)
            elif self.timing:  # the timing worker is free: it claims it
                self.timer_cv.notify()
        elif self.timing:
            if run_at < self.timer_at:  # due before what it waits for: it times this one
                self.timer_cv.notify()
        elif self.idle:  # an idle worker becomes the timing one
            self.idle -= 1
            self.work_ready.notify()

    def pending_removed(self, run_at: float) -> None:
        if run_at <= self.dispatch_at < _INF:  # it may be the head the dispatcher waits for
            self.dispatch_at = -_INF
            self.dispatch_cv.notify()
        if run_at <= self.timer_at < _INF:  # or the head the timing worker waits for
            self.timer_cv.notify()

    def deadline_added(self, deadline: float) -> None:
        if deadline < self.dispatch_at:
            self.dispatch_at = -_INF
            self.dispatch_cv.notify()

    def state_changed(self, state: str) -> None:
        if state is CLOSING:  # wake every thread: workers exit, the dispatcher re-checks
            self.idle = 0
            self.work_ready.notify_all()
            self.dispatch_at = -_INF
            self.dispatch_cv.notify()
            self.timer_cv.notify_all()
        self.closed_cv.notify_all()

    # -- calls from the scheduler and its Futures ------------------------------------------

    def add(self, task_id: Any, run_at: float, priority: int, run: PoolVersion,
            now: float) -> TaskFuture:
        """Add ``run`` as the pending version of ``task_id``; its Future."""
        ended: list[PoolVersion] = []
        with self.lock:
            self.book.add(task_id, run_at, priority, run, now, ended)
        if ended:
            end_futures(ended)
        return run.future  # type: ignore[return-value]  # made by add()

    def cancel(self, task_id: Any) -> bool:
        ended: list[PoolVersion] = []
        callbacks = None
        with self.lock:
            found, started = self.book.cancel(task_id, CANCELLED, ended)
            if started is not None:
                callbacks = self.book.request_stop(started, CANCELLED)
        try:
            end_futures(ended)
        finally:  # the token no longer holds them: they run now or never
            if callbacks:
                run_callbacks(callbacks)
        return found

    def cancel_future(self, fut: TaskFuture) -> bool | None:
        """FutureOwner: Future.cancel() of one of this pool's Futures (see TaskFuture.cancel)."""
        ended: list[PoolVersion] = []
        with self.lock:
            outcome = self.book.cancel_future(fut, ended)
        end_futures(ended)
        return None if outcome is None else outcome[0]

    def token_for(self, run: PoolVersion) -> CancelToken:
        """PoolOwner: the token of ``run``'s current run, made on first use."""
        with self.lock:
            return self.book.token_for(run, self._new_token)

    def _new_token(self, reason: str | None) -> CancelToken:
        return scheduler_token(self.lock, self.clocks.now, self.wait, reason)

    def close(self, cancel_running: bool) -> None:
        """open or draining -> closing; with ``cancel_running`` set the running tokens."""
        ended: list[PoolVersion] = []
        callbacks: list[Callable[[], Any]] = []
        with self.lock:
            self.book.close(ended)
            if cancel_running:
                for run in self.book.running.values():
                    callbacks.extend(self.book.request_stop(run, CLOSED) or ())
        try:
            end_futures(ended)
        finally:  # the tokens no longer hold them: they run now or never
            run_callbacks(callbacks)

    def drain(self, due_by: float | None = None) -> None:
        """open -> draining (see Book.drain)."""
        ended: list[PoolVersion] = []
        with self.lock:
            self.book.drain(ended, due_by)
        end_futures(ended)

    def exit_interpreter(self) -> None:
        now = self.clocks.now(fallback=True)
        with self.lock:
            self.book.refusal = _exit_refusal
        self.drain(due_by=now)

    def is_pool_thread(self) -> bool:
        return threading.get_ident() in self.thread_ids

    # -- claiming for idle workers ---------------------------------------------------

    def fill_handoff(self, now: float) -> float | None:
        """Claim due versions for idle workers; the head's hint if it stopped on one not due."""
        book = self.book
        while self.idle:
            work = book.claim(now)
            if work is None or work.__class__ is float:
                return work
            self.handoff.append(work)  # type: ignore[arg-type]
            self.idle -= 1
            self.work_ready.notify()
        return None

    def _next_work(self, now: float, ended: list[PoolVersion]) -> PoolVersion | float | None:
        """A started version for this worker, or the core's hint; under the lock.

        A claimed version that was ended before it started is released here.
        """
        book = self.book
        handoff = self.handoff
        while True:
            work = handoff.popleft() if handoff else book.claim(now)
            if work is None or work.__class__ is float:
                return work
            if book.start(work):  # type: ignore[arg-type]
                return work
            book.finish(work, False, now, now, None, ended)  # type: ignore[arg-type]
            # Held until the lock is released, as everything dropped here (its Future
            # was cancelled by whoever ended it: end_futures leaves it so).
            ended.append(work)  # type: ignore[arg-type]

    # -- the worker ----------------------------------------------------------------

    def _work_loop(self) -> None:
        lock = self.lock
        try_lock, wait_lock, unlock = self.try_lock, self.wait_lock, self.unlock
        read_clock = self.clocks.now  # read_clock(True): the latest good reading if it fails
        book = self.book
        set_current = current_run.set
        reset_current = current_run.reset
        run: PoolVersion | None = None  # the version this worker ran last
        work: Any = None  # a started version not run yet, or the core's hint: float or None
        result: Any = None
        failure: BaseException | None = None
        resolves = False
        start = now = book.epoch
        ended: list[PoolVersion] = []
        try:
            while True:
                now = read_clock(True)
                # Finish the previous version and start the next in one critical section.
                if not try_lock(False):
                    wait_lock()
                broken = None
                try:
                    if run is not None:
                        failure, resolves = book.finish(run, True, start, now, failure, ended)
                    # Done callbacks are user code that may take long: claim the next
                    # version only after them, so it does not wait behind them while
                    # another worker could run it.
                    if run is None or not (resolves and run.future.has_done_callbacks()):  # type: ignore[union-attr]
                        try:
                            work = self._next_work(now, ended)
                        except BaseException as exc:  # noqa: BLE001 - raised once run is settled
                            broken = exc
                finally:
                    unlock()
                if run is not None:
                    if resolves:
                        run.future.settle(result, failure)  # type: ignore[union-attr]
                    run = result = failure = None
                if ended:
                    end_futures(ended)
                    ended.clear()
                if broken is not None:
                    raise broken
                if work is None or work.__class__ is float:
                    work = self._wait_for_work(now)
                    if work is None:
                        return
                run = work
                start = read_clock(True)
                if run.timeout is not None:
                    with lock:
                        book.track_timeout(run, start)
                work = None  # it runs now: its Future gets what fn gives
                context = set_current(run)
                try:
                    kwargs = run.kwargs  # ** of an empty mappingproxy still copies it: skip it
                    result = run.fn(*run.args, **kwargs) if kwargs else run.fn(*run.args)
                except BaseException as exc:  # the worker survives whatever fn raises
                    failure = exc
                finally:
                    reset_current(context)
        except BaseException as exc:
            # Settle what this worker started and will never settle, not lose it:
            # a version it never ran fails; one it ran gets what its fn gave.
            if work is not None and work.__class__ is PoolVersion:
                self._abandon(work, exc, None)
            elif run is not None:
                self._abandon(run, exc, (start, result, failure))
            raise

    def _abandon(self, run: PoolVersion, exc: BaseException,
                 ran: tuple[float, Any, BaseException | None] | None) -> None:
        """The worker dies with ``run`` started: finish it and settle its Future.

        ``ran`` is (start, result, failure) if fn ran, None if it never did.
        """
        fut = run.future
        assert fut is not None
        if fut.done():  # settled already: a done callback killed the worker
            return
        if ran is None:
            died = RuntimeError(f"the worker that started task {run.task_id!r} died")
            died.__cause__ = exc
            ran = (-_INF, None, died)
        start, result, failure = ran
        resolves = run.series is None  # if the book refuses: a series ends when the pool closes
        ended: list[PoolVersion] = []
        try:
            with self.lock:
                if self.book.running.get(run.task_id) is run:  # not finished yet
                    failure, resolves = self.book.finish(run, True, start, start, failure,
                                                         ended)
        finally:  # even if the book refuses (what killed the worker may strike again)
            if resolves:
                fut.settle(result, failure)
            end_futures(ended)

    def _wait_for_work(self, now: float) -> PoolVersion | None:
        """Idle until there is work for this worker; None when it must exit."""
        lock = self.lock
        ended: list[PoolVersion] = []
        try:
            while True:
                with lock:
                    work = self._next_work(now, ended)
                    if work is not None and work.__class__ is not float:
                        self._pass_timing()
                        return work  # type: ignore[return-value]
                    state = self.book.state
                    if state is CLOSING or state is STATE_CLOSED:
                        return None
                    if work is not None and not self.timing:
                        # Nobody times the head: this worker does, and claims it when
                        # due itself, with no hand-off from another thread on the way.
                        self.timing = True
                        self.timer_at = now + work
                        try:
                            self.wait(self.timer_cv, self.timer_at, now)
                        finally:  # a clock's wait_until hook may raise
                            self.timing = False
                            self.timer_at = _INF
                    else:
                        self.idle += 1
                        self.work_ready.wait()
                        if self.handoff:  # the notifier claimed it for us (or any free worker)
                            work = self._next_work(now, ended)
                            if work is not None and work.__class__ is not float:
                                self._pass_timing()
                                return work  # type: ignore[return-value]
                if ended:
                    end_futures(ended)
                    ended.clear()
                now = self.clocks.now(fallback=True)  # notified without a task: look again
        finally:
            if ended:
                end_futures(ended)

    def _pass_timing(self) -> None:
        """A free worker claimed work: an idle one takes over timing the next head, if any."""
        if self.idle and not self.timing and len(self.book.core):
            self.idle -= 1
            self.work_ready.notify()

    # -- the dispatcher ----------------------------------------------------------

    def _dispatch_loop(self) -> None:
        clocks = self.clocks
        while True:
            now = clocks.now(fallback=True)
            fired: list[Callable[[], Any]] = []
            with self.lock:
                book = self.book
                if book.state is CLOSING and not self.workers_alive:
                    return
                if book.deadlines:
                    for run in book.expired(now):
                        fired.extend(book.request_stop(run, TIMEOUT) or ())
                hint = self.fill_handoff(now) if self.idle else None
                if not fired:
                    # A timing worker waits for the head itself; else it is ours.
                    deadline = _INF if hint is None or self.timing else now + hint
                    first = book.deadlines.first()
                    if first is not None and first < deadline:
                        deadline = first
                    self.dispatch_at = deadline
                    self.wait(self.dispatch_cv, None if deadline == _INF else deadline, now)
                    self.dispatch_at = -_INF
            if fired:  # user code: never on this thread
                threading.Thread(target=_run_timeout_callbacks, args=(fired,),
                                 name=f"{self.prefix}-timeout-callbacks", daemon=True).start()

    # -- exits -------------------------------------------------------------------

    def _run_thread(self, loop: Callable[[], None]) -> None:
        try:
            loop()
        except BaseException:
            LOGGER.exception("pysched: pool thread %s died; closing the scheduler",
                             threading.current_thread().name)
            self.close(cancel_running=False)
        finally:
            with self.lock:
                self._thread_exit(worker=loop.__name__ == "_work_loop")

    def _thread_exit(self, worker: bool) -> None:
        if worker:
            self.workers_alive -= 1
            if not self.workers_alive:  # the dispatcher exits after the last worker
                self.dispatch_at = -_INF
                self.dispatch_cv.notify()
        self.alive -= 1
        if not self.alive:
            if self.book.state is not CLOSING:  # a thread died early: still end closed
                self.book.state = CLOSING
            self.book.set_state(STATE_CLOSED)
            self.book.wakeups = NoWakeups()  # no cycle between the book and this object
            _live.discard(self)
        self.closed_cv.notify_all()

    def wait_closed(self, timeout: float | None) -> bool:
        """Wait until every pool thread but the caller's has exited, or ``timeout`` passes.

        A pool thread (a task or a done callback calling close) waits only for
        the workers not themselves waiting in here, so two closers never wait
        for each other; the dispatcher outlives the workers, so it is not waited for.
        """
        inside = self.is_pool_thread()
        now = self.clocks.now(fallback=True)  # closing anyway: a broken clock cannot stop it
        deadline = None if timeout is None else now + timeout
        with self.lock:
            self.inside_closers += inside
        try:
            while True:
                with self.lock:
                    if self.book.state is STATE_CLOSED:
                        break
                    if inside and self.workers_alive <= self.inside_closers:
                        self.closed_cv.notify_all()  # the other closers inside may return too
                        return True
                    if deadline is not None and now >= deadline:
                        return False
                    self.wait(self.closed_cv, deadline, now)
                now = self.clocks.now(fallback=True)
        finally:
            with self.lock:
                self.inside_closers -= inside
        if not inside:
            for thread in self.threads:
                thread.join()
        return True

    # -- the clock ----------------------------------------------------------------

    def clock_broken(self, error: BaseException) -> None:
        """A clock failed (``pysched.pool.clocks``): the pool's one way with it is to log it,
        once, and close, as ``close(cancel_running=False)`` does."""
        if not self.clock_failed:
            self.clock_failed = True
            LOGGER.error("pysched: the clock failed; closing the scheduler", exc_info=error)
        self.close(cancel_running=False)


def _clock_broken(pool_ref: weakref.ref[PoolThreads], error: BaseException) -> None:
    pool = pool_ref()
    if pool is not None:
        pool.clock_broken(error)


def _owner_gone(pool_ref: weakref.ref[PoolThreads], _: Any) -> None:
    """A pool's scheduler was collected: drain the pool, so that its threads exit."""
    pool = pool_ref()
    if pool is None:
        return
    # The collector may run this on a thread that holds the pool's lock: never block on it.
    if pool.lock.acquire(blocking=False):
        pool.lock.release()
        pool.drain()
    else:
        threading.Thread(target=pool.drain, name=f"{pool.prefix}-drain", daemon=True).start()


def _run_timeout_callbacks(callbacks: list[Callable[[], Any]]) -> None:
    for fn in callbacks:
        try:
            fn()
        except BaseException:  # noqa: BLE001 - a callback must not stop the others
            LOGGER.exception("pysched: exception in timeout callback %r", fn)
