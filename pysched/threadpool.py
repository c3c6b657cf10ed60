"""ThreadPoolScheduler: a fixed pool of worker threads running the core Scheduler's tasks.

A worker that finishes a task completes it in the core and claims the next
due one in the same critical section, so a busy pool moves from task to task
without waking anyone. A separate dispatcher thread only waits for time: the
head's run_at while some worker is idle, and the timeouts of running tasks.
Due work for idle workers is claimed by whoever holds the lock (the
scheduling thread, the dispatcher) and handed to them through ``_handoff``.

Invariants (all read and written under the lock):

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

Lock order: one lock, ``_lock``, with three Conditions on it. Under it run
only the core, dict, deque and Condition operations, and task ids'
``__hash__``/``__eq__`` (dicts and the core look ids up), which therefore
must not call back into the scheduler. Never under it: task functions, Future
methods (they take the Future's own lock and run done callbacks), token
callbacks, or the clock, which is read before the lock is taken. The one
exception is a clock's ``wait_until`` hook, which must wait on our Condition;
FakeClock takes only its own leaf lock there. Objects a call drops (a
replaced version's fn, say) are held until the lock is released, so their
finalisers run outside it too.

Exceptions: one raised by a task's function fails that version's Future and
is counted; the worker goes on. A done callback or token callback that raises
is logged (logger "pysched"). A clock that raises or returns a non-number in
a pool thread is logged and closes the scheduler, so nothing waits forever.

Close states and their transitions are listed in ``pysched._close_state``.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping
from concurrent.futures import CancelledError, Executor, Future
from typing import Any

from . import _impl
from ._aging import aged_key
from ._backpressure import EVICT_LOWEST, OVERFLOWS, PendingBound, SchedulerFull
from ._cancel_token import (
    CANCELLED,
    CLOSED,
    TIMEOUT,
    CancelToken,
    TaskCancelled,
    TaskTimeout,
    _current_run,
    _run_callbacks,
    current_token,
)
from ._close_state import CLOSING, DRAINING, OPEN, check_transition
from ._close_state import CLOSED as STATE_CLOSED
from ._clocks import checked_clock, waiter_for
from ._deadlines import Deadlines
from ._errors import SchedulerClosed
from ._pool_stats import Counters, LatenessReservoir
from ._recurring import FIXED_RATE, MODES, ON_ERRORS, OVERLAPS, SKIP, STOP, Recurrence, check_choice
from ._task_future import TaskFuture
from ._validate import check_callable, check_capacity, check_hashable, check_priority, check_time

LOGGER = logging.getLogger("pysched")

REPLACED = "replaced"
EVICTED = "evicted"
_NOT_STARTED = CancelledError("cancelled after it was claimed, before it started")
_LATE_BATCH = 256  # lateness samples a worker buffers before feeding the reservoir
_INF = math.inf

__all__ = ["CancelToken", "SchedulerFull", "TaskCancelled", "TaskFuture", "TaskTimeout",
           "ThreadPoolScheduler", "current_token"]


class ThreadPoolScheduler(Executor):
    """Run scheduled tasks on a fixed pool of threads, by time, priority and task id.

    ``schedule(task_id, run_at, priority, fn)`` keeps the core's contract:
    earliest ``run_at`` first, then higher priority, then first come; one
    pending version per task id (scheduling an id again replaces it, and its
    Future is cancelled); a newer version waits for a running one. Each call
    returns the ``concurrent.futures.Future`` of its version. At most
    ``max_workers`` tasks run at once. It is a ``concurrent.futures.Executor``
    (``submit``, ``map``, ``shutdown``) and a context manager, which on exit
    waits for the work already submitted, as ThreadPoolExecutor does.

    All times are seconds on ``clock`` (monotonic, ``time.monotonic`` by
    default; see ``pysched._clocks`` for the waiting hook that lets
    ``pysched.testing.FakeClock`` drive the scheduler). A running task reaches
    its cancel token with ``pysched.current_token()``.

    Options: ``max_pending`` and ``overflow`` ("reject" or "evict_lowest")
    bound pending versions (``pysched._backpressure``); ``aging`` (seconds of
    waiting worth one priority level) turns on aging (``pysched._aging``);
    ``lateness_samples`` sizes the lateness reservoir of ``stats()``.
    ``_core_factory`` picks the core class (tests run both implementations).

    >>> with ThreadPoolScheduler(2) as pool:
    ...     pool.schedule_in("greet", 0.0, 0, str.upper, ("hi",)).result()
    'HI'
    """

    def __init__(self, max_workers: int | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 thread_name_prefix: str = "pysched",
                 max_pending: int | None = None, overflow: str = "reject",
                 aging: float | None = None, lateness_samples: int = 4096,
                 _core_factory: Callable[..., Any] | None = None,
                 _queue_factory: Callable[[int], Any] | None = None) -> None:
        if max_workers is None:
            max_workers = min(32, (os.cpu_count() or 1) + 4)  # ThreadPoolExecutor's default
        max_workers = check_capacity(max_workers, "max_workers")
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        if not isinstance(thread_name_prefix, str):
            raise TypeError(f"thread_name_prefix must be a str, not {type(thread_name_prefix).__name__}")
        check_choice(overflow, "overflow", OVERFLOWS)
        if aging is not None:
            aging = check_time(aging, "aging")
            if aging <= 0:
                raise ValueError(f"aging must be > 0 seconds per priority level, got {aging!r}")
        lateness_samples = check_capacity(lateness_samples, "lateness_samples")
        if lateness_samples < 1:
            raise ValueError(f"lateness_samples must be >= 1, got {lateness_samples}")
        if overflow == EVICT_LOWEST and _queue_factory is None:
            _queue_factory = getattr(_impl, "StableBoundedPriorityQueue", None)
        self._bound = (None if max_pending is None
                       else PendingBound(max_pending, overflow, _queue_factory))
        self._tracked = self._bound is not None and self._bound.policy == EVICT_LOWEST
        self._clock = checked_clock(clock)
        self._wait = waiter_for(clock)
        self._epoch = check_time(clock(), "clock()")
        self._aging = aging
        self._max_workers = max_workers
        self._core = (_core_factory or _impl.Scheduler)(clock=clock)

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

        self._threads: list[threading.Thread] = []
        self._thread_ids: set[int] = set()
        self._workers_alive = max_workers
        self._alive = max_workers + 1  # workers and the dispatcher
        for n in range(max_workers):
            self._start(self._work, f"{thread_name_prefix}-worker-{n}")
        self._start(self._dispatch, f"{thread_name_prefix}-dispatcher")

    def _start(self, target: Callable[[], None], name: str) -> None:
        # Daemon threads: an unclosed scheduler does not keep the interpreter alive.
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()
        self._thread_ids.add(thread.ident)  # type: ignore[arg-type]

    # -- public API -----------------------------------------------------------

    @property
    def max_workers(self) -> int:
        """The number of worker threads: the most tasks that run at once."""
        return self._max_workers

    @property
    def clock(self) -> Callable[[], float]:
        """The clock all times are read on."""
        return self._clock

    @property
    def state(self) -> str:
        """The life-cycle state: open, draining, closing or closed (``pysched._close_state``)."""
        return self._state

    def schedule(self, task_id: Hashable, run_at: float, priority: int, fn: Callable[..., Any],
                 args: Iterable[Any] = (), kwargs: Mapping[str, Any] | None = None, *,
                 timeout: float | None = None) -> TaskFuture:
        """Run ``fn(*args, **kwargs)`` at ``run_at`` as the newest version of ``task_id``.

        Returns that version's Future. A pending older version is replaced
        (its Future cancelled, ``cancel_reason == "replaced"``); a running one
        runs on and this one waits for it. With ``timeout``, the version's
        token is set once it has run that long, and its Future fails with
        TaskTimeout. Raises SchedulerClosed unless open, SchedulerFull under
        backpressure, TypeError/ValueError/OverflowError naming a bad
        argument; a refused call changes nothing. O(log n).
        """
        # task_id, run_at, priority and fn are checked by the core, before any change
        fut = self._new_future(task_id, fn, args, kwargs, timeout)
        self._add(task_id, run_at, priority, fut, self._clock())
        return fut

    def schedule_in(self, task_id: Hashable, delay: float, priority: int, fn: Callable[..., Any],
                    args: Iterable[Any] = (), kwargs: Mapping[str, Any] | None = None, *,
                    timeout: float | None = None) -> TaskFuture:
        """``schedule()`` at ``delay`` (>= 0) seconds from now on the clock."""
        check_hashable(task_id, "task_id")
        delay = _check_seconds(delay, "delay", allow_zero=True)
        fut = self._new_future(task_id, fn, args, kwargs, timeout)
        now = self._clock()
        self._add(task_id, now + delay, priority, fut, now)
        return fut

    def schedule_every(self, task_id: Hashable, interval: float, priority: int,
                       fn: Callable[..., Any], args: Iterable[Any] = (),
                       kwargs: Mapping[str, Any] | None = None, *,
                       start_at: float | None = None, mode: str = FIXED_RATE,
                       overlap: str = SKIP, on_error: str = STOP,
                       timeout: float | None = None) -> TaskFuture:
        """Run ``fn`` every ``interval`` seconds as a recurring series of ``task_id``.

        The first run is due at ``start_at`` (default: one interval from now).
        ``mode`` is "fixed_rate" (run k due at start_at + k * interval) or
        "fixed_delay" (due interval after the previous run returned).
        ``overlap`` ("skip", "coalesce" or "queue") says what becomes of runs
        that come due while one is still running; runs never overlap (see
        ``pysched._recurring``). ``on_error``: "stop" (the default, as Java's
        executors do) ends the series when a run raises or times out, and its
        Future fails with that exception; "continue" counts the failure and
        goes on. Each run is a new version of ``task_id``; ``cancel(task_id)``
        or cancelling the returned Future stops the series. That Future never
        gets a result: it is cancelled or fails.
        """
        check_hashable(task_id, "task_id")
        interval = _check_seconds(interval, "interval", allow_zero=False)
        priority = check_priority(priority, "priority")
        check_choice(mode, "mode", MODES)
        check_choice(overlap, "overlap", OVERLAPS)
        check_choice(on_error, "on_error", ON_ERRORS)
        if start_at is not None:
            start_at = check_time(start_at, "start_at")
        fut = self._new_future(task_id, fn, args, kwargs, timeout)
        now = self._clock()
        first = now + interval if start_at is None else start_at
        fut._series = Recurrence(interval, mode, overlap, on_error, priority, first)
        fut._special = True
        self._add(task_id, first, priority, fut, now)
        return fut

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> TaskFuture:
        """Run ``fn(*args, **kwargs)`` now, at priority 0; the id is the returned Future.

        The Executor method: SchedulerClosed once the scheduler is not open.
        O(log n).
        """
        fut = TaskFuture(self, fn)
        if args:
            fut._args = args
        if kwargs:
            fut._kwargs = kwargs
        now = self._clock()
        if self._bound is not None or self._aging is not None:
            self._add(fut, now, 0, fut, now)
            return fut
        with self._lock:  # the fast path of _add(): a fresh id replaces nothing
            if self._state is not OPEN:
                raise SchedulerClosed(f"cannot submit: the scheduler is {self._state}")
            fut._version = self._core.schedule(fut, now, 0, fn)
            self._pending[fut] = fut
            self._counts.scheduled += 1
            if self._idle:
                self._fill_handoff_locked(now)
        return fut

    def cancel(self, task_id: Hashable) -> bool:
        """Cancel the pending version of ``task_id`` and set its running version's token.

        The pending version never starts (its Future is cancelled); a running
        one is only asked to stop, through its token, and is reported done
        when its function returns. A recurring series stops. Returns False
        when nothing of ``task_id`` is pending or running. O(1) amortised.
        """
        check_hashable(task_id, "task_id")
        ended: list[TaskFuture] = []
        with self._lock:
            fut = self._pending.get(task_id)
            if fut is not None:
                self._drop_pending_locked(task_id, fut, CANCELLED, ended)
            run = self._running.get(task_id)
            callbacks = None
            if run is not None:
                callbacks = self._request_stop_locked(run, CANCELLED)
                self._stop_series_locked(run, CANCELLED, ended)
            self._maybe_drained_locked()
        self._end_futures(ended)
        if callbacks:
            _run_callbacks(callbacks)
        return fut is not None or run is not None

    def close(self, wait: bool = True, timeout: float | None = None,
              cancel_running: bool = False) -> bool:
        """Stop the scheduler: open (or draining) -> closing -> closed.

        New schedules raise SchedulerClosed from the first moment; claiming
        stops; every pending version is cancelled (``cancel_reason ==
        "closed"``) and every series stopped; running tasks finish, with their
        tokens set (reason "closed") if ``cancel_running``. With ``wait``,
        returns once every worker and the dispatcher have exited (so every
        Future is resolved), or after ``timeout`` seconds of the clock;
        returns whether that happened. Idempotent. Called from inside a task
        (or a callback on a pool thread), it waits for everything but the
        calling thread: the calling task's own Future resolves when it returns.
        """
        if timeout is not None:
            timeout = _check_seconds(timeout, "timeout", allow_zero=True)
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
        if not wait:
            return self._state is STATE_CLOSED
        return self._wait_closed(timeout)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """The Executor method: ``close()`` with ``cancel_futures``, else drain first.

        Without ``cancel_futures`` the scheduler drains: it takes no new work
        and stops recurring series, but runs every version already pending,
        when due, before it closes (ThreadPoolExecutor's and Java's default).
        """
        if cancel_futures:
            self.close(wait=wait)
            return
        ended: list[TaskFuture] = []
        with self._lock:
            if self._state is OPEN:
                self._set_state_locked(DRAINING)
                for task_id, fut in list(self._pending.items()):
                    if fut._series is not None:
                        self._drop_pending_locked(task_id, fut, CLOSED, ended)
                for run in self._running.values():
                    self._stop_series_locked(run, CLOSED, ended)
                self._maybe_drained_locked()
        self._end_futures(ended)
        if wait:
            self._wait_closed(None)

    def stats(self) -> dict[str, Any]:
        """Counts, sizes and start lateness (start minus run_at) percentiles.

        ``running`` counts claimed versions (at most max_workers, which
        ``peak_running`` shows); the lateness of a run is recorded when it
        finishes. See ``pysched._pool_stats`` for what each counter means.
        O(samples log samples) for the percentiles.
        """
        with self._lock:
            result: dict[str, Any] = {
                "state": self._state,
                "pending": len(self._core),
                "running": self._claimed,
                "peak_running": self._peak,
                "max_workers": self._max_workers,
            }
            result.update(self._counts.as_dict())
            self._lateness.absorb()
            result["lateness"] = self._lateness.summary()
        return result

    # -- adding work ----------------------------------------------------------

    def _new_future(self, task_id: Hashable, fn: Callable[..., Any], args: Iterable[Any],
                    kwargs: Mapping[str, Any] | None, timeout: float | None) -> TaskFuture:
        """Check args, kwargs and timeout and build the version's Future."""
        fut = TaskFuture(self, fn)
        fut._task_id = task_id
        if args.__class__ is tuple and kwargs is None and timeout is None:
            if args:  # the common call: nothing more to check
                fut._args = args  # type: ignore[assignment]
            return fut
        if isinstance(args, (str, bytes)) or not isinstance(args, Iterable):
            raise TypeError(f"args must be an iterable of arguments, not {type(args).__name__}")
        if kwargs is not None and not isinstance(kwargs, Mapping):
            raise TypeError(f"kwargs must be a mapping, not {type(kwargs).__name__}")
        if timeout is not None:
            fut._timeout = _check_seconds(timeout, "timeout", allow_zero=False)
            fut._special = True
        args = tuple(args)
        if args:
            fut._args = args
        if kwargs:
            fut._kwargs = dict(kwargs)
        return fut

    def _add(self, task_id: Hashable, run_at: float, priority: int, fut: TaskFuture,
             now: float) -> None:
        """Make ``fut`` the pending version of ``task_id``; resolve what it displaced."""
        ended: list[TaskFuture] = []
        with self._lock:
            if self._state is not OPEN:
                raise SchedulerClosed(f"cannot schedule {task_id!r}: the scheduler is {self._state}")
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

    # -- claiming ----------------------------------------------------------------

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
            return task  # type: ignore[no-any-return]
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
                return task  # type: ignore[no-any-return]
            self._handoff.append(self._claim_locked(task, now))
            self._idle -= 1
            self._work_ready.notify()
        return None

    def _is_running(self, fut: TaskFuture, run_no: int) -> bool:
        return self._running.get(fut.task_id) is fut and fut._run_no == run_no

    # -- the worker ----------------------------------------------------------------

    def _work(self) -> None:
        try:
            self._work_loop()
        except BaseException:  # a bug in pysched: say so, and do not leave close() waiting
            LOGGER.exception("pysched: worker thread failed")
            raise
        finally:
            with self._lock:
                self._thread_exit_locked(worker=True)

    def _work_loop(self) -> None:
        # The per-task path is written out here rather than in helper methods:
        # with the Future's own cost down (see _task_future), the calls were a
        # measurable share of a worker's CPU time per task.
        lock = self._lock
        clock = self._clock
        core = self._core
        running = self._running
        counts = self._counts
        late = self._lateness.pending
        handoff = self._handoff
        max_workers = self._max_workers
        set_current = _current_run.set
        reset_current = _current_run.reset
        task: Any = None
        fut: TaskFuture | None = None
        result: Any = None
        failure: BaseException | None = None
        started = False
        start = now = self._epoch
        ended: list[TaskFuture] = []  # versions a series' next run evicted
        while True:
            try:
                now = clock()
                if now.__class__ is not float or now - now != 0.0:
                    now = self._bad_reading(now, start)
            except Exception as exc:
                now = self._bad_reading(exc, start)
            # Finish the previous task and claim the next in one critical section.
            with lock:
                if fut is not None:
                    if started and not fut._special:  # the common case of _finish_locked
                        del running[task.task_id]
                        self._claimed -= 1
                        if failure is None:
                            core.complete(task)
                            counts.completed += 1
                        else:
                            core.fail(task, failure)
                            counts.failed += 1
                        late.append(start - task.run_at)
                        if len(late) > _LATE_BATCH:
                            self._lateness.absorb()
                        if self._state is DRAINING:
                            self._maybe_drained_locked()
                    else:
                        failure = self._finish_locked(task, fut, started, start, now, failure,
                                                      ended)
                # _take_work_locked(), written out
                if handoff:
                    work = handoff.popleft()
                elif self._claimed < max_workers and (self._state is OPEN
                                                      or self._state is DRAINING):
                    work = core.next(now)
                    if work is not None and work.__class__ is not float:
                        work = self._claim_locked(work, now)
                else:
                    work = None
            if fut is not None:
                if fut._series is None:
                    if started:
                        fut._set_outcome(result, failure)
                    fut._release_call()
                else:
                    self._resolve_series(fut, failure)
                task = fut = result = failure = None
                if ended:
                    self._end_futures(ended)
                    ended.clear()
            if work is None or work.__class__ is float:
                work = self._wait_for_work(now)
                if work is None:
                    return
            task, fut = work  # type: ignore[misc]
            work = None
            # Run it, outside the lock.
            series = fut._series
            if series is None:
                started = fut._try_start()  # False: cancelled after the claim
            else:  # a series' Future stays pending; a stopped series runs no more
                started = not series.stopped
            if not started:
                continue
            try:
                start = clock()
                if start.__class__ is not float or start - start != 0.0:
                    start = self._bad_reading(start, now)
            except Exception as exc:
                start = self._bad_reading(exc, now)
            context = set_current(fut)
            try:
                kwargs = fut._kwargs  # ** of an empty mappingproxy still copies it: skip it
                if kwargs:
                    result = fut._fn(*fut._args, **kwargs)  # type: ignore[misc]
                else:
                    result = fut._fn(*fut._args)  # type: ignore[misc]
            except BaseException as exc:  # the worker survives whatever fn raises
                failure = exc
            finally:
                reset_current(context)

    def _wait_for_work(self, now: float) -> tuple[Any, TaskFuture] | None:
        """Idle until there is work for this worker; None when it must exit."""
        lock = self._lock
        while True:
            with lock:
                work = self._take_work_locked(now)
                if work is not None and work.__class__ is not float:
                    return work  # type: ignore[return-value]
                if self._state is CLOSING or self._state is STATE_CLOSED:
                    return None
                self._idle += 1
                if work is not None and now + work < self._dispatch_at:  # type: ignore[operator]
                    self._dispatch_at = -_INF  # it must wake when the head comes due
                    self._dispatch_cv.notify()
                self._work_ready.wait()
                if self._handoff:  # the notifier claimed it for us (or for any free worker)
                    return self._handoff.popleft()
                if self._state is CLOSING or self._state is STATE_CLOSED:
                    return None
            now = self._read_clock(now)  # notified without a task: look at the core again

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
        """After a run of a series: schedule the next, or end it. The series' exception, if it ended."""
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
        if fut._series.stopped:  # type: ignore[union-attr]  (never turns back)
            fut._release_call()

    # -- the dispatcher ----------------------------------------------------------

    def _dispatch(self) -> None:
        try:
            self._dispatch_loop()
        except BaseException:
            LOGGER.exception("pysched: dispatcher thread failed")
            raise
        finally:
            with self._lock:
                self._thread_exit_locked(worker=False)

    def _dispatch_loop(self) -> None:
        now = self._epoch
        while True:
            now = self._read_clock(now)
            fired: list[Callable[[], Any]] = []
            with self._lock:
                if self._state is CLOSING and not self._workers_alive:
                    return
                if self._deadlines:
                    for run in self._deadlines.pop_expired(now):
                        run._timed_out = True
                        fired.extend(self._request_stop_locked(run, TIMEOUT) or ())
                hint = self._fill_handoff_locked(now) if self._idle else None
                if not fired:
                    deadline = _INF if hint is None else now + hint
                    first = self._deadlines.first()
                    if first is not None and first < deadline:
                        deadline = first
                    self._dispatch_at = deadline
                    self._wait(self._dispatch_cv, None if deadline == _INF else deadline, now)
                    self._dispatch_at = -_INF
            if fired:
                _run_callbacks(fired)

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

    def _thread_exit_locked(self, worker: bool) -> None:
        if worker:
            self._workers_alive -= 1
            if not self._workers_alive:  # the dispatcher exits after the last worker
                self._dispatch_at = -_INF
                self._dispatch_cv.notify()
        self._alive -= 1
        if not self._alive:
            if self._state is not CLOSING:  # a thread died early: still end closed
                self._state = CLOSING
            self._set_state_locked(STATE_CLOSED)
        self._closed_cv.notify_all()

    def _wait_closed(self, timeout: float | None) -> bool:
        """Wait until every pool thread but the caller's has exited, or ``timeout`` passes."""
        me = threading.get_ident()
        inside = me in self._thread_ids
        in_worker = inside and me != self._threads[-1].ident  # the dispatcher starts last
        now = self._clock()
        deadline = None if timeout is None else now + timeout
        while True:
            with self._lock:
                if self._state is STATE_CLOSED:
                    break
                # From inside, the caller's worker and the dispatcher (which outlives
                # the workers to time them) are still alive: wait for the others.
                if inside and self._workers_alive == (1 if in_worker else 0):
                    return True
                if deadline is not None and now >= deadline:
                    return False
                self._wait(self._closed_cv, deadline, now)
            now = self._read_clock(now)
        if not inside:
            for thread in self._threads:
                thread.join()
        return True

    # -- the clock ----------------------------------------------------------------

    def _read_clock(self, last: float) -> float:
        try:
            now = self._clock()
            if now.__class__ is float and now - now == 0.0:
                return now
        except Exception as exc:
            return self._bad_reading(exc, last)
        return self._bad_reading(now, last)

    def _bad_reading(self, reading: Any, last: float) -> float:
        """A pool thread read garbage or an error from the clock: log it and close."""
        if not isinstance(reading, BaseException):
            try:
                return check_time(reading, "clock()")  # an int, say: fine
            except (TypeError, ValueError, OverflowError) as exc:
                reading = exc
        LOGGER.error("pysched: the clock failed in a pool thread; closing the scheduler",
                     exc_info=reading)
        self.close(wait=False)  # pool threads read the clock outside the lock
        return last

    def __repr__(self) -> str:
        return (f"<ThreadPoolScheduler {self._state} max_workers={self._max_workers}"
                f" pending={len(self._core)} running={self._claimed}>")


def _check_seconds(value: Any, name: str, *, allow_zero: bool) -> float:
    seconds = check_time(value, name)
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return seconds
