"""The threads of ThreadPoolScheduler: the workers and the dispatcher.

A worker finishes its task and claims the next due one in one critical
section, so a busy pool moves from task to task without waking anyone. With
nothing due it idles on ``_work_ready`` until some thread hands it a task it
claimed for it (``_handoff``) or the scheduler closes. The dispatcher only
waits for time: the head's run_at while some worker is idle, and the
deadlines of running tasks with a timeout. Neither runs user code under the
lock, and each reads the clock before it takes the lock.

A clock that raises or returns a non-number in a pool thread is logged and
closes the scheduler (the thread goes on with its last good reading), so
nothing waits forever.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ._cancel_token import TIMEOUT, _current_run, _run_callbacks
from ._close_state import CLOSED as STATE_CLOSED
from ._close_state import CLOSING, DRAINING, OPEN
from ._pool_book import _INF, PoolBook
from ._task_future import TaskFuture
from ._validate import check_time

LOGGER = logging.getLogger("pysched")

_LATE_BATCH = 256  # lateness samples a worker buffers before feeding the reservoir

__all__ = ["PoolThreads"]


class PoolThreads(PoolBook):
    """The worker and dispatcher loops of a ThreadPoolScheduler."""

    def _start_threads(self, prefix: str) -> None:
        self._threads: list[threading.Thread] = []
        self._thread_ids: set[int] = set()
        self._workers_alive = self._max_workers
        self._alive = self._max_workers + 1  # workers and the dispatcher
        for n in range(self._max_workers):
            self._start(self._work_loop, f"{prefix}-worker-{n}")
        self._start(self._dispatch_loop, f"{prefix}-dispatcher")

    def _start(self, loop: Callable[[], None], name: str) -> None:
        # Daemon threads: an unclosed scheduler does not keep the interpreter alive.
        thread = threading.Thread(target=self._run_thread, args=(loop,), name=name, daemon=True)
        self._threads.append(thread)
        thread.start()
        self._thread_ids.add(thread.ident)  # type: ignore[arg-type]

    def _run_thread(self, loop: Callable[[], None]) -> None:
        try:
            loop()
        except BaseException:  # a bug in pysched: say so, and do not leave close() waiting
            LOGGER.exception("pysched: %s failed", threading.current_thread().name)
            raise
        finally:
            with self._lock:
                self._thread_exit_locked(worker=loop == self._work_loop)

    # -- the worker ----------------------------------------------------------------

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
        work: Any  # a claimed (task, future), or the core's hint: float or None
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
            task, fut = work
            work = None
            # Run it, outside the lock.
            # False: cancelled after the claim. A series' Future stays pending while
            # it runs; a stopped series runs no more.
            series = fut._series
            started = fut._try_start() if series is None else not series.stopped
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
                result = (fut._fn(*fut._args, **kwargs) if kwargs  # type: ignore[misc]
                          else fut._fn(*fut._args))  # type: ignore[misc]
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
                if work is not None and now + work < self._dispatch_at:
                    self._dispatch_at = -_INF  # it must wake when the head comes due
                    self._dispatch_cv.notify()
                self._work_ready.wait()
                if self._handoff:  # the notifier claimed it for us (or for any free worker)
                    return self._handoff.popleft()
                if self._state is CLOSING or self._state is STATE_CLOSED:
                    return None
            now = self._read_clock(now)  # notified without a task: look at the core again

    # -- the dispatcher ----------------------------------------------------------

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

    # -- exits -------------------------------------------------------------------

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
        self._begin_close(cancel_running=False)  # pool threads read the clock outside the lock
        return last
