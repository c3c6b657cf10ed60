"""The book-keeping half of ThreadPoolScheduler: its state and every change to it.

``ThreadPoolScheduler`` (``pysched.threadpool``) is one class written in three
modules by job: this one holds the state and the operations on it, all made
under the lock; ``pysched._pool_threads`` the worker and dispatcher loops;
``pysched.threadpool`` the public methods.

Invariants (all read and written under ``_lock``):

- ``_claimed``, the versions running in the core (executing, or claimed and
  sitting in ``_handoff``), never exceeds ``max_workers``: every claim checks
  it first. Each claimed version is held by one worker or sits in
  ``_handoff``, and a worker with nothing to run takes from ``_handoff`` first.
- ``_pending[tid]`` is the TaskFuture of the core's pending version of
  ``tid`` and ``_running[tid]`` that of its claimed version; both change only
  together with the core.
- ``_idle`` counts workers waiting on ``_work_ready`` and not yet notified:
  each handed-off task notifies one of them, and a worker already awake is
  never notified.
- ``_dispatch_at`` is the clock time the dispatcher waits for (inf: until
  notified; -inf: it is awake or already notified and looks again before it
  waits), so it is notified only when something earlier turns up.
- Each TaskFuture is resolved once, outside the lock, by whoever took its
  version out of ``_pending`` (see ``pysched._task_future``): methods here
  collect such Futures in an ``ended`` list for the caller to resolve.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import CancelledError, Future
from typing import Any

from ._aging import aged_key
from ._backpressure import EVICT_LOWEST, PendingBound, SchedulerFull
from ._cancel_token import CANCELLED, CLOSED, CancelToken, TaskTimeout, _run_callbacks
from ._clocks import Waiter
from ._close_state import CLOSING, DRAINING, OPEN, check_transition
from ._deadlines import Deadlines
from ._errors import SchedulerClosed
from ._pool_stats import Counters, LatenessReservoir
from ._recurring import STOP, Recurrence
from ._task_future import TaskFuture
from ._validate import check_callable, check_hashable, check_priority, check_time

REPLACED = "replaced"
EVICTED = "evicted"
_NOT_STARTED = CancelledError("cancelled after it was claimed, before it started")
_INF = math.inf

__all__ = ["PoolBook"]


class PoolBook:
    """State and locked operations of a ThreadPoolScheduler (see the module docstring)."""

    def _init_book(self, max_workers: int, clock: Callable[[], float], wait: Waiter,
                   epoch: float, core: Any, bound: PendingBound | None, aging: float | None,
                   lateness_samples: int) -> None:
        self._max_workers = max_workers
        self._clock = clock
        self._wait = wait
        self._epoch = epoch
        self._core = core
        self._bound = bound
        self._tracked = bound is not None and bound.policy == EVICT_LOWEST
        self._aging = aging
        self._lock = threading.Lock()
        self._work_ready = threading.Condition(self._lock)  # idle workers wait here
        self._dispatch_cv = threading.Condition(self._lock)  # the dispatcher waits here
        self._closed_cv = threading.Condition(self._lock)  # close(wait=True) waits here
        self._pending: dict[Hashable, TaskFuture] = {}
        self._running: dict[Hashable, TaskFuture] = {}
        self._handoff: deque[tuple[Any, TaskFuture]] = deque()
        self._claimed = 0
        self._peak = 0
        self._idle = 0
        self._dispatch_at = -_INF
        self._deadlines = Deadlines(self._is_running)
        self._counts = Counters()
        self._lateness = LatenessReservoir(lateness_samples)
        self._state = OPEN

    # -- adding work ----------------------------------------------------------

    def _add(self, task_id: Hashable, run_at: float, priority: int, fut: TaskFuture,
             now: float) -> None:
        """Make ``fut`` the pending version of ``task_id``; resolve what it displaced."""
        ended: list[TaskFuture] = []
        with self._lock:
            if self._state is not OPEN:
                raise SchedulerClosed(
                    f"cannot schedule {task_id!r}: the scheduler is {self._state}")
            self._add_locked(task_id, run_at, priority, fut, now, ended)
        if ended:
            self._end_futures(ended)

    def _add_locked(self, task_id: Hashable, run_at: float, priority: int, fut: TaskFuture,
                    now: float, ended: list[TaskFuture]) -> None:
        if self._aging is not None or self._bound is not None:
            self._add_checked_locked(task_id, run_at, priority, fut, now, ended)
            return
        # The core checks every argument before it changes anything, and once it
        # accepted task_id the dicts can hash it.
        fut._version = self._core.schedule(task_id, run_at, priority, fut._fn)
        if run_at.__class__ is not float:
            run_at = float(run_at)  # the core accepted it: a finite real
        self._adopt_locked(task_id, run_at, fut, self._pending.get(task_id), now, ended)

    def _add_checked_locked(self, task_id: Hashable, run_at: float, priority: int,
                            fut: TaskFuture, now: float, ended: list[TaskFuture]) -> None:
        """_add_locked() with aging or a bound: both need checked values before the core."""
        check_hashable(task_id, "task_id")
        run_at = check_time(run_at, "run_at")
        priority = check_priority(priority, "priority")
        check_callable(fut._fn, "fn")
        key = priority
        if self._aging is not None:
            key = aged_key(priority, max(now, run_at), self._epoch, self._aging)
        old = self._pending.get(task_id)
        victim = None
        bound = self._bound
        if bound is not None:
            if old is None:
                try:
                    victim = bound.admit(task_id, priority, len(self._core))
                except SchedulerFull:
                    self._counts.rejected += 1
                    raise
            else:
                bound.replace(task_id, priority)
        fut._version = self._core.schedule(task_id, run_at, key, fut._fn)
        self._adopt_locked(task_id, run_at, fut, old, now, ended)
        if victim is not None:
            self._drop_pending_locked(victim, self._pending[victim], EVICTED, ended,
                                      bound_knows=False)

    def _adopt_locked(self, task_id: Hashable, run_at: float, fut: TaskFuture,
                      old: TaskFuture | None, now: float, ended: list[TaskFuture]) -> None:
        """The core took ``fut``'s version: book it, and end the version it replaced."""
        fut._run_at = run_at
        self._counts.scheduled += 1
        if old is not None:  # the core replaced it
            self._counts.replaced += 1
            self._end_pending(old, REPLACED, ended)
        elif self._running:
            run = self._running.get(task_id)
            if run is not None:  # a new version of a running series ends the series
                self._stop_series_locked(run, REPLACED, ended)
        self._pending[task_id] = fut
        if self._idle:
            self._after_schedule_locked(run_at, now)

    def _after_schedule_locked(self, run_at: float, now: float) -> None:
        """Wake whoever must act on a version due at ``run_at``; some worker is idle."""
        if run_at <= now:
            self._fill_handoff_locked(now)
        elif run_at < self._dispatch_at:
            self._dispatch_at = -_INF
            self._dispatch_cv.notify()

    # -- taking work out --------------------------------------------------------

    def _drop_pending_locked(self, task_id: Hashable, fut: TaskFuture, reason: str,
                             ended: list[TaskFuture], bound_knows: bool = True) -> None:
        """Cancel the pending version of ``task_id`` (whose Future is ``fut``) in the core."""
        del self._pending[task_id]
        # The core also flags a running version of the id: harmless, the pool
        # keeps its own tokens. A cancel of the pending version alone would be a
        # cleaner core call (see the report).
        self._core.cancel(task_id)
        if self._tracked and bound_knows:
            self._bound.discard(task_id)  # type: ignore[union-attr]
        if fut._run_at <= self._dispatch_at < _INF:  # it may be the head the dispatcher waits for
            self._dispatch_at = -_INF
            self._dispatch_cv.notify()
        if reason == EVICTED:
            self._counts.evicted += 1
        else:
            self._counts.cancelled += 1
        self._end_pending(fut, reason, ended)

    def _end_pending(self, fut: TaskFuture, reason: str, ended: list[TaskFuture]) -> None:
        """``fut``'s version left the core unrun: queue the Future to be cancelled."""
        series = fut._series
        if series is not None:
            if series.stopped:
                return
            series.stopped = True
        fut._cancel_reason = reason
        ended.append(fut)

    def _stop_series_locked(self, run: TaskFuture, reason: str, ended: list[TaskFuture]) -> None:
        """End the series whose run is ``run`` (running now): no next run is scheduled."""
        series = run._series
        if series is not None and not series.stopped:
            series.stopped = True
            run._cancel_reason = reason
            ended.append(run)

    def _end_futures(self, ended: list[TaskFuture]) -> None:
        """Cancel the Futures of versions (or series) that will never run; outside the lock."""
        for fut in ended:
            fut._cancel_unrun()
            # A series stopped during a run: its worker may be about to call fn,
            # so that worker releases it after the run instead.
            if not fut._in_run:
                fut._release_call()

    def _cancel_future(self, fut: TaskFuture) -> bool:
        """TaskFuture.cancel(): take its version out of the core if it is still pending."""
        task_id = fut.task_id
        ended: list[TaskFuture] = []
        with self._lock:
            if self._pending.get(task_id) is fut:
                self._drop_pending_locked(task_id, fut, CANCELLED, ended)
            elif self._running.get(task_id) is fut:
                self._stop_series_locked(fut, CANCELLED, ended)
            self._maybe_drained_locked()
        if ended:
            self._end_futures(ended)
            return True
        # Claimed but not started: the worker's set_running_or_notify_cancel()
        # will see it. Running or finished: refused, as for any Future.
        return Future.cancel(fut)

    def _request_stop_locked(self, run: TaskFuture,
                             reason: str) -> list[Callable[[], Any]] | None:
        """Set the running version's token (made later, if not yet, already set)."""
        if run._stop_reason is None:
            run._stop_reason = reason
        token = run._token
        return None if token is None else token._set_locked(run._stop_reason)

    def _token_for(self, run: TaskFuture) -> CancelToken:
        """The token of ``run``'s current run, made on first use: current_token()."""
        with self._lock:
            token = run._token
            if token is None:
                token = run._token = CancelToken._for_scheduler(
                    self._lock, self._clock, self._wait, run._stop_reason)
            return token

    # -- claiming and finishing ---------------------------------------------------

    def _claim_locked(self, task: Any, now: float) -> tuple[Any, TaskFuture]:
        """Book a task the core just claimed: it moves from pending to running."""
        task_id = task.task_id
        fut = self._pending.pop(task_id)
        self._running[task_id] = fut
        self._claimed += 1
        if self._claimed > self._peak:
            self._peak = self._claimed
        if fut._special or self._tracked:
            self._claim_extras_locked(task_id, fut, now)
        return task, fut

    def _claim_extras_locked(self, task_id: Hashable, fut: TaskFuture, now: float) -> None:
        """The rarer parts of a claim: the bounded queue, a series, a timeout."""
        if self._tracked:
            self._bound.discard(task_id)  # type: ignore[union-attr]
        if fut._series is not None:  # a fresh run: fresh token state
            fut._in_run = True
            fut._run_no += 1
            fut._stop_reason = fut._token = None
            fut._timed_out = False
        if fut._timeout is not None:
            deadline = now + fut._timeout
            if self._deadlines.add(deadline, fut, fut._run_no) and deadline < self._dispatch_at:
                self._dispatch_at = -_INF
                self._dispatch_cv.notify()

    def _take_work_locked(self, now: float) -> tuple[Any, TaskFuture] | float | None:
        """Work for a worker with nothing to run, or the core's hint (float or None)."""
        if self._handoff:
            return self._handoff.popleft()
        state = self._state
        if (state is not OPEN and state is not DRAINING) or self._claimed >= self._max_workers:
            return None
        task = self._core.next(now)
        if task is None or task.__class__ is float:
            return task
        return self._claim_locked(task, now)

    def _fill_handoff_locked(self, now: float) -> float | None:
        """Claim due tasks for idle workers; the head's hint if it stopped on a task not due."""
        state = self._state
        if state is not OPEN and state is not DRAINING:
            return None
        core = self._core
        while self._idle and self._claimed < self._max_workers:
            task = core.next(now)
            if task is None or task.__class__ is float:
                return task
            self._handoff.append(self._claim_locked(task, now))
            self._idle -= 1
            self._work_ready.notify()
        return None

    def _is_running(self, fut: TaskFuture, run_no: int) -> bool:
        return self._running.get(fut.task_id) is fut and fut._run_no == run_no

    def _finish_locked(self, task: Any, fut: TaskFuture, started: bool, start: float,
                       end: float, failure: BaseException | None,
                       ended: list[TaskFuture]) -> BaseException | None:
        """Report a claimed version's end to the core; return the Future's exception."""
        task_id = task.task_id
        del self._running[task_id]
        self._claimed -= 1
        if fut._timeout is not None and not fut._timed_out:
            self._deadlines.finished()
        counts = self._counts
        if not started:
            self._core.fail(task, _NOT_STARTED)
            counts.cancelled += 1
        else:
            self._lateness.add(start - task.run_at)
            if fut._timed_out:
                timed_out = TaskTimeout(f"task {task_id!r} version {task.version} ran past its"
                                        f" timeout of {fut._timeout!r}s")
                timed_out.__cause__ = failure
                failure = timed_out
                self._core.fail(task, failure)
                counts.timed_out += 1
            elif failure is not None:
                self._core.fail(task, failure)
                counts.failed += 1
            else:
                self._core.complete(task)
                counts.completed += 1
        if fut._series is not None:
            fut._in_run = False
            failure = self._next_run_locked(task_id, fut, fut._series, failure, end, ended)
        self._maybe_drained_locked()
        return failure

    def _next_run_locked(self, task_id: Hashable, fut: TaskFuture, series: Recurrence,
                         failure: BaseException | None, end: float,
                         ended: list[TaskFuture]) -> BaseException | None:
        """After a run of a series: schedule the next, or end it; its exception if it ended."""
        if series.stopped:
            return None
        if failure is not None and series.on_error == STOP:
            series.stopped = True
            return failure
        run_at, skipped, coalesced = series.next_run(end)
        self._counts.skipped += skipped
        self._counts.coalesced += coalesced
        if not math.isfinite(run_at):
            series.stopped = True
            return OverflowError(f"the next run of {task_id!r} is due at {run_at!r}")
        try:
            self._add_locked(task_id, run_at, series.priority, fut, end, ended)
        except (SchedulerFull, OverflowError) as exc:  # nothing was added
            series.stopped = True
            return exc
        return None

    def _resolve_series(self, fut: TaskFuture, failure: BaseException | None) -> None:
        """After a run of a series, outside the lock: resolve it if the run ended it."""
        if failure is not None:  # the series ended with it; we own the Future
            fut._set_outcome(None, failure)
        series = fut._series
        if series is not None and series.stopped:  # read without the lock: never turns back
            fut._release_call()

    # -- closing ---------------------------------------------------------------

    def _set_state_locked(self, new: str) -> None:
        self._state = check_transition(self._state, new)
        if new is CLOSING:  # wake every thread: workers exit, the dispatcher re-checks
            self._idle = 0
            self._work_ready.notify_all()
            self._dispatch_at = -_INF
            self._dispatch_cv.notify()
        self._closed_cv.notify_all()

    def _maybe_drained_locked(self) -> None:
        """Draining ends when nothing is pending or running."""
        if self._state is DRAINING and not self._claimed and not len(self._core):
            self._set_state_locked(CLOSING)

    def _begin_close(self, cancel_running: bool) -> None:
        """open or draining -> closing: cancel every pending version and stop every series.

        With ``cancel_running`` set the running versions' tokens (reason
        "closed"), on a second call too. Resolves what it ended, outside the lock.
        """
        ended: list[TaskFuture] = []
        callbacks: list[Callable[[], Any]] = []
        with self._lock:
            if self._state is OPEN or self._state is DRAINING:
                self._set_state_locked(CLOSING)
                for task_id, fut in list(self._pending.items()):
                    self._drop_pending_locked(task_id, fut, CLOSED, ended)
                for run in self._running.values():
                    self._stop_series_locked(run, CLOSED, ended)
            if cancel_running:
                for run in self._running.values():
                    callbacks.extend(self._request_stop_locked(run, CLOSED) or ())
        self._end_futures(ended)
        _run_callbacks(callbacks)
