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
  close), and for timeouts on a short-lived thread of their own, not on the
  dispatcher, so a slow or raising callback delays no due task or timeout
  (only when the system cannot start that thread, the dispatcher runs them);
- the clocks: on any of these threads, always outside the lock (a stale
  reading only delays a claim: nothing starts early), read through the
  pool's ``Clocks`` (``pysched.pool.clocks``), except a clock's
  ``wait_until`` hook, which waits on our Condition.

Objects a call drops are held until the lock is released, so their
finalisers run outside it.

Threads start as work needs them: the first worker and the dispatcher with
the first version added, then a worker whenever an add leaves more pending
and claimed versions than workers (``_spare_worker``), up to max_workers. A
worker never exits before the pool closes, so that count only grows.

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

from .. import events as ev
from .._close_state import CLOSED as STATE_CLOSED
from .._close_state import CLOSING, OPEN
from .book import CANCELLED, CLOSED, TIMEOUT, NoWakeups
from .clocks import Clocks, Waiter
from .future import TaskFuture
from .lock import hot_path_ops, pool_lock
from .pool_book import PoolBook, PoolVersion, end_futures
from .pool_events import (
    Finish,
    emit_ended,
    emit_started,
    finish_of,
    name_of,
    post_finished,
    post_scheduled,
)
from .token import (
    CancelToken,
    TaskCancelled,
    TaskTimeout,
    current_run,
    run_callbacks,
    scheduler_token,
)

