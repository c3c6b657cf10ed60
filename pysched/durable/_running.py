"""Running claimed versions on the worker pool, and queueing their outcomes.

The start rule: a claimed version starts only if, when a worker picks it up,
its lease is provably live (the local deadline of its claim or latest
renewal is ahead, and no renewal found it lost), the scheduler is open and
no cancel or newer version of its task id has reached this process since
the claim; otherwise it is handed back unrun (the store records that only
where the claim still holds its row, and releases the lease). A callable
that raises fails its version, logged with its traceback, and its Future
raises that exception, a BaseException (SystemExit, KeyboardInterrupt) too;
so does a failing clock reading (the rule of ``_clocks``). The worker
survives. One raise is not a failure: TaskCancelled
with reason "closed" while the pool's own token for the run says "closed" (the
pool was closed with cancel_running, as the worker command does on a second
signal) hands the version back unrun, for another worker to run.
"""

from __future__ import annotations

import itertools
import logging
import traceback
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from ..pool.token import CLOSED as POOL_CLOSED
from ..threadpool import TaskCancelled, ThreadPoolScheduler, current_token
from . import _local
from ._counters import Counters
from ._events import DurableEvents
from ._futures import DurableFuture
from ._inflight import Inflight, RunningTask, lease_live
from ._lifecycle import Lifecycle
from ._outcome_queue import OutcomeQueue
from .errors import BadRow, UnknownTask
from .registry import TaskRegistry
from .store import COMPLETED, ERROR, FAILED, PENDING, Claim, Outcome, check_claim
from .timebase import Timebase

__all__ = ["Runs"]

log = logging.getLogger("pysched.durable")

_TRACEBACK_MAX = 8000  # characters of a failure's traceback stored in the row


