"""The thread pool's book: its record of a version, and what only the pool's book does.

``PoolVersion`` is the record of one version: what the pool needs to run it
(fn and its arguments, its timeout, its series) and what the book knows of
it (its key, due time, core Task while claimed, why it was ended, the state
of its current run). Its ``future`` is what the caller holds. The record
points at the Future, never the other way: a Future kept after its version
ended holds neither fn nor its arguments, and no cycle runs through them.
A recurring series keeps one record for all its runs: each run is a fresh
version of it in the core, ``run_no`` tells them apart, and its Future is
the series'.

Who writes a record: the scheduler gives fn and its arguments, timeout and
series when it makes one; after that only this book, under the pool's lock.

``PoolBook`` is ``pysched.pool.book.Book`` over these records, plus what
only the pool does: submit and add with aging and a bound, start, timeouts
(``pysched.pool.deadlines``), series runs, lateness, cancel tokens. Every
method runs under the pool's lock (``pysched.pool.threads``) and never calls
user code, so a TaskFuture is made here but resolved by the caller, outside
the lock: the worker that started its version, or whoever ended it
(``end_futures``).

Invariants, besides the book's:

- A record's Future leaves PENDING only by a decision made here: ``start()``
  makes it RUNNING; ``finish()`` of the run that ends a series with its
  failure makes it RUNNING for the worker to fail; every other end goes
  through ``ended`` and ``end_futures``.
- A series' Future is cancelled by whoever stops the series (also during a
  run, which goes on to its end); the worker fails it only when its own run
  stopped the series.
"""

from __future__ import annotations

import math
import types
import weakref
from collections.abc import Callable, Hashable, Mapping
from functools import partial
from typing import Any, Protocol

from .._close_state import DRAINING, OPEN
from .._validate import check_callable, check_hashable, check_priority, check_time
from .aging import aged_key
from .backpressure import PendingBound, SchedulerFull
from .book import EVICTED, Book, Wakeups
from .deadlines import Deadlines
from .future import FutureOwner, TaskFuture
from .recurring import STOP, Recurrence
from .stats import LatenessReservoir
from .token import CancelToken, TaskTimeout, call_each, set_under_lock

LATE_BATCH = 256  # lateness samples buffered before they are fed to the reservoir

NO_KWARGS: Mapping[str, Any] = types.MappingProxyType({})

__all__ = ["NO_KWARGS", "PoolBook", "PoolOwner", "PoolVersion", "end_futures"]


class PoolOwner(FutureOwner, Protocol):
    """The pool a version belongs to: it cancels its Futures and makes its runs' tokens."""

    def token_for(self, run: PoolVersion) -> CancelToken:
        """The cancel token of ``run``'s current run, made on first use."""