LOGGER = logging.getLogger("pysched")
TASK_LOG = logging.getLogger("pysched.pool")  # failed runs, and listeners that raise
_INF = math.inf
_SCHEDULED, _STARTED = ev.SCHEDULED, ev.STARTED

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
        self.threads: list[threading.Thread] = []  # every thread started, to join
        self.thread_ids: set[int] = set()  # each thread adds its own, before its loop
        # Threads start as work needs them (see _spare_worker); none before the first.
        self.workers = 0  # worker threads started or about to start; they exit only on close
        self.worker_limit = book.max_running  # lowered to ``workers`` if one fails to start
        self.workers_alive = 0
        self.alive = 0  # workers and the dispatcher
        self.dispatcher_settled = False  # it reached its first wait, or exited
        self._owner_ref: weakref.ref[Any] | None = None
        self.events = ev.Listeners(TASK_LOG)
        _live.add(self)
        if _exiting:  # made while the interpreter exits: refuse work, as everything else does
            self.exit_interpreter()

    # -- starting threads ------------------------------------------------------------

    def _reserve(self, worker: bool) -> threading.Thread:
        """A thread, counted alive from now on, to start; under the lock.

        Counted before it starts, so that close and the exit hook wait for it;
        if it cannot start, ``_unreserve`` counts it out again.
        """
        if worker:
            name = f"{self.prefix}-worker-{self.workers}"
            loop = self._work_loop
            self.workers += 1
            self.workers_alive += 1
        else:
            name = f"{self.prefix}-dispatcher"
            loop = self._dispatch_loop
        self.alive += 1
        # Daemon threads: the exit hook joins them, whatever the interpreter does.
        thread = threading.Thread(target=self._run_thread, args=(loop,), name=name, daemon=True)
        self.threads.append(thread)
        return thread

    def _unreserve(self, thread: threading.Thread, worker: bool) -> None:
        """A reserved thread that did not start: as if it had exited at once; under the lock."""
        self.threads.remove(thread)
        if worker:
            self.workers -= 1
        self._thread_exit(worker)

    def start_first(self) -> None:
        """Start the first worker and the dispatcher, before the first work is added.

        A no-op once they started, or when the pool no longer takes work. If
        the worker cannot start, RuntimeError, and the pool is as it was (open,
        with no thread); if the worker starts but the dispatcher cannot, the
        pool closes, its worker exits, then RuntimeError.
        """
        with self.lock:
            if self.workers or self.book.state is not OPEN:
                return
            worker = self._reserve(worker=True)
            try:
                worker.start()
            except Exception as exc:  # RuntimeError: the system gives no more threads
                self._unreserve(worker, worker=True)
                raise RuntimeError(f"cannot start the scheduler's first worker thread: {exc}"
                                   ) from exc
            dispatcher = self._reserve(worker=False)
            try:
                dispatcher.start()
            except Exception as exc:  # noqa: BLE001 - raised below, once the pool closed
                self._unreserve(dispatcher, worker=False)
                failure = exc
            else:
                # Until its first wait: a dispatcher that first looks once work is due
                # would claim it for an idle worker while another worker times it.
                while not self.dispatcher_settled:
                    self.closed_cv.wait()
                return
        self.close(cancel_running=False)
        self.wait_closed(None)
        raise RuntimeError(f"cannot start the scheduler's dispatcher thread: {failure}; the"
                           " scheduler is closed") from failure

    def _spare_worker(self) -> threading.Thread | None:
        """A worker to start if the pool has fewer than the work needs; under the lock.

        Keeps ``workers >= min(worker_limit, claimed + pending)``: each pending
        version has a worker that is not running another, as ThreadPoolExecutor
        starts a thread for each submit no idle thread takes. Only an add can
        break that: a claim, a finish, a series' next wake-up or a cancel never
        raises the sum.
        """
        workers = self.workers
        if workers >= self.worker_limit or workers >= self.book.claimed + len(self.book.core):
            return None
        return self._reserve(worker=True)

    def _start_spare(self, thread: threading.Thread) -> None:
        """Start a worker ``_spare_worker`` reserved; outside the lock.

        One that cannot start is logged, and the pool goes on with the workers
        it has: it tries no more.
        """
        try:
            thread.start()
        except Exception as exc:  # RuntimeError: the system gives no more threads
            with self.lock:
                self._unreserve(thread, worker=True)
                self.worker_limit = workers = self.workers
            LOGGER.warning("pysched: cannot start another worker thread (%s); the pool runs on"
                           " with the %d it has", exc, workers)

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
            if not self.alive:  # no thread ever started, or every one was counted out
                self._all_exited()
                return
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
        if not self.workers:  # read unlocked: start_first looks again under the lock
            self.start_first()
        ended: list[PoolVersion] = []
        # Falsy when nobody wants it: with no listener, the one test this call pays
        name = _SCHEDULED in self.events.wanted and name_of(run, task_id)
        with self.lock:
            self.book.add(task_id, run_at, priority, run, now, ended)
            if name:
                post_scheduled(self.events, run, name)
            spare = self._spare_worker()
        if spare is not None:
            self._start_spare(spare)
        if ended:
            self.end(ended)
        if name:
            self.events.deliver()
        return run.future  # type: ignore[return-value]  # made by add()

    def submit(self, fut: TaskFuture, run: PoolVersion, now: float) -> None:
        """Add a submitted Future and its version, due now (see PoolBook.submit)."""
        if not self.workers:  # read unlocked: start_first looks again under the lock
            self.start_first()
        name = _SCHEDULED in self.events.wanted and name_of(run, fut)  # as in add()
        if not self.try_lock(False):
            self.wait_lock()
        try:
            self.book.submit(fut, run, now)
            if name:
                post_scheduled(self.events, run, name)
            spare = self._spare_worker()
        finally:
            self.unlock()
        if spare is not None:
            self._start_spare(spare)
        if name:
            self.events.deliver()

    def end(self, ended: list[PoolVersion]) -> None:
        """Cancel the Futures of versions ended unstarted, each with its event; outside
        the lock."""
        emit = None if self.events.wanted.isdisjoint(ev.ENDED_KINDS) else self._emit_ended
        end_futures(ended, emit)

    def _emit_ended(self, run: PoolVersion) -> None:
        emit_ended(self.events, run)

    def cancel(self, task_id: Any) -> bool:
        ended: list[PoolVersion] = []
        callbacks = None
        with self.lock:
            found, started = self.book.cancel(task_id, CANCELLED, ended)
            if started is not None:
                callbacks = self.book.request_stop(started, CANCELLED)
        try:
            self.end(ended)
        finally:  # the token no longer holds them: they run now or never
            if callbacks:
                run_callbacks(callbacks)
        return found

    def cancel_future(self, fut: TaskFuture) -> bool | None:
        """FutureOwner: Future.cancel() of one of this pool's Futures (see TaskFuture.cancel)."""
        ended: list[PoolVersion] = []
        with self.lock:
            outcome = self.book.cancel_future(fut, ended)
        self.end(ended)
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
            self.end(ended)
        finally:  # the tokens no longer hold them: they run now or never
            run_callbacks(callbacks)

    def drain(self, due_by: float | None = None) -> None:
        """open -> draining (see Book.drain)."""
        ended: list[PoolVersion] = []
        with self.lock:
            self.book.drain(ended, due_by)
        self.end(ended)

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
        events = self.events
        worker = threading.current_thread().name  # for its events
        set_current = current_run.set
        reset_current = current_run.reset
        run: PoolVersion | None = None  # the version this worker ran last
        work: Any = None  # a started version not run yet, or the core's hint: float or None
        result: Any = None
        failure: BaseException | None = None
        told: Finish | None = None  # what to tell and log of the run that just ended
        resolves = False
        start = now = book.epoch
        ended: list[PoolVersion] = []
        try:
            while True:
                now = read_clock(True)
                # All a run that returned pays here when nobody listens: three tests.
                if run is not None and (failure is not None or events.wanted):
                    told = finish_of(events, run, failure, start, now, worker)
                # Finish the previous version and start the next in one critical section.
                if not try_lock(False):
                    wait_lock()
                broken = None
                try:
                    if run is not None:
                        failure, resolves = book.finish(run, True, start, now, failure, ended)
                        if told is not None:
                            post_finished(events, told, run, failure, start, now, worker)
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
                    if told is not None:
                        self._told(run, told, failure)
                        told = None
                    elif failure is not None:  # the book's own (a timeout), told to nobody
                        self._failed(run, run.future.version, failure)  # type: ignore[union-attr]
                    if resolves:
                        run.future.settle(result, failure)  # type: ignore[union-attr]
                    run = result = failure = None
                if ended:
                    self.end(ended)
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
                if events.wanted and _STARTED in events.wanted and run.series is None:
                    emit_started(events, run, run.task, start, worker)
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

    def _told(self, run: PoolVersion, told: Finish, failure: BaseException | None) -> None:
        """After the lock: log ``run``'s failure (the book's ``failure``, else what fn
        raised), then deliver its events."""
        failed = failure or told.ran_failure
        if failed is not None:
            self._failed(run, told.task.version, failed)
        if told.told:
            self.events.deliver()

    def _failed(self, run: PoolVersion, version: int, failure: BaseException) -> None:
        """Log a run that failed, once, with its traceback (a run stopped at its token's
        request is no error, but one past its timeout is); a series' wake-up that fired
        nothing never raises."""
        if isinstance(failure, TaskCancelled) and not isinstance(failure, TaskTimeout):
            return
        TASK_LOG.error("task %r version %r failed", run.future.task_id, version,  # type: ignore[union-attr]
                       exc_info=failure)

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
            self.end(ended)

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
                    self.end(ended)
                    ended.clear()
                now = self.clocks.now(fallback=True)  # notified without a task: look again
        finally:
            if ended:
                self.end(ended)

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
                    if not self.dispatcher_settled:  # start_first waits for this
                        self.dispatcher_settled = True
                        self.closed_cv.notify_all()
                    self.wait(self.dispatch_cv, None if deadline == _INF else deadline, now)
                    self.dispatch_at = -_INF
            if fired:  # user code: never on this thread, unless no thread can start
                _start_timeout_callbacks(fired, f"{self.prefix}-timeout-callbacks")

    # -- exits -------------------------------------------------------------------

    def _run_thread(self, loop: Callable[[], None]) -> None:
        try:
            with self.lock:  # before any work: a task on it may ask is_pool_thread()
                self.thread_ids.add(threading.get_ident())
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
        else:
            self.dispatcher_settled = True  # gone: start_first waits no more
        self.alive -= 1
        if not self.alive and self.workers:  # the last thread of a pool that had workers
            self._all_exited()
        self.closed_cv.notify_all()

    def _all_exited(self) -> None:
        """No thread of the pool is left: it is closed; under the lock."""
        if self.book.state is not CLOSING:  # a thread died early: still end closed
            self.book.state = CLOSING
        self.book.set_state(STATE_CLOSED)
        self.book.wakeups = NoWakeups()  # no cycle between the book and this object
        _live.discard(self)

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


def _start_timeout_callbacks(callbacks: list[Callable[[], Any]], name: str) -> None:
    """Run timeout callbacks on a thread of their own, or here if the system gives none."""
    thread = threading.Thread(target=_run_timeout_callbacks, args=(callbacks,), name=name,
                              daemon=True)
    try:
        thread.start()
    except Exception as exc:  # RuntimeError: run them late rather than lose them
        LOGGER.warning("pysched: cannot start a thread for timeout callbacks (%s); running"
                       " them on the dispatcher", exc)
        _run_timeout_callbacks(callbacks)


def _run_timeout_callbacks(callbacks: list[Callable[[], Any]]) -> None:
    for fn in callbacks:
        try:
            fn()
        except BaseException:  # noqa: BLE001 - a callback must not stop the others
            LOGGER.exception("pysched: exception in timeout callback %r", fn)