class Runs:
    """Hands claims to the pool and turns each run into a queued outcome.

    ``ended()`` is called after each run's outcome is queued and its claim has left
    ``inflight`` (it rings the claiming and housekeeping threads). ``scheduler`` is
    what ``current_task()`` reports the runs belong to.
    """

    def __init__(self, pool: Executor | None, *, owns_pool: bool, registry: TaskRegistry,
                 timebase: Timebase, clock: Callable[[], float], lifecycle: Lifecycle,
                 inflight: Inflight, outcomes: OutcomeQueue, counters: Counters,
                 scheduler: object, ended: Callable[[], None], events: DurableEvents) -> None:
        self.pool = pool
        self._owns_pool = owns_pool
        self._registry = registry
        self._timebase = timebase
        self._clock = clock
        self._lifecycle = lifecycle
        self._inflight = inflight
        self._outcomes = outcomes
        self._counters = counters
        self._scheduler = scheduler
        self._ended = ended
        self._events = events
        self._jobs = itertools.count()

    def close_pool(self, wait: bool = False) -> None:
        """Close the pool if this scheduler made it; its unstarted runs are handed back."""
        if self._owns_pool and self.pool is not None:
            self.pool.close(wait=wait)  # type: ignore[attr-defined]

    def cancel(self, tokens: list[str]) -> None:
        """Set the pool's cancel token of the runs of these lease tokens; one not started
        never starts (a pool other than pysched's has no token to set)."""
        if isinstance(self.pool, ThreadPoolScheduler):
            for token in tokens:
                self.pool.cancel(token)

    def submit(self, job: Callable[[], object], priority: int) -> Future[Any]:
        """Run ``job`` (a fire time of a recurring series) on the pool now, at ``priority``
        among the runs waiting for a worker; raises once the pool is closed."""
        assert self.pool is not None, "a producer runs nothing"
        if isinstance(self.pool, ThreadPoolScheduler):
            # A key of its own: no version of another run is replaced.
            return self.pool.schedule(("series", next(self._jobs)), self.pool.clock(), priority,
                                      job)
        return self.pool.submit(job)

    def start(self, running: RunningTask, claim: Claim, future: DurableFuture | None) -> None:
        """Hand a claimed version to the pool; one that never starts is handed back."""
        handle: Future[Any]
        assert self.pool is not None, "a producer claims nothing"
        try:
            if isinstance(self.pool, ThreadPoolScheduler):
                # Keyed by lease token, so cancel() reaches a run's token.
                handle = self.pool.schedule(claim.token, self.pool.clock(), claim.priority,
                                            self.run, (running, claim, future))
            else:
                handle = self.pool.submit(self.run, running, claim, future)
        except Exception:  # the pool is closing: the claim goes back unrun
            self._unstarted(claim)
            return

        def started_or_not(done: Future[Any]) -> None:
            if done.cancelled():  # closed or cancelled before it started
                self._unstarted(claim)

        handle.add_done_callback(started_or_not)

    def _unstarted(self, claim: Claim) -> None:
        """Queue the hand-back of a claim whose run never started (its pool task was
        cancelled). Queued first, then released: see ``_outcome_queue``."""
        if not self._inflight.holds(claim.token):  # pragma: no cover - one hand-back per claim
            return
        if self._events.listeners.wanted:  # told before its Future can resolve
            self._events.handed_back(claim, "not_started")
        outcome = Outcome(claim.token, claim.task_id, claim.version, PENDING, None)
        self._outcomes.put(outcome)
        self._inflight.finished(claim.token, claim.task_id, claim.version, settled=False)
        self._ended()

    def run(self, running: RunningTask, claim: Claim, future: DurableFuture | None) -> None:
        """Worker: run one claimed version (or hand it back) and queue its outcome."""
        value: Any = None
        state: str = FAILED
        error: str | None = None
        retry_at: float | None = None
        start: float | None = None  # the wall start, read only for a listener
        handed: str | None = None  # why it was handed back unrun
        events = self._events
        try:
            if not self._lease_holds(running):
                state = PENDING  # handed back: recorded only if no one else took the row
                handed = "lease_lapsed"
            elif (not self._lifecycle.is_open or running.cancel_requested or running.superseded
                    or future is not None and not future.running()
                    and not future.set_running_or_notify_cancel()):  # running: a retry
                state = PENDING
                handed = "not_started" if self._lifecycle.is_open else "closed"
                if self._lifecycle.is_open:
                    self._counters.add("not_started")
            else:
                if events.listeners.wanted:
                    start = events.started(claim)
                state, value, error = self._call(running, claim)
                if state == FAILED:
                    retry_at = self._retry_at(claim, value)
                    if retry_at is not None:
                        state = PENDING  # tried again later: its Future stays open
        except BaseException as exc:
            # A SystemExit or KeyboardInterrupt from fn, or a failing clock reading: the
            # run fails with it, its Future raises it (never resolves as if it returned
            # None), and it propagates to the pool.
            state, value, retry_at = FAILED, exc, None
            error = _failure_text(exc)
            log.error("task %r version %r attempt %d failed: %s", claim.task_id, claim.version,
                      claim.attempts, type(exc).__name__, exc_info=exc)
            raise
        finally:
            if events.listeners.wanted:  # told before its Future can resolve
                self._tell(claim, state, value, start, retry_at, handed)
            # Queued first, then released: see _outcome_queue.
            self._outcomes.put(Outcome(claim.token, claim.task_id, claim.version, state, error,
                                       retry_at), future, value)
            self._inflight.finished(claim.token, claim.task_id, claim.version,
                                    settled=state != PENDING)
            self._ended()

    def _tell(self, claim: Claim, state: str, value: Any, start: float | None,
              retry_at: float | None, handed: str | None) -> None:
        """The events of a run's outcome (``value``: its exception if it failed)."""
        if state == COMPLETED:
            self._events.finished(claim, start, None, None)
        elif state == PENDING and retry_at is None:  # unrun, or stopped by the closing pool
            self._events.handed_back(claim, handed or "closed")
        else:  # failed, errored (a bad row, an unknown task), or failed and retried
            self._events.finished(claim, start, value, retry_at)

    def _lease_holds(self, running: RunningTask) -> bool:
        """Whether this run may start: its lease is provably live (the local deadline of
        its claim or latest renewal is ahead) and no renewal found it lost. A claim that
        waited for a worker longer than that (a starved heartbeat, a paused process)
        may be another worker's by now: it is handed back, never started. A local
        clock reading, no store call."""
        if lease_live(running, self._clock()):
            return True
        log.warning("task %r version %r: not started, its lease could not be shown live"
                    " (claimed or renewed too long ago); handed back", running.task_id,
                    running.version)
        self._counters.add("lease_lapsed")
        return False

    def _retry_at(self, claim: Claim, exc: BaseException) -> float | None:
        """When a failed run is due again under its task's policy (a wall instant), or None."""
        policy = self._registry.options(claim.ref).retry
        if policy is None or not policy.retries(exc, claim.attempts):
            return None
        delay = policy.delay(claim.attempts)
        log.warning("task %r version %r attempt %d of %d: retrying in %.3f s", claim.task_id,
                    claim.version, claim.attempts, policy.attempts, delay)
        return self._timebase.to_wall(self._clock()) + delay

    def _call(self, running: RunningTask, claim: Claim) -> tuple[str, Any, str | None]:
        """Resolve and call the claimed work: (state, value or exception, error text)."""
        try:
            args, kwargs = check_claim(claim)
            fn = self._registry.resolve(claim.ref)
        except (BadRow, UnknownTask) as exc:
            log.error("task %r version %r: %s", claim.task_id, claim.version, exc)
            return ERROR, exc, str(exc)
        with _local.running(running, self._scheduler):
            try:
                return COMPLETED, fn(*args, **kwargs), None
            except Exception as exc:  # noqa: BLE001 - recorded as the outcome
                if _stopped_by_close(exc):
                    log.warning("task %r version %r: stopped by the closing pool; handed back"
                                " for another worker", claim.task_id, claim.version)
                    self._counters.add("stopped_by_close")
                    return PENDING, exc, None
                log.error("task %r version %r attempt %d failed", claim.task_id,
                          claim.version, claim.attempts, exc_info=exc)
                return FAILED, exc, _failure_text(exc)


def _failure_text(exc: BaseException) -> str:
    """The error stored for a failed run: the exception and the end of its traceback."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return f"{type(exc).__name__}: {exc}\n{text[-_TRACEBACK_MAX:]}"


def _stopped_by_close(exc: Exception) -> bool:
    """Whether ``exc`` is the run's answer to its pool closing under it: "stop here" means
    "run it elsewhere", not a failure. Both the exception and this run's own token must
    say "closed", so a TaskCancelled raised for any other reason (or carried out of
    another pool) still fails the attempt."""
    if not isinstance(exc, TaskCancelled) or exc.reason != POOL_CLOSED:
        return False
    try:
        token = current_token()
    except RuntimeError:  # not on a pysched pool: no token of its own
        return False
    return token.is_cancelled and token.reason == POOL_CLOSED