class PoolVersion:
    """One version of a pool's task, or every run of one series (see the module docstring).

    Fields most versions leave at their default are class attributes, set on
    the instance (in its ``__dict__``, made on first use) only when they
    differ: ``submit()`` and ``schedule()`` make one per call.
    """

    __slots__ = ("pool", "fn", "args", "task_id", "future", "run_at", "priority", "task",
                 "__dict__", "__weakref__")

    # Given when it is made, if not the default:
    kwargs: Mapping[str, Any] = NO_KWARGS
    timeout: float | None = None
    series: Recurrence | None = None
    # The book's:
    cancel_reason: str | None = None  # set once, by whoever ends the version unstarted
    in_run = False  # a series: a run is claimed or running
    run_no = 0  # counts the runs of a series, so a stale timeout entry is recognised
    stop_reason: str | None = None  # why the running run's token is (to be) set
    token: CancelToken | None = None  # made on the first current_token() of a run
    deadline: float | None = None  # of the running run, while the book times it
    timed_out = False  # the running run passed its deadline
    # Its task events' (pysched.pool.pool_events), set only while a listener is there:
    event_name: str | None = None  # found on its first event, kept for the others

    def __init__(self, pool: PoolOwner, fn: Callable[..., Any], args: tuple[Any, ...] = (),
                 kwargs: Mapping[str, Any] | None = None, timeout: float | None = None,
                 series: Recurrence | None = None) -> None:
        self.pool = pool
        self.fn = fn
        self.args = args
        if kwargs:
            self.kwargs = kwargs
        if timeout is not None:
            self.timeout = timeout
        if series is not None:
            self.series = series
        self.task_id: Hashable = None  # the book's key, once added
        self.future: TaskFuture | None = None  # made when the core first accepts it
        self.run_at = -math.inf  # of the pending version
        self.priority = 0  # as given (the core's key differs under aging)
        self.task: Any = None  # the core's Task while claimed

    def new_future(self, task_id: Hashable, version: int) -> TaskFuture:
        """The Future of this version, made once the core accepted it as ``version``."""
        return TaskFuture(self.pool, task_id, version)

    def has_started(self) -> bool:
        """Whether the claimed version started: its Future is running."""
        return self.future is not None and self.future.running()

    def current_token(self) -> CancelToken:
        """The cancel token of this version's running run (``pysched.current_token()``)."""
        return self.pool.token_for(self)

    def __repr__(self) -> str:
        return f"<PoolVersion of {self.task_id!r} due at {self.run_at!r}>"


