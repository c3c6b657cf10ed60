"""ThreadPoolScheduler: a fixed pool of worker threads running the core Scheduler's tasks.

The class is written in three modules by job: this one has the public
methods; ``pysched._pool_book`` the state, its invariants and every change
made to it under the lock; ``pysched._pool_threads`` the worker and dispatcher
loops. In short: a worker that finishes a task claims the next due one in the
same critical section, so a busy pool moves from task to task without waking
anyone; due work for idle workers is claimed by whoever holds the lock (the
scheduling thread, the dispatcher) and handed over; the dispatcher thread
only waits for time (the head's run_at while a worker is idle, and task
timeouts), on the injected clock.

Lock order: one scheduler lock, ``_lock``, with three Conditions on it (idle
workers, the dispatcher, close waiters); cancel tokens wait on it too. Under
it run only the core, dict, deque and Condition operations, and task ids'
``__hash__``/``__eq__`` (dicts and the core look ids up), which therefore
must not call back into the scheduler. Never under it: task functions, done
callbacks, token callbacks, or the clock, which is read before the lock is
taken (a stale reading only delays a claim; nothing starts early). Each
Future has its own lock (``pysched._task_future``); the scheduler lock and a
Future's lock are never held together. The one call out under the lock is a
clock's ``wait_until`` hook, which must wait on our Condition; FakeClock takes
only its own leaf lock there. Objects a call drops (a replaced version's fn,
say) are held until the lock is released, so their finalisers run outside it.

Exceptions: one raised by a task's function fails that version's Future and
is counted; the worker goes on. A done callback or token callback that raises
is logged (logger "pysched"). A clock that raises or returns a non-number in
a pool thread is logged and closes the scheduler, so nothing waits forever.

Close states and their transitions are listed in ``pysched._close_state``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from concurrent.futures import Executor
from typing import Any

from . import _impl
from ._backpressure import EVICT_LOWEST, OVERFLOWS, PendingBound, SchedulerFull
from ._cancel_token import (
    CANCELLED,
    CLOSED,
    CancelToken,
    TaskCancelled,
    TaskTimeout,
    _run_callbacks,
    current_token,
)
from ._clocks import checked_clock, waiter_for
from ._close_state import CLOSED as STATE_CLOSED
from ._close_state import DRAINING, OPEN
from ._errors import SchedulerClosed
from ._pool_threads import PoolThreads
from ._recurring import FIXED_RATE, MODES, ON_ERRORS, OVERLAPS, SKIP, STOP, Recurrence, check_choice
from ._task_future import TaskFuture
from ._validate import check_capacity, check_hashable, check_priority, check_time

__all__ = ["CancelToken", "SchedulerFull", "TaskCancelled", "TaskFuture", "TaskTimeout",
           "ThreadPoolScheduler", "current_token"]


class ThreadPoolScheduler(PoolThreads, Executor):
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
            raise TypeError("thread_name_prefix must be a str,"
                            f" not {type(thread_name_prefix).__name__}")
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
        bound = None if max_pending is None else PendingBound(max_pending, overflow,
                                                              _queue_factory)
        clock = checked_clock(clock)
        epoch = check_time(clock(), "clock()")
        core = (_core_factory or _impl.Scheduler)(clock=clock)
        self._init_book(max_workers, clock, waiter_for(clock), epoch, core, bound, aging,
                        lateness_samples)
        self._start_threads(thread_name_prefix)

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
        self._begin_close(cancel_running)
        if not wait:
            return self._state is STATE_CLOSED
        return self._wait_closed(timeout)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """The Executor method: ``close()`` with ``cancel_futures``, else drain first.

        Without ``cancel_futures`` the scheduler drains: it takes no new work
        and stops recurring series, but runs every version already pending,
        when due, before it closes (ThreadPoolExecutor's and Java's default).
        Called from a pool thread (inside a task or a callback) it does not
        wait, whatever ``wait`` says: the drain may need that very task to
        return (ThreadPoolExecutor raises RuntimeError there instead).
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
        if wait and threading.get_ident() not in self._thread_ids:
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

    def __repr__(self) -> str:
        return (f"<ThreadPoolScheduler {self._state} max_workers={self._max_workers}"
                f" pending={len(self._core)} running={self._claimed}>")

    def _new_future(self, task_id: Hashable, fn: Callable[..., Any], args: Iterable[Any],
                    kwargs: Mapping[str, Any] | None, timeout: float | None) -> TaskFuture:
        """Check args, kwargs and timeout and build the version's Future."""
        fut = TaskFuture(self, fn)
        fut._task_id = task_id
        if args.__class__ is tuple and kwargs is None and timeout is None:
            if args:  # the common call: nothing more to check
                fut._args = args
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


def _check_seconds(value: Any, name: str, *, allow_zero: bool) -> float:
    seconds = check_time(value, name)
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return seconds
