"""The book of a scheduler: its versions, their Futures, its state and its counters.

``Book`` mirrors the core: ``pending[tid]`` is the Future of the core's
pending version of ``tid`` and ``running[tid]`` that of its claimed one; both
change only together with the core. It claims, starts, finishes, drops
pending versions, closes and counts, and knows nothing of threads or event
loops: its owner calls every method under the owner's lock
(pysched.pool.threads for ThreadPoolScheduler; AsyncScheduler needs none, on
its loop's thread) and is told what to wake through the ``Wakeups`` it passes
in. It never resolves a Future itself: methods collect the Futures of
versions they ended in an ``ended`` list, which the caller resolves once it
has released its lock (``end_futures()`` for a pool's).

Both schedulers keep one book. The pool uses all of it, with TaskFutures
(``PoolBook``); AsyncScheduler (``pysched.aio``) uses what works on any
``BookFuture``: cancelling, replacing a claimed version, closing, releasing
what never started, the state and the counters. Its own hot paths
(schedule, claim and finish of a plain callable) change ``pending``,
``running`` and the counters inline, as ``add()``, ``claim()`` and
``finish()`` would; tests/aio/test_aio_book.py pins the two.

Invariants (under the owner's lock):

- ``claimed == len(running) <= max_running``: every claim checks it first.
- A claimed version has started once its Future's ``_has_started()`` says so
  (a TaskFuture: ``start()`` made it RUNNING; an AsyncTaskFuture: its fn was
  called or its coroutine took a step); until then it can still be ended.
- A claimed version starts (``start()``: its Future turns RUNNING, or its
  series run is marked in progress) or is released unrun (``finish()`` with
  ``started=False``), and the decision is made here, under the lock: a cancel,
  replacement or close that marks a claimed version before ``start()`` wins,
  so it never starts. Once started, a version only gets its token set.
- A TaskFuture leaves PENDING only by a decision made here (``start()``,
  ``finish()`` of the run that ends a series with its failure, or a
  ``cancel_reason`` set by the one party that ends the version), and is
  resolved exactly once, outside the lock, by that party: the worker that
  started it, or the caller that ended it.
- A series' Future is released (its fn dropped) by whoever stops the series
  while no run of it is in progress, else by the worker that finishes the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from concurrent.futures._base import RUNNING
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

from .._close_state import CLOSING, DRAINING, OPEN, check_transition
from .._errors import SchedulerClosed
from .._future_fields import CANCELLED, CLOSED, EVICTED, REPLACED, TIMEOUT
from .._validate import check_callable, check_hashable, check_priority, check_time
from .aging import aged_key
from .backpressure import EVICT_LOWEST, PendingBound, SchedulerFull
from .deadlines import Deadlines
from .future import TaskFuture
from .recurring import STOP, Recurrence
from .stats import Counters, LatenessReservoir
from .token import TaskTimeout, call_each

LATE_BATCH = 256  # lateness samples buffered before they are fed to the reservoir

__all__ = ["CANCELLED", "CLOSED", "EVICTED", "REPLACED", "TIMEOUT", "Book", "BookFuture",
           "NoWakeups", "PoolBook", "Wakeups", "end_futures"]


class BookFuture(Protocol):
    """What the book's shared methods read and write on a version's Future."""

    _run_at: float  # of the pending version
    _series: Recurrence | None
    _in_run: bool  # a series: a run is claimed or running
    _cancel_reason: str | None  # set once, by whoever ends the version

    @property
    def task_id(self) -> Hashable: ...

    def _has_started(self) -> bool:
        """Whether the claimed version has started: then it is no longer cancelled unrun."""


F = TypeVar("F", bound=BookFuture)


class Wakeups(Protocol):
    """What the owner of a book wakes when the book changes (all called under its lock)."""

    def pending_added(self, run_at: float, now: float) -> None:
        """A version due at ``run_at`` became pending."""

    def pending_removed(self, run_at: float) -> None:
        """The pending version due at ``run_at`` left the core unrun."""

    def deadline_added(self, deadline: float) -> None:
        """A running version must have its token set at ``deadline``."""

    def state_changed(self, state: str) -> None:
        """The book moved to ``state``."""


class Book(Generic[F]):
    """Versions, Futures, state and counters of one scheduler (see the module docstring)."""

    def __init__(self, core: Any, max_running: int, epoch: float, bound: PendingBound | None,
                 aging: float | None, lateness_samples: int, wakeups: Wakeups) -> None:
        self.core = core
        self.max_running = max_running
        self.epoch = epoch
        self.bound = bound
        self.tracked = bound is not None and bound.policy == EVICT_LOWEST
        self.aging = aging
        self.wakeups = wakeups
        self.state = OPEN
        self.pending: dict[Hashable, F] = {}
        self.running: dict[Hashable, F] = {}
        self.peak = 0
        self.counts = Counters()
        self.lateness = LatenessReservoir(lateness_samples)
        # Not a bound method of the book: the book and its parts make no reference
        # cycle, so a closed pool is freed as soon as nobody holds it.
        self.deadlines = Deadlines(partial(_is_running, self.running))
        self.refusal: Callable[[str], BaseException] = SchedulerClosed

    @property
    def claimed(self) -> int:
        """How many versions are claimed (running or about to start)."""
        return len(self.running)

    # -- adding work ----------------------------------------------------------

    def check_open(self, what: str) -> None:
        if self.state is not OPEN:
            raise self.refusal(f"cannot {what}: the scheduler is {self.state}")

    def submit(self: Book[TaskFuture], fut: TaskFuture, now: float) -> None:
        """Add a submitted Future (its own id, due now); fast: it replaces nothing."""
        if self.aging is not None or self.bound is not None:
            self.add(fut, now, 0, fut, now, [])  # a fresh id ends nothing
            return
        self.check_open("submit")
        fut._version = self.core.schedule(fut, now, 0, fut._fn)
        self.pending[fut] = fut
        self.counts.scheduled += 1
        self.wakeups.pending_added(now, now)

    def add(self: Book[TaskFuture], task_id: Hashable, run_at: float, priority: int,
            fut: TaskFuture, now: float, ended: list[TaskFuture]) -> None:
        """Make ``fut`` the pending version of ``task_id``; a refused call changes nothing."""
        self.check_open(f"schedule {task_id!r}")
        self._add(task_id, run_at, priority, fut, now, ended)

    def _add(self: Book[TaskFuture], task_id: Hashable, run_at: float, priority: int,
             fut: TaskFuture, now: float, ended: list[TaskFuture]) -> None:
        if self.aging is not None or self.bound is not None:
            self._add_checked(task_id, run_at, priority, fut, now, ended)
            return
        # The core checks every argument before it changes anything, and once it
        # accepted task_id the dicts can hash it.
        fut._version = self.core.schedule(task_id, run_at, priority, fut._fn)
        if run_at.__class__ is not float:
            run_at = float(run_at)  # the core accepted it: a finite real
        self._adopt(task_id, run_at, fut, self.pending.get(task_id), now, ended)

    def _add_checked(self: Book[TaskFuture], task_id: Hashable, run_at: float,
                     priority: int, fut: TaskFuture, now: float,
                     ended: list[TaskFuture]) -> None:
        """_add() with aging or a bound: both need checked values before the core."""
        check_hashable(task_id, "task_id")
        run_at = check_time(run_at, "run_at")
        priority = check_priority(priority, "priority")
        check_callable(fut._fn, "fn")
        key = priority
        if self.aging is not None:
            key = aged_key(priority, max(now, run_at), self.epoch, self.aging)
        old = self.pending.get(task_id)
        victim = None
        bound = self.bound
        if bound is not None:
            if old is None:
                try:
                    victim = bound.admit(task_id, priority, len(self.core))
                except SchedulerFull:
                    self.counts.rejected += 1
                    raise
            else:
                bound.replace(task_id, priority)
        fut._version = self.core.schedule(task_id, run_at, key, fut._fn)
        self._adopt(task_id, run_at, fut, old, now, ended)
        if victim is not None:
            self.drop_pending(victim, self.pending[victim], EVICTED, ended, bound_knows=False)

    def _adopt(self: Book[TaskFuture], task_id: Hashable, run_at: float, fut: TaskFuture,
               old: TaskFuture | None, now: float, ended: list[TaskFuture]) -> None:
        """The core took ``fut``'s version: book it, and end the version it replaced."""
        fut._run_at = run_at
        self.counts.scheduled += 1
        if old is not None:  # the core replaced it
            # The core and the book keep the id object of the id's first version as
            # their key: the newest Future holds it, so that it is never dropped
            # under the lock (its finaliser may call back in).
            fut._task_id = old.task_id
            self.replaced(old, ended)
        elif self.running:
            run = self.running.get(task_id)
            if run is not None:  # a claimed version of the id: end it unless it started
                fut._task_id = run.task_id
                self.end_claimed(run, REPLACED, ended)
        self.pending[task_id] = fut
        self.wakeups.pending_added(run_at, now)

    # -- claiming, starting, finishing -----------------------------------------------

    def claim(self, now: float) -> tuple[Any, F] | float | None:
        """Claim the core's next due version, or return its hint (float or None)."""
        state = self.state
        running = self.running
        if (state is not OPEN and state is not DRAINING) or len(running) >= self.max_running:
            return None
        task = self.core.next(now)
        if task is None or task.__class__ is float:
            return task
        task_id = task.task_id
        fut = self.pending.pop(task_id)
        running[task_id] = fut
        if len(running) > self.peak:
            self.peak = len(running)
        if self.tracked:
            self.bound.discard(task_id)  # type: ignore[union-attr]
        return task, fut

    def start(self: Book[TaskFuture], fut: TaskFuture) -> bool:
        """Start a claimed version: False if it was ended before (then finish it unrun).

        A version with a timeout is timed from ``track_timeout()``, which the
        worker calls with the clock read after this: never from an earlier reading.
        """
        series = fut._series
        if series is None:
            if fut._cancel_reason is not None:
                return False
            fut._state = RUNNING  # only this book moves it out of PENDING; see the docstring
        else:
            if series.stopped:
                return False
            fut._in_run = True  # a fresh run: fresh token state
            fut._run_no += 1
            fut._stop_reason = fut._token = None
            fut._timed_out = False
        return True

    def track_timeout(self: Book[TaskFuture], fut: TaskFuture, start: float) -> None:
        """A started version with a timeout began running at ``start``: time it from there."""
        deadline = start + fut._timeout  # type: ignore[operator]
        if self.deadlines.add(deadline, fut, fut._run_no):
            self.wakeups.deadline_added(deadline)

    def finish(self: Book[TaskFuture], task: Any, fut: TaskFuture, started: bool,
               start: float, end: float, failure: BaseException | None,
               ended: list[TaskFuture]) -> tuple[BaseException | None, bool]:
        """Report a claimed version's end to the core.

        Returns the exception its Future gets and whether the caller resolves
        and releases the Future (False: it was not started, or it is a series
        that goes on, and someone else owns it).
        """
        if not started:
            self.release(task, fut)
            owns = False
        else:
            del self.running[task.task_id]
            counts = self.counts
            late = self.lateness.pending
            late.append(start - task.run_at)
            if len(late) > LATE_BATCH:
                self.lateness.absorb()
            if fut._timed_out:
                timed_out = TaskTimeout(f"task {task.task_id!r} version {task.version} ran past"
                                        f" its timeout of {fut._timeout!r}s")
                timed_out.__cause__ = failure
                failure = timed_out
                self.core.fail(task, failure)
                counts.timed_out += 1
            else:
                if fut._timeout is not None:
                    self.deadlines.finished()
                if failure is None:
                    self.core.complete(task)
                    if fut._series is not None and not fut._series.fired:
                        counts.idle_wakeups += 1  # woke its series, ran no function
                    else:
                        counts.completed += 1
                else:
                    self.core.fail(task, failure)
                    counts.failed += 1
            owns = True
        series = fut._series
        if series is not None:
            in_run = fut._in_run
            fut._in_run = False
            failure = self._next_run(task.task_id, fut, series, failure, end, ended)
            # A run in progress when the series stopped: this worker releases it.
            owns = in_run and series.stopped
            if owns and failure is not None:
                # This worker fails the series' Future once it releases the lock:
                # until then a Future.cancel() must see it settled, not PENDING.
                fut._state = RUNNING
        if self.state is DRAINING:
            self.maybe_drained()
        return failure, owns

    def release(self, task: Any, fut: F) -> None:
        """A claimed version ended before it started: the core finishes it as cancelled."""
        del self.running[task.task_id]
        self.core.release(task)  # it never ran
        if fut._cancel_reason == REPLACED:
            self.counts.replaced += 1
        else:
            self.counts.cancelled += 1

    def _next_run(self: Book[TaskFuture], task_id: Hashable, fut: TaskFuture,
                  series: Recurrence,
                  failure: BaseException | None, end: float,
                  ended: list[TaskFuture]) -> BaseException | None:
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
            self._add(task_id, run_at, series.priority, fut, end, ended)
        except (SchedulerFull, OverflowError) as exc:  # nothing was added
            series.stopped = True
            return exc
        return None

    def expired(self: Book[TaskFuture], now: float) -> list[TaskFuture]:
        """Mark the running versions whose timeout passed at ``now``, and return them."""
        runs = self.deadlines.pop_expired(now)
        for run in runs:
            run._timed_out = True
        return runs

    # -- taking work out -----------------------------------------------------------

    def drop_pending(self, task_id: Hashable, fut: F, reason: str, ended: list[F],
                     bound_knows: bool = True) -> None:
        """Cancel the pending version of ``task_id`` (whose Future is ``fut``) in the core."""
        del self.pending[task_id]
        self.core.cancel_pending(task_id)  # a running version of the id runs on untouched
        if self.tracked and bound_knows:
            self.bound.discard(task_id)  # type: ignore[union-attr]
        self.wakeups.pending_removed(fut._run_at)
        if reason == EVICTED:
            self.counts.evicted += 1
        elif reason == REPLACED:  # by a version the core does not know as its replacement
            self.counts.replaced += 1
        else:
            self.counts.cancelled += 1
        self._end_pending(fut, reason, ended)

    def replaced(self, old: F, ended: list[F]) -> None:
        """The core replaced ``old``'s pending version (the caller books the new one)."""
        self.counts.replaced += 1
        self._end_pending(old, REPLACED, ended)

    def _end_pending(self, fut: F, reason: str, ended: list[F]) -> None:
        """``fut``'s version left the core unrun: queue the Future to be cancelled."""
        series = fut._series
        if series is not None:
            if series.stopped:
                return
            series.stopped = True
        fut._cancel_reason = reason
        ended.append(fut)

    def end_claimed(self, run: F, reason: str, ended: list[F]) -> bool:
        """End a claimed version (or its series) unless it started; True if it had not.

        The version leaves ``running`` when its owner releases it (``release()``).
        """
        series = run._series
        if series is not None:
            if series.stopped:
                return not run._in_run
            series.stopped = True
            run._cancel_reason = reason
            if not run._in_run:
                ended.append(run)
                return True
            ended.append(_Resolve(run))  # type: ignore[arg-type]
            return False
        if run._cancel_reason is not None or run._has_started():
            return False
        run._cancel_reason = reason  # start() will refuse it
        ended.append(run)
        return True

    def cancel(self, task_id: Hashable, reason: str, ended: list[F]) -> tuple[bool, F | None]:
        """cancel(task_id): end its pending and its unstarted claimed version.

        Returns whether anything of ``task_id`` was pending or claimed, and the
        started running version whose token the caller must set, if any.
        """
        fut = self.pending.get(task_id)
        if fut is not None:
            self.drop_pending(task_id, fut, reason, ended)
        run = self.running.get(task_id)
        started = None
        if run is not None and not self.end_claimed(run, reason, ended):
            started = run
        self.maybe_drained()
        return fut is not None or run is not None, started

    def cancel_future(self, fut: F, ended: list[F]) -> bool | None:
        """Future.cancel(): end ``fut``'s version unless it started.

        True if it ended now, False if it started; None if the book no longer
        holds it (it ended or was never added: the Future's own state decides).
        """
        task_id = fut.task_id
        if self.pending.get(task_id) is fut:
            self.drop_pending(task_id, fut, CANCELLED, ended)
            done = True
        elif self.running.get(task_id) is fut:
            if fut._series is not None:
                done = not fut._series.stopped
                self.end_claimed(fut, CANCELLED, ended)
            else:
                done = self.end_claimed(fut, CANCELLED, ended)
        else:
            return None
        self.maybe_drained()
        return done

    # -- closing ---------------------------------------------------------------

    def set_state(self, new: str) -> None:
        self.state = check_transition(self.state, new)
        self.wakeups.state_changed(new)

    def maybe_drained(self) -> None:
        """Draining ends when nothing is pending or running."""
        if self.state is DRAINING and not self.running and not len(self.core):
            self.set_state(CLOSING)

    def close(self, ended: list[F]) -> None:
        """open or draining -> closing: end every pending version and every series.

        Claimed versions run, as ThreadPoolExecutor runs what its workers took.
        """
        if self.state is OPEN or self.state is DRAINING:
            self.set_state(CLOSING)
            for task_id, fut in list(self.pending.items()):
                self.drop_pending(task_id, fut, CLOSED, ended)
            for run in self.running.values():
                if run._series is not None:
                    self.end_claimed(run, CLOSED, ended)

    def drain(self, ended: list[F], due_by: float | None = None) -> None:
        """open -> draining: stop the series; with ``due_by``, drop versions due after it."""
        if self.state is OPEN:
            self.set_state(DRAINING)
        if self.state is not DRAINING:
            return
        for task_id, fut in list(self.pending.items()):
            if fut._series is not None or (due_by is not None and fut._run_at > due_by):
                self.drop_pending(task_id, fut, CLOSED, ended)
        for run in self.running.values():
            if run._series is not None:
                self.end_claimed(run, CLOSED, ended)
        self.maybe_drained()