class PoolBook(Book[PoolVersion]):
    """The book of a ThreadPoolScheduler (see the module docstring)."""

    def __init__(self, core: Any, max_running: int, epoch: float, bound: PendingBound | None,
                 aging: float | None, lateness_samples: int, wakeups: Wakeups) -> None:
        super().__init__(core, max_running, bound, wakeups)
        self.epoch = epoch
        self.aging = aging
        self.lateness = LatenessReservoir(lateness_samples)
        # Not a bound method of the book: the book and its parts make no reference
        # cycle, so a closed pool is freed as soon as nobody holds it. Its entries
        # hold their records weakly: a stale entry dropped under the lock frees
        # nothing of the user's (fn, its arguments, a task id) there.
        self.deadlines = Deadlines(partial(_is_running, self.running))

    # -- adding work ----------------------------------------------------------

    def submit(self, fut: TaskFuture, run: PoolVersion, now: float) -> None:
        """Add a submitted version (its Future is its id, due now); fast: it replaces nothing."""
        run.future = fut
        if self.aging is not None or self.bound is not None:
            self.add(fut, now, 0, run, now, [])  # a fresh id ends nothing
            return
        if self.state is not OPEN:
            self.check_open("submit")
        self.core.schedule(fut, now, 0, run.fn)  # version 1: a fresh id's first
        run.task_id = fut
        run.run_at = now
        self.pending[fut] = run
        self.counts.scheduled += 1
        self.wakeups.pending_added(now, now)

    def add(self, task_id: Hashable, run_at: float, priority: int, run: PoolVersion,
            now: float, ended: list[PoolVersion]) -> None:
        """Make ``run`` the pending version of ``task_id``; a refused call changes nothing.

        Its Future is made here, once the core accepted it (``run.future``).
        """
        if self.state is not OPEN:  # else no message to make
            self.check_open(f"schedule {task_id!r}")
        self._add(task_id, run_at, priority, run, now, ended)

    def _add(self, task_id: Hashable, run_at: float, priority: int, run: PoolVersion,
             now: float, ended: list[PoolVersion]) -> None:
        if self.aging is not None or self.bound is not None:
            self._add_checked(task_id, run_at, priority, run, now, ended)
            return
        # The core checks every argument before it changes anything, and once it
        # accepted task_id the dicts can hash it.
        version = self.core.schedule(task_id, run_at, priority, run.fn)
        if run_at.__class__ is not float:
            run_at = float(run_at)  # the core accepted it: a finite real
        run.priority = priority
        self._adopt(task_id, run_at, run, version, now, ended)

    def _add_checked(self, task_id: Hashable, run_at: float, priority: int,
                     run: PoolVersion, now: float, ended: list[PoolVersion]) -> None:
        """_add() with aging or a bound: both need checked values before the core."""
        check_hashable(task_id, "task_id")
        run_at = check_time(run_at, "run_at")
        priority = check_priority(priority, "priority")
        check_callable(run.fn, "fn")
        key = priority
        if self.aging is not None:
            key = aged_key(priority, max(now, run_at), self.epoch, self.aging)
        victim = None
        bound = self.bound
        if bound is not None:
            if task_id not in self.pending:
                try:
                    victim = bound.admit(task_id, priority, len(self.core))
                except SchedulerFull:
                    self.counts.rejected += 1
                    raise
            else:
                bound.replace(task_id, priority)
        version = self.core.schedule(task_id, run_at, key, run.fn)
        run.priority = priority
        self._adopt(task_id, run_at, run, version, now, ended)
        if victim is not None:
            self.drop_pending(victim, self.pending[victim], EVICTED, ended, bound_knows=False)

    def _adopt(self, task_id: Hashable, run_at: float, run: PoolVersion, version: int,
               now: float, ended: list[PoolVersion]) -> None:
        """The core took ``run`` as ``version`` of ``task_id``: book it (see Book.adopt)."""
        if run.future is None:  # its first version (a series keeps its first Future)
            # A plain version's Future made here: a call fewer per schedule()
            run.future = (TaskFuture(run.pool, task_id, version) if run.__class__ is PoolVersion
                          else run.new_future(task_id, version))
        run.run_at = run_at
        self.counts.scheduled += 1
        ended_now = self.adopt(task_id, run)
        if ended_now:
            ended += ended_now
        self.wakeups.pending_added(run_at, now)

    # -- starting, timing, finishing ---------------------------------------------------

    def start(self, run: PoolVersion) -> bool:
        """Start a claimed version: False if it was ended before (then finish it unrun).

        A version with a timeout is timed from ``track_timeout()``, which the
        worker calls with the clock read after this: never from an earlier reading.
        """
        series = run.series
        if series is None:
            # Only this book moves a pool's Future out of PENDING (see the module docstring).
            return run.cancel_reason is None and run.future.set_running_or_notify_cancel()  # type: ignore[union-attr]
        if series.stopped:
            return False
        run.in_run = True  # a fresh run: fresh token state
        run.run_no += 1
        if run.token is not None or run.stop_reason is not None or run.timed_out:
            run.stop_reason = run.token = None
            run.timed_out = False
        return True

    def track_timeout(self, run: PoolVersion, start: float) -> None:
        """A started version with a timeout began running at ``start``: time it from there."""
        deadline = start + run.timeout  # type: ignore[operator]
        run.deadline = deadline
        if self.deadlines.add(deadline, weakref.ref(run), run.run_no):
            self.wakeups.deadline_added(deadline)

    def expired(self, now: float) -> list[PoolVersion]:
        """Mark the running versions whose deadline passed at ``now``, and return them."""
        runs: list[PoolVersion] = [ref() for ref in self.deadlines.pop_expired(now)]
        for run in runs:  # each one live: held by ``running``
            run.timed_out = True
        return runs

    def finish(self, run: PoolVersion, started: bool, start: float, end: float,
               failure: BaseException | None,
               ended: list[PoolVersion]) -> tuple[BaseException | None, bool]:
        """Report a claimed version's end to the core.

        Returns the exception its Future gets and whether the caller resolves
        the Future (False: it was not started, or it is a series that goes on
        or was cancelled by whoever stopped it).
        """
        task = run.task
        if not started:
            self.release(run)
            resolves = False
        else:
            del self.running[task.task_id]
            counts = self.counts
            late = self.lateness.pending
            late.append(start - task.run_at)
            if len(late) > LATE_BATCH:
                self.lateness.absorb()
            if run.timed_out:
                timed_out = TaskTimeout(f"task {task.task_id!r} version {task.version} ran past"
                                        f" its timeout of {run.timeout!r}s")
                timed_out.__cause__ = failure
                failure = timed_out
                self.core.fail(task, failure)
                counts.timed_out += 1
            else:
                if run.deadline is not None:
                    self.deadlines.finished()
                if failure is None:
                    self.core.complete(task)
                    if run.series is not None and not run.series.fired:
                        counts.idle_wakeups += 1  # woke its series, ran no function
                    else:
                        counts.completed += 1
                else:
                    self.core.fail(task, failure)
                    counts.failed += 1
            if run.deadline is not None:
                run.deadline = None
            resolves = True
        series = run.series
        if series is not None:
            # The record outlives the run: it keeps no core Task, one more object per
            # series for the collector to track.
            run.task = None
            in_run = run.in_run
            run.in_run = False
            failure = self._next_run(task.task_id, run, series, failure, end, ended)
            # Only a run that stopped its series with its failure fails the series' Future.
            # Until the worker does, outside the lock, a Future.cancel() must see it
            # settled: RUNNING, not PENDING.
            resolves = (in_run and failure is not None
                        and run.future.set_running_or_notify_cancel())  # type: ignore[union-attr]
        if self.state is DRAINING:
            self.maybe_drained()
        return failure, resolves

    def _next_run(self, task_id: Hashable, run: PoolVersion, series: Recurrence,
                  failure: BaseException | None, end: float,
                  ended: list[PoolVersion]) -> BaseException | None:
        """After a run of a series: schedule the next, or end it; its exception if it ended."""
        if series.stopped:
            return None
        if failure is not None and series.on_error == STOP:
            series.stopped = True
            return failure
        run_at, skipped, coalesced = series.next_run(end)
        self.counts.skipped += skipped
        self.counts.coalesced += coalesced
        if not math.isfinite(run_at):
            series.stopped = True
            return OverflowError(f"the next run of {task_id!r} is due at {run_at!r}")
        try:
            self._add(task_id, run_at, series.priority, run, end, ended)
        except (SchedulerFull, OverflowError) as exc:  # nothing was added
            series.stopped = True
            return exc
        return None

    # -- tokens ------------------------------------------------------------------------

    def token_for(self, run: PoolVersion,
                  make: Callable[[str | None], CancelToken]) -> CancelToken:
        """The token of ``run``'s current run; ``make(stop_reason)`` makes it on first use."""
        token = run.token
        if token is None:
            token = run.token = make(run.stop_reason)
        return token

    def request_stop(self, run: PoolVersion, reason: str) -> list[Callable[[], Any]] | None:
        """Set a started version's token (made later, if not yet); the callbacks to run
        once the lock is released, if it was set now."""
        if run.stop_reason is None:
            run.stop_reason = reason
        token = run.token
        return None if token is None else set_under_lock(token, run.stop_reason)


def _is_running(running: dict[Hashable, Any], ref: weakref.ref[PoolVersion],
                run_no: int) -> bool:
    run = ref()
    if run is None:
        return False
    return run.run_no == run_no and running.get(run.task_id) is run


def end_futures(ended: list[PoolVersion],
                on_ended: Callable[[PoolVersion], object] | None = None) -> None:
    """Cancel the Futures of versions (or series) that will never run; outside the lock.

    These Futures are out of the book and nobody else will resolve them, so a
    done callback raising a BaseException stops none of the others.
    """
    call_each([partial(_end, run, on_ended) for run in ended])


def _end(run: PoolVersion, on_ended: Callable[[PoolVersion], object] | None) -> None:
    """Cancel ``run``'s Future; ``on_ended(run)`` if this call cancelled it (a version the
    worker released unrun is also in its ``ended``: the first call tells of it)."""
    told = run.future.notify_cancelled(run.cancel_reason or "cancelled")  # type: ignore[union-attr]
    if told and on_ended is not None:
        on_ended(run)
