"""ThreadPoolScheduler: a pool of worker threads running the core Scheduler's tasks.

The public class only checks arguments and builds Futures; it is joined to
its parts by composition: a ``PoolBook`` (``pysched.pool.pool_book``: versions,
state, counters) driven by a ``PoolThreads`` (``pysched.pool.threads``:
the lock, the workers, the dispatcher, and the lock order and which thread
runs which user code). The Futures are ``pysched.pool.future``'s, the tokens
``pysched.pool.token``'s. The pool holds the scheduler only weakly, so a
scheduler nobody references drains and its threads exit.

Close states and their transitions are listed in ``pysched._close_state``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from concurrent.futures import Executor
from typing import Any

from .. import _impl, events
from .._validate import (
    check_callable,
    check_capacity,
    check_choice,
    check_hashable,
    check_priority,
    check_time,
)
from ..calendar import Cron, Every, Series, SeriesHandle
from ..calendar.events import KINDS as SERIES_KINDS
from ..jobs import DEFAULT_HISTORY, Job, JobPage
from .backpressure import EVICT_LOWEST, OVERFLOWS, PendingBound, SchedulerFull
from .calendar_series import PoolCalendar, SeriesVersion, pool_series_handle
from .clocks import Clocks, waiter_for
from .future import TaskFuture
from .jobs import PENDING, RUNNING, Held, build, check_state, describe_one
from .pool_book import PoolBook, PoolVersion
from .recurring import (
    FIXED_DELAY,
    FIXED_RATE,
    MODES,
    ON_ERRORS,
    OVERLAPS,
    SKIP,
    STOP,
    every_catch_up,
)
from .threads import PoolThreads
from .token import CancelToken, TaskCancelled, TaskTimeout, current_token

__all__ = ["MAX_WORKERS", "CancelToken", "SchedulerFull", "TaskCancelled", "TaskFuture",
           "TaskTimeout", "ThreadPoolScheduler", "check_worker_count", "current_token"]

# The most worker threads a pool may have, as Java's ForkJoinPool and .NET's thread
# pool bound theirs: more is refused up front, by name, rather than failing later
# at whatever count the system stops giving threads.
MAX_WORKERS = 32767


class ThreadPoolScheduler(Executor):
    """Run scheduled tasks on a pool of threads, by time, priority and task id.

    ``schedule(task_id, run_at, priority, fn)`` keeps the core's contract:
    earliest ``run_at`` first, then higher priority, then first come; one
    pending version per task id (scheduling an id again replaces it, and its
    Future is cancelled); a newer version waits for a running one. Each call
    returns the ``concurrent.futures.Future`` of its version. At most
    ``max_workers`` tasks run at once, on as many threads, each started when
    pending work outnumbers the workers free to take it (as
    ThreadPoolExecutor starts them): none before the first schedule. A worker
    that the system cannot start is logged and the pool goes on with those it
    has; if not even the first can start, that schedule raises RuntimeError
    and changes nothing. ``max_workers`` is at most ``MAX_WORKERS`` (32767).
    It is a ``concurrent.futures.Executor``
    (``submit``, ``map``, ``shutdown``) and a context manager, which on exit
    waits for the work already submitted, as ThreadPoolExecutor does.

    All times are seconds on ``clock`` (monotonic, ``time.monotonic`` by
    default; see ``pysched.pool.clocks`` for the waiting hook that lets
    ``pysched.testing.FakeClock`` drive the scheduler). A running task reaches
    its cancel token with ``pysched.current_token()``.

    Both clocks are read through one ``pysched.pool.clocks.Clocks``, which
    checks each reading: a finite real number, and on ``clock`` never behind
    the latest one (a reading set back is taken as the latest: time stands
    still until the clock catches up). A clock that raises or gives anything
    else is broken, and the scheduler closes, as ``close(cancel_running=False)``
    does, logged once on the "pysched" logger: running tasks finish, pending
    versions and series are cancelled (reason "closed"). The call that read
    it (``schedule``, ``submit``, a token's ``wait``...) raises the clock's
    error, or TypeError/ValueError naming ``clock()`` or ``wall_clock()``; a
    pool thread goes on with the latest good reading while the pool closes.

    Options: ``max_pending`` and ``overflow`` ("reject" or "evict_lowest")
    bound pending versions (``pysched.pool.backpressure``); ``aging`` (seconds of
    waiting worth one priority level) turns on aging (``pysched.pool.aging``);
    ``lateness_samples`` sizes the lateness reservoir of ``stats()``;
    ``history`` is how many runs of its recurring series, all together, the
    pool keeps for ``describe()`` (default ``pysched.jobs.DEFAULT_HISTORY``, 1000);
    ``wall_clock`` (POSIX seconds, ``time.time``) is the clock calendar series
    of ``schedule_recurring`` fire on.
    ``_core_factory`` picks the core class (tests run both implementations).

    >>> with ThreadPoolScheduler(2) as pool:
    ...     pool.schedule_in("greet", 0.0, 0, str.upper, ("hi",)).result()
    'HI'
    """

    def __init__(self, max_workers: int | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time,
                 thread_name_prefix: str = "pysched",
                 max_pending: int | None = None, overflow: str = "reject",
                 aging: float | None = None, lateness_samples: int = 4096,
                 history: int = DEFAULT_HISTORY,
                 _core_factory: Callable[..., Any] | None = None,
                 _queue_factory: Callable[[int], Any] | None = None) -> None:
        if max_workers is None:  # ThreadPoolExecutor's default
            max_workers = min(32, (_cpu_count() or 1) + 4)
        if isinstance(max_workers, int) and max_workers < 1:  # ThreadPoolExecutor's words
            raise ValueError(f"max_workers must be greater than 0, got {max_workers}")
        max_workers = check_worker_count(max_workers)
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
        self._clocks = clocks = Clocks(wall_clock)  # every reading of both clocks goes here
        clocks.bind(clock)
        epoch = clocks.latest
        # The core never reads its clock here: the pool gives it every time it uses.
        core = (_core_factory or _impl.Scheduler)(clock=clock)
        self._max_workers = max_workers
        self._clock = clock
        self._core = core
        self._calendar = PoolCalendar(clocks, history)

        def book(wakeups: PoolThreads) -> PoolBook:
            return PoolBook(core, max_workers, epoch, bound, aging, lateness_samples, wakeups)

        self._pool = pool = PoolThreads(book, clocks, waiter_for(clock), thread_name_prefix)
        self._book = pool.book
        self._lock = pool.lock
        self._threads = pool.threads
        pool.watch_owner(self)

    # -- public API -----------------------------------------------------------

    @property
    def max_workers(self) -> int:
        """The most worker threads, and so the most tasks that run at once."""
        return self._max_workers

    @property
    def clock(self) -> Callable[[], float]:
        """The clock all times are read on."""
        return self._clock

    @property
    def state(self) -> str:
        """The life-cycle state: open, draining, closing or closed (``pysched._close_state``)."""
        return self._book.state

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
        run = self._new_version(fn, args, kwargs, timeout)
        return self._pool.add(task_id, run_at, priority, run, self._clocks.now())

    def schedule_in(self, task_id: Hashable, delay: float, priority: int, fn: Callable[..., Any],
                    args: Iterable[Any] = (), kwargs: Mapping[str, Any] | None = None, *,
                    timeout: float | None = None) -> TaskFuture:
        """``schedule()`` at ``delay`` (>= 0) seconds from now on the clock."""
        check_hashable(task_id, "task_id")
        delay = _check_seconds(delay, "delay", allow_zero=True)
        run = self._new_version(fn, args, kwargs, timeout)
        now = self._clocks.now()
        return self._pool.add(task_id, _from_now(now, delay, "delay"), priority, run, now)

    def schedule_every(self, task_id: Hashable, interval: float, priority: int,
                       fn: Callable[..., Any], args: Iterable[Any] = (),
                       kwargs: Mapping[str, Any] | None = None, *,
                       start_at: float | None = None, mode: str = FIXED_RATE,
                       overlap: str = SKIP, on_error: str = STOP,
                       timeout: float | None = None) -> TaskFuture:
        """Run ``fn`` every ``interval`` seconds as a recurring series of ``task_id``.

        ``schedule_recurring`` with an ``Every`` trigger, no misfire grace, and
        the series' Future returned. The first run is due at ``start_at``
        (default: one interval from now). ``mode`` is "fixed_rate" (run k due
        at start_at + k * interval) or "fixed_delay" (due interval after the
        previous run returned). ``overlap`` ("skip", "coalesce" or "queue")
        says what becomes of runs that come due while one is still running;
        runs never overlap (see ``pysched.pool.recurring``). ``on_error``:
        "stop" (the default, as Java's executors do) ends the series when a run
        raises or times out, and its Future fails with that exception;
        "continue" counts the failure and goes on. ``cancel(task_id)`` or
        cancelling the returned Future stops the series. That Future never
        gets a result: it is cancelled or fails.
        """
        check_hashable(task_id, "task_id")
        interval = _check_seconds(interval, "interval", allow_zero=False)
        check_choice(mode, "mode", MODES)
        check_choice(overlap, "overlap", OVERLAPS)
        check_choice(on_error, "on_error", ON_ERRORS)
        if start_at is not None:
            start_at = check_time(start_at, "start_at")
        else:  # the first run is due one interval from now
            _from_now(self._clocks.now(), interval, "interval")
        trigger = Every(interval, start_at=start_at, fixed_delay=mode == FIXED_DELAY)
        series = self.schedule_recurring(task_id, trigger, priority, fn, args, kwargs,
                                         misfire_grace=None, overlap=overlap,
                                         on_error=on_error, max_catch_up=every_catch_up(overlap),
                                         timeout=timeout).future
        assert isinstance(series, TaskFuture)  # the pool's handles carry the series' Future
        return series

    def schedule_recurring(self, task_id: Hashable, trigger: Cron | Every, priority: int,
                           fn: Callable[..., Any], args: Iterable[Any] = (),
                           kwargs: Mapping[str, Any] | None = None, *,
                           misfire_grace: float | None = 1.0, catch_up: str = "latest",
                           overlap: str = "skip", on_error: str = "continue",
                           max_catch_up: int = 100,
                           timeout: float | None = None) -> SeriesHandle:
        """Run ``fn`` at each fire time of ``trigger`` (a ``Cron`` or an ``Every``).

        A calendar trigger fires on the wall clock (``wall_clock``), never
        before its instant; an interval on the pool's clock. ``misfire_grace``,
        ``catch_up`` ("none", "latest", "all", at most ``max_catch_up``),
        ``overlap`` ("skip", "coalesce", "queue") and ``on_error`` ("continue",
        "stop") are ``pysched.calendar.Series``'s; every skipped, coalesced or
        late fire time is an event for ``add_listener`` and counted in
        ``stats()["series_events"]``. The same ``task_id`` again replaces the
        whole series. Returns a handle with ``next_fire_times(n)``, ``pause()``,
        ``resume()``, ``cancel()`` and the series' ``future``.
        """
        check_hashable(task_id, "task_id")
        priority = check_priority(priority, "priority")
        if not isinstance(trigger, (Cron, Every)):
            raise TypeError(f"trigger must be a Cron or an Every, not {type(trigger).__name__}")
        check_callable(fn, "fn")
        calendar = self._calendar
        now = calendar.read()
        series = Series(task_id, trigger, now, misfire_grace=misfire_grace,
                        catch_up=catch_up, max_catch_up=max_catch_up, overlap=overlap,
                        on_error=on_error)
        call = self._new_version(fn, args, kwargs, timeout)
        run = SeriesVersion(self._pool, series, calendar, call, priority)
        # its Future ends the series as it resolves: cancelled, replaced, closed, or failed
        fut = self._pool.add(task_id, run.first_wake(now), priority, run, now.mono)
        return pool_series_handle(task_id, fut, run)

    def add_listener(self, fn: Callable[[Any], object],
                     kinds: Iterable[str] | None = None) -> None:
        """Call ``fn(event)`` for each event of ``kinds`` (None: every kind) from now on.

        Task events are ``pysched.events.TaskEvent``s (``TASK_KINDS``); the
        recurring series' are ``pysched.calendar.Event``s (skipped, coalesced,
        late, failed, stopped, clock_jump). ``fn`` runs outside the pool's
        lock, on the thread where the event happened; if it raises, that is
        logged on "pysched.pool" (series events: "pysched.calendar") and the
        other listeners still run. Unknown kinds: ValueError, nothing added.
        """
        events.add_listener(fn, kinds, self._pool.events, self._calendar.hub, SERIES_KINDS)

    def jobs(self, state: str | None = None) -> JobPage:
        """Every pending and running task version and every recurring series, as snapshots
        (``pysched.jobs``): series first, then tasks in due order.

        ``state``: only jobs in it: "pending" or "running" (tasks; a series with a run in
        progress counts as running), "active" or "paused" (series); None for all.
        ValueError for another state. O(n log n); the pool's lock is held only to
        copy its books, each series' lock only to read it.
        """
        check_state(state)
        now = self._calendar.read()
        return build(self._held(_EVERY), now, self._calendar.ledger, self._calendar.lock, state)

    def describe(self, task_id: Hashable) -> Job | None:
        """The snapshot of ``task_id``: its series (``SeriesInfo``: next fire times, last
        runs, counters, pause note) or its newest version (``TaskInfo``); None when the
        pool holds nothing of it (a version that ended is its Future's). O(1) plus
        O(history) for a series' last runs."""
        check_hashable(task_id, "task_id")
        now = self._calendar.read()
        calendar = self._calendar
        return describe_one(self._held(task_id), now, calendar.ledger, calendar.lock)

    def _held(self, task_id: Hashable) -> list[Held]:
        """The versions and series the book holds, of ``task_id`` (``_EVERY``: every id)."""
        book = self._book
        with self._lock:
            if task_id is _EVERY:
                pairs = [(r, PENDING) for r in book.pending.values()]
                pairs += [(r, RUNNING) for r in book.running.values()]
            else:
                pairs = [(r, state) for r, state in ((book.pending.get(task_id), PENDING),
                                                     (book.running.get(task_id), RUNNING))
                         if r is not None]
            return [_held(run, state) for run, state in pairs]

    def remove_listener(self, fn: Callable[[Any], object]) -> None:
        """Stop calling ``fn``; KeyError if it was not added."""
        events.remove_listener(fn, self._pool.events, self._calendar.hub)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> TaskFuture:
        """Run ``fn(*args, **kwargs)`` now, at priority 0; the id is the returned Future.

        The Executor method: SchedulerClosed once the scheduler is not open.
        O(log n).
        """
        pool = self._pool
        fut = TaskFuture(pool)  # its own task id, version 1
        run = PoolVersion(pool, fn, args, kwargs)
        pool.submit(fut, run, self._clocks.now())
        return fut

    def cancel(self, task_id: Hashable) -> bool:
        """Cancel the pending version of ``task_id`` and set its running version's token.

        The pending version never starts (its Future is cancelled); a running
        one is only asked to stop, through its token, and is reported done
        when its function returns. A recurring series stops. Returns False
        when nothing of ``task_id`` is pending or running. O(1) amortised.
        """
        check_hashable(task_id, "task_id")
        return self._pool.cancel(task_id)

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
        self._pool.close(cancel_running)
        if not wait:
            return self._book.state == "closed"
        return self._pool.wait_closed(timeout)

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
        self._pool.drain()
        if wait and not self._pool.is_pool_thread():
            self._pool.wait_closed(None)

    def stats(self) -> dict[str, Any]:
        """Counts, sizes and start lateness (start minus run_at) percentiles.

        ``running`` counts claimed versions (at most max_workers, which
        ``peak_running`` shows); the lateness of a run is recorded when it
        finishes. See ``pysched.pool.stats`` for what each counter means.
        O(samples log samples) for the percentiles.
        """
        book = self._book
        with self._lock:
            result: dict[str, Any] = {
                "state": book.state,
                "pending": len(book.core),
                "running": book.claimed,
                "peak_running": book.peak,
                "max_workers": self._max_workers,
            }
            result.update(book.counts.as_dict())
            result["lateness"] = book.lateness.summary()
        result["series_events"] = self._calendar.hub.stats()
        return result

    def __repr__(self) -> str:
        return (f"<ThreadPoolScheduler {self._book.state} max_workers={self._max_workers}"
                f" pending={len(self._core)} running={self._book.claimed}>")

    def _new_version(self, fn: Callable[..., Any], args: Iterable[Any],
                     kwargs: Mapping[str, Any] | None, timeout: float | None) -> PoolVersion:
        """Check args, kwargs and timeout and make the version's record."""
        if args.__class__ is tuple and kwargs is None and timeout is None:
            return PoolVersion(self._pool, fn, args)  # the common call
        if isinstance(args, (str, bytes)) or not isinstance(args, Iterable):
            raise TypeError(f"args must be an iterable of arguments, not {type(args).__name__}")
        if kwargs is not None and not isinstance(kwargs, Mapping):
            raise TypeError(f"kwargs must be a mapping, not {type(kwargs).__name__}")
        if timeout is not None:
            timeout = _check_seconds(timeout, "timeout", allow_zero=False)
        return PoolVersion(self._pool, fn, tuple(args), dict(kwargs) if kwargs else None,
                           timeout)


_EVERY = object()  # _held()'s "every task id"


def _held(run: PoolVersion, state: str) -> Held:
    """One record of the book as ``jobs()`` lists it; under the pool's lock."""
    future = run.future
    version = None if future is None else future.version
    if isinstance(run, SeriesVersion):
        return Held(run.task_id, state, run.run_at, run.priority, version, run.decisions)
    return Held(run.task_id, state, run.run_at, run.priority, version)


def check_worker_count(value: Any, name: str = "max_workers") -> int:
    """``value`` as an int from 0 to ``MAX_WORKERS``, or an exception naming ``name``."""
    count = check_capacity(value, name)
    if count > MAX_WORKERS:
        raise ValueError(f"{name} must be at most {MAX_WORKERS} (threads), got {count}")
    return count


def _check_seconds(value: Any, name: str, *, allow_zero: bool) -> float:
    seconds = check_time(value, name)
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return seconds


def _from_now(now: float, seconds: float, name: str) -> float:
    """``now + seconds``, or OverflowError naming ``name`` if that is past the largest float."""
    run_at = now + seconds
    if run_at == math.inf:
        raise OverflowError(f"{name} of {seconds!r}s from now ({now!r}) is past the largest time")
    return run_at


def _cpu_count() -> int | None:
    # 3.13 and later: the CPUs this process may use, as ThreadPoolExecutor counts them
    process_cpu_count = getattr(os, "process_cpu_count", None)
    return process_cpu_count() if process_cpu_count is not None else os.cpu_count()
