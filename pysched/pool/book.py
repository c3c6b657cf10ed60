"""The book of a scheduler: its versions, its state and its counters, without threads.

``Book`` mirrors the core: ``pending[tid]`` is the record of the core's
pending version of ``tid`` and ``running[tid]`` that of its claimed one;
both change only together with the core. A record (``BookVersion``: the
owner's record class, ``pysched.pool.pool_book.PoolVersion`` for the thread
pool, ``pysched.aio._version.AioVersion`` for asyncio) is what the book
knows of a version, apart from the Future its caller holds. The book adds,
claims, finishes, ends pending and claimed versions, closes and counts, and
knows nothing of threads or event loops: its owner calls every method under
the owner's lock (pysched.pool.threads for ThreadPoolScheduler;
AsyncScheduler needs none, on its loop's thread) and is told what to wake
through the ``Wakeups`` it passes in. It never resolves a Future itself:
methods collect the records of versions they ended in an ``ended`` list,
whose Futures the caller cancels once it has released its lock.

This module holds what both schedulers share; ``pysched.pool.pool_book``
adds what only the thread pool does (timeouts, series, aging, lateness).
AsyncScheduler's hot paths do what ``adopt()``, ``claim()`` and
``complete()`` do inline for the common case (tests/aio/test_aio_book.py
pins the two).

Invariants (under the owner's lock):

- ``claimed == len(running) <= max_running``: every claim checks it first.
- A claimed version has started once its record's ``has_started()`` says
  so (the pool: its Future is running; asyncio: its fn was called or its
  coroutine took a step); until then it can still be ended.
- A claimed version starts or is released unrun (``release()``), and the
  decision is made under the lock: a cancel, replacement or close that
  marks a claimed version (``cancel_reason``) before it starts wins, so it
  never starts. Once started, a version is only asked to stop.
- A version ended unstarted is put in ``ended`` exactly once, by the one
  call that ended it (its ``cancel_reason`` set then); its Future is
  cancelled by that caller.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

from .._close_state import CLOSING, DRAINING, OPEN, check_transition
from .._errors import SchedulerClosed
from .._future_fields import CANCELLED, CLOSED, EVICTED, REPLACED, TIMEOUT
from .backpressure import EVICT_LOWEST, PendingBound
from .recurring import Recurrence
from .stats import Counters

__all__ = ["CANCELLED", "CLOSED", "EVICTED", "REPLACED", "TIMEOUT", "Book", "BookVersion",
           "NoWakeups", "Wakeups"]


class BookVersion(Protocol):
    """What the book reads and writes on the record of a version (its owner's record class).

    The book writes ``task_id``, ``task``, ``in_run`` and ``cancel_reason``;
    ``future`` is the Future the caller holds, whose state only its own
    methods change.
    """

    task_id: Hashable  # the book's key: the id object of the id's first version in the book
    run_at: float  # of the pending version
    task: Any  # the core's Task while claimed
    series: Recurrence | None
    in_run: bool  # a series: a run is claimed or running
    cancel_reason: str | None  # set once, by whoever ends the version unstarted

    @property
    def future(self) -> Any: ...

    def has_started(self) -> bool:
        """Whether the claimed version has started: then it is no longer cancelled unrun."""


V = TypeVar("V", bound=BookVersion)


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


class Book(Generic[V]):
    """Versions, state and counters of one scheduler (see the module docstring)."""

    def __init__(self, core: Any, max_running: int, bound: PendingBound | None,
                 wakeups: Wakeups) -> None:
        self.core = core
        self.max_running = max_running
        self.bound = bound
        self.tracked = bound is not None and bound.policy == EVICT_LOWEST
        self.wakeups = wakeups
        self.state = OPEN
        self.pending: dict[Hashable, V] = {}
        self.running: dict[Hashable, V] = {}
        self.peak = 0
        self.counts = Counters()
        self.refusal: Callable[[str], BaseException] = SchedulerClosed

    @property
    def claimed(self) -> int:
        """How many versions are claimed (running or about to start)."""
        return len(self.running)

    # -- adding work ----------------------------------------------------------

    def check_open(self, what: str) -> None:
        if self.state is not OPEN:
            raise self.refusal(f"cannot {what}: the scheduler is {self.state}")

    def adopt(self, task_id: Hashable, run: V) -> list[V] | None:
        """The core has just made ``run`` the pending version of ``task_id``: book it, and
        end the version the core replaced, or the claimed one unless it started.

        Returns what it ended (for the caller's ``ended``), None when nothing:
        the path of nearly every version, which makes no list.
        """
        pending = self.pending
        old = pending.setdefault(task_id, run)  # one lookup when nothing is replaced
        if old is not run:  # the core replaced it
            pending[task_id] = run
            # The core and the book keep the id object of the id's first version as
            # their key: the newest record holds it, so that it is never dropped
            # under the lock (its finaliser may call back in).
            run.task_id = old.task_id
            ended: list[V] = []
            self.replaced(old, ended)
            return ended
        run.task_id = task_id
        if self.running:
            claimed = self.running.get(task_id)
            if claimed is not None:  # a claimed version of the id: end it unless it started
                run.task_id = claimed.task_id
                ended = []
                self.end_claimed(claimed, REPLACED, ended)
                return ended
        return None

    # -- claiming and finishing --------------------------------------------------------

    def claim(self, now: float) -> V | float | None:
        """Claim the core's next due version (its record, with its ``task``), or return the
        core's hint: seconds until the head is due, or None (nothing pending, or at the cap)."""
        state = self.state
        running = self.running
        if (state is not OPEN and state is not DRAINING) or len(running) >= self.max_running:
            return None
        task = self.core.next(now)
        if task is None or task.__class__ is float:
            return task
        task_id = task.task_id
        run = self.pending.pop(task_id)
        run.task = task
        running[task_id] = run
        if len(running) > self.peak:
            self.peak = len(running)
        if self.tracked:
            self.bound.discard(task_id)  # type: ignore[union-attr]
        return run

    def release(self, run: V) -> None:
        """A claimed version ended before it started: the core finishes it as cancelled."""
        task = run.task
        del self.running[task.task_id]
        self.core.release(task)  # it never ran
        if run.cancel_reason == REPLACED:
            self.counts.replaced += 1
        else:
            self.counts.cancelled += 1

    def complete(self, run: V) -> None:
        """A started version returned: it leaves ``running``, completed in the core."""
        task = run.task
        del self.running[task.task_id]
        self.core.complete(task)

    def fail(self, run: V, failure: BaseException, cancelled: bool = False) -> None:
        """A started version raised ``failure`` (``cancelled``: it was stopped, and counts
        as cancelled): it leaves ``running``, failed in the core."""
        task = run.task
        del self.running[task.task_id]
        self.core.fail(task, failure)
        if cancelled:
            self.counts.cancelled += 1
        else:
            self.counts.failed += 1

    # -- taking work out -----------------------------------------------------------

    def drop_pending(self, task_id: Hashable, run: V, reason: str, ended: list[V],
                     bound_knows: bool = True) -> None:
        """Cancel the pending version of ``task_id`` (whose record is ``run``) in the core."""
        del self.pending[task_id]
        self.core.cancel_pending(task_id)  # a running version of the id runs on untouched
        if self.tracked and bound_knows:
            self.bound.discard(task_id)  # type: ignore[union-attr]
        self.wakeups.pending_removed(run.run_at)
        if reason == EVICTED:
            self.counts.evicted += 1
        elif reason == REPLACED:  # by a version the core does not know as its replacement
            self.counts.replaced += 1
        else:
            self.counts.cancelled += 1
        self._end_pending(run, reason, ended)

    def replaced(self, old: V, ended: list[V]) -> None:
        """The core replaced ``old``'s pending version (the caller books the new one)."""
        self.counts.replaced += 1
        self._end_pending(old, REPLACED, ended)

    def _end_pending(self, run: V, reason: str, ended: list[V]) -> None:
        """``run``'s version left the core unrun: queue its Future to be cancelled."""
        series = run.series
        if series is not None:
            if series.stopped:
                return
            series.stopped = True
        run.cancel_reason = reason
        ended.append(run)

    def end_claimed(self, run: V, reason: str, ended: list[V]) -> bool:
        """End a claimed version (or its series) unless it started; True if it had not.

        The version leaves ``running`` when its owner releases it (``release()``);
        a series stopped during a run has its Future cancelled now, and the
        run goes on to its end.
        """
        series = run.series
        if series is not None:
            if series.stopped:
                return not run.in_run
            series.stopped = True
            run.cancel_reason = reason
            ended.append(run)
            return not run.in_run
        if run.cancel_reason is not None or run.has_started():
            return False
        run.cancel_reason = reason  # it will not start
        ended.append(run)
        return True

    def cancel(self, task_id: Hashable, reason: str, ended: list[V]) -> tuple[bool, V | None]:
        """cancel(task_id): end its pending and its unstarted claimed version.

        Returns whether anything of ``task_id`` was pending or claimed, and the
        started running version whose token the caller must set, if any.
        """
        pending = self.pending.get(task_id)
        if pending is not None:
            self.drop_pending(task_id, pending, reason, ended)
        run = self.running.get(task_id)
        started = None
        if run is not None and not self.end_claimed(run, reason, ended):
            started = run
        self.maybe_drained()
        return pending is not None or run is not None, started

    def cancel_future(self, future: Any, ended: list[V]) -> tuple[bool, V | None] | None:
        """Future.cancel(): end the version of ``future`` unless it started.

        Returns whether it ended now (a series: whether this call stopped it),
        and its claimed record if it was claimed; None if the book no longer
        holds it (it ended or was never added: the Future's own state decides).
        """
        task_id = future.task_id
        run = self.pending.get(task_id)
        if run is not None and run.future is future:
            self.drop_pending(task_id, run, CANCELLED, ended)
            self.maybe_drained()
            return True, None
        run = self.running.get(task_id)
        if run is None or run.future is not future:
            return None
        if run.series is not None:
            done = not run.series.stopped
            self.end_claimed(run, CANCELLED, ended)
        else:
            done = self.end_claimed(run, CANCELLED, ended)
        self.maybe_drained()
        return done, run

    # -- closing ---------------------------------------------------------------

    def set_state(self, new: str) -> None:
        self.state = check_transition(self.state, new)
        self.wakeups.state_changed(new)

    def maybe_drained(self) -> None:
        """Draining ends when nothing is pending or running."""
        if self.state is DRAINING and not self.running and not len(self.core):
            self.set_state(CLOSING)

    def close(self, ended: list[V]) -> None:
        """open or draining -> closing: end every pending version and every series.

        Claimed versions run, as ThreadPoolExecutor runs what its workers took.
        """
        if self.state is OPEN or self.state is DRAINING:
            self.set_state(CLOSING)
            for task_id, run in list(self.pending.items()):
                self.drop_pending(task_id, run, CLOSED, ended)
            for run in self.running.values():
                if run.series is not None:
                    self.end_claimed(run, CLOSED, ended)

    def drain(self, ended: list[V], due_by: float | None = None) -> None:
        """open -> draining: stop the series; with ``due_by``, drop versions due after it."""
        if self.state is OPEN:
            self.set_state(DRAINING)
        if self.state is not DRAINING:
            return
        for task_id, run in list(self.pending.items()):
            if run.series is not None or (due_by is not None and run.run_at > due_by):
                self.drop_pending(task_id, run, CLOSED, ended)
        for run in self.running.values():
            if run.series is not None:
                self.end_claimed(run, CLOSED, ended)
        self.maybe_drained()


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