# The book of a ThreadPoolScheduler, whose Futures are TaskFutures.
PoolBook = Book[TaskFuture]


class NoWakeups:
    """The Wakeups of a book whose owner is gone: nothing left to wake."""

    def pending_added(self, run_at: float, now: float) -> None:
        pass

    def pending_removed(self, run_at: float) -> None:
        pass

    def deadline_added(self, deadline: float) -> None:
        pass

    def state_changed(self, state: str) -> None:
        pass


def _is_running(running: dict[Hashable, Any], fut: TaskFuture, run_no: int) -> bool:
    return running.get(fut.task_id) is fut and fut._run_no == run_no


class _Resolve:
    """An ``ended`` entry for a series stopped during a run: cancel it, its worker releases it."""

    __slots__ = ("fut",)

    def __init__(self, fut: Any) -> None:
        self.fut = fut


def end_futures(ended: list[Any]) -> None:
    """Cancel the Futures of versions (or series) that will never run; outside the lock.

    These Futures are out of the book and nobody else will resolve them, so a
    done callback raising a BaseException stops none of the others.
    """
    call_each([partial(_end, fut) for fut in ended])


def _end(fut: Any) -> None:
    if fut.__class__ is _Resolve:
        fut.fut._cancel_unrun()
        return
    try:
        fut._cancel_unrun()
    finally:
        fut._release_call()
