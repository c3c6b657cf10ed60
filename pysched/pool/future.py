"""TaskFuture: the concurrent.futures.Future of one scheduled task version.

Why it does not call ``Future.__init__``: a stock Future builds a
``threading.Condition`` (with five bound methods and a deque) and two lists,
about ten objects the garbage collector must track, and each of
``set_running_or_notify_cancel()`` and ``set_result()`` goes through that
Condition's Python-level methods. Measured with ``time.thread_time`` while
50,000 Futures are kept alive (as a caller collecting results does):
``Future()`` costs about 5.5 us, a Future without them about 0.5 us, and
that difference alone decided the throughput against ThreadPoolExecutor.
So a TaskFuture holds a C ``RLock`` (untracked) as its ``_condition`` and
builds the Condition and the two lists only when something needs them: a
thread that waits in ``result()``/``exception()``, a waiter of
``concurrent.futures.wait()``/``as_completed()``, or a done callback.
``wait()`` and ``as_completed()`` only lock ``_condition`` (with ``with``),
which the RLock does without making 50,000 Conditions for 50,000 Futures;
the methods that wait or notify (``result``, ``exception``, ``set_result``,
``set_exception``, ``cancel``) are this class's, on the Condition it makes on
that same lock. The other attribute names are those of CPython's Future
(``_state``, ``_result``, ``_exception``, ``_waiters``, ``_done_callbacks``),
the same from 3.2 to 3.14, so every inherited method and the module
functions work on it; a test pins those names.

Invariants: every state change happens in this class's methods, under
``_lock`` (the Condition, once made, is built on it), exactly as in a stock
Future; but for PENDING -> RUNNING, which its pool makes under the pool's
own lock (see ``set_running_or_notify_cancel``). The pool moves it with the methods an Executor uses
(``set_running_or_notify_cancel``, ``set_result``, ``set_exception``) and
``notify_cancelled`` for a version ended before it ran. A TaskFuture is
resolved exactly once, by the one party that took its version out of the
pool's book: the worker that started it, or the call that cancelled,
replaced, evicted or closed it, outside the pool's lock (done callbacks run
then).

What a worker needs to run the version (fn, its arguments, its timeout, its
series) is not here but in the book's record of the version
(``pysched.pool.pool_book.PoolVersion``), which points at this Future: a
Future kept after its version ended holds none of it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import CancelledError, Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeout  # not the builtin one on 3.10
from concurrent.futures._base import (
    CANCELLED,
    CANCELLED_AND_NOTIFIED,
    FINISHED,
    PENDING,
    RUNNING,
)
from typing import Any, Protocol

from .._future_fields import SELF, VersionFields

_DONE = frozenset({CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED})
_CANCELLED = frozenset({CANCELLED, CANCELLED_AND_NOTIFIED})
_RLock = threading.RLock

__all__ = ["FutureOwner", "TaskFuture"]


class FutureOwner(Protocol):
    """What a TaskFuture needs of the pool that made it."""

    def cancel_future(self, fut: TaskFuture) -> bool | None:
        """Future.cancel(): end ``fut``'s version unless it started.

        True if it ended now, False if it started; None if the pool no longer
        holds it (the Future's own state decides).
        """


class TaskFuture(Future, VersionFields):  # type: ignore[type-arg]
    """The Future of one version of a scheduled task, or of a recurring series.

    It behaves as a ``concurrent.futures.Future``. ``cancel()`` on a version
    that has not started removes it from the scheduler, so it never runs; on a
    running version it returns False and changes nothing (use
    ``ThreadPoolScheduler.cancel(task_id)`` to ask running code to stop).

    A recurring series' Future stays pending while runs come and go: it is
    cancelled when the series is cancelled, replaced or closed, and fails
    with the exception of a run that stops the series.
    """

    # Future's own fields, as class defaults until a state change sets them.
    _state = PENDING
    _result: Any = None
    _exception: BaseException | None = None
    _cond: threading.Condition | None = None  # on _lock, made by the first thread to wait
    _waiter_list: list[Any] | None = None  # concurrent.futures.wait() waiters
    _callback_list: list[Callable[[Future[Any]], Any]] | None = None

    _task_id: Hashable = SELF  # submit()'s: the Future is its own task id, at version 1
    _version = 1

    def __init__(self, owner: FutureOwner, task_id: Hashable = SELF, version: int = 1) -> None:
        """The Future of ``version`` of ``task_id`` (SELF: the Future is its own id), made by
        the pool ``owner`` once its core accepted the version."""
        # Future.__init__ is not called: see the module docstring.
        self._lock = self._condition = _RLock()  # type: ignore[assignment]
        self._owner = owner
        if task_id is not SELF:
            self._task_id = task_id
            self._version = version

    # -- Future's fields, made on first use ----------------------------------------

    @property
    def _waiters(self) -> list[Any]:  # type: ignore[override]
        # Every reader (Future's methods, wait(), as_completed()) holds the lock already.
        waiters = self._waiter_list
        if waiters is None:
            waiters = self._waiter_list = []
        return waiters

    @property
    def _done_callbacks(self) -> list[Callable[[Future[Any]], Any]]:
        with self._lock:
            if self._callback_list is None:
                self._callback_list = []
            return self._callback_list

    # -- reads that need no lock: one attribute, and a final state never changes ------

    def done(self) -> bool:
        """True once finished or cancelled. O(1), no lock."""
        return self._state in _DONE

    def cancelled(self) -> bool:
        """True if cancelled. O(1), no lock."""
        return self._state in _CANCELLED

    def running(self) -> bool:
        """True while its version runs (claimed by a worker). O(1), no lock."""
        return self._state == RUNNING

    def result(self, timeout: float | None = None) -> Any:
        """As ``Future.result``; a finished Future answers without taking a lock."""
        if self._state == FINISHED and self._exception is None:
            return self._result  # set before _state, under the lock
        try:
            with self._lock:
                self._wait_done(timeout)
                if self._exception is not None:
                    raise self._exception
                return self._result
        finally:
            self = None  # type: ignore[assignment]  # no cycle through a raised traceback

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """As ``Future.exception``; a finished Future answers without taking a lock."""
        if self._state == FINISHED:
            return self._exception
        with self._lock:
            self._wait_done(timeout)
            return self._exception

    def _wait_done(self, timeout: float | None) -> None:
        """Under ``_lock``: wait (once, as Future does) until done; raise unless finished."""
        if self._state not in _DONE:
            cond = self._cond
            if cond is None:
                cond = self._cond = threading.Condition(self._lock)
            cond.wait(timeout)
        if self._state in _CANCELLED:
            raise CancelledError()
        if self._state != FINISHED:
            raise FutureTimeout()

    def set_result(self, result: Any) -> None:
        """As ``Future.set_result``: for Futures made by hand (the pool resolves its own)."""
        if not self.settle(result, None):
            raise InvalidStateError(f"{self._state}: {self!r}")

    def set_exception(self, exception: BaseException | None) -> None:
        """As ``Future.set_exception``: for Futures made by hand."""
        if not self.settle(None, exception):
            raise InvalidStateError(f"{self._state}: {self!r}")

    def cancel(self) -> bool:
        """Cancel this version if it has not started; True if it is now cancelled.

        A pending version is taken out of the scheduler and can never start. A
        version claimed by a worker but not started yet is cancelled too: the
        worker sees it and does not run it. O(1).
        """
        done = self._owner.cancel_future(self)
        if done is None:  # no longer its pool's: ended by someone else, or never added
            return self._cancel_reason is not None or self._cancel_unowned()
        return done

    # -- for the pool that made it, as set_running_or_notify_cancel is for an Executor ----

    def set_running_or_notify_cancel(self) -> bool:
        """As ``Future``'s: the version starts (True), unless the Future was cancelled, which
        is then notified to waiters (False).

        PENDING -> RUNNING takes no lock of the Future's: the pool calls this
        under its own lock, which every other change of its pending Future
        waits for (``cancel()`` asks the pool first), and nobody is told of
        RUNNING. That lock measured 2,000 of 47,000 instructions of a task.
        """
        if self._state == PENDING:
            self._state = RUNNING
            return True
        with self._lock:
            if self._state != CANCELLED:
                raise RuntimeError(f"Future in unexpected state: {self._state}")
            self._notify_cancelled_locked()
        return False

    def notify_cancelled(self, reason: str) -> None:
        """For the pool: the version was ended before it ran, for ``reason`` (its
        ``cancel_reason``); the Future is cancelled and everyone waiting is told."""
        with self._lock:
            state = self._state
            if state != PENDING and state != CANCELLED:
                return
            self._cancel_reason = reason
            self._notify_cancelled_locked()
        # Future.cancel() of a CANCELLED Future ran its callbacks already.
        if state == PENDING and self._callback_list:
            self._invoke_callbacks()  # type: ignore[attr-defined]

    def has_done_callbacks(self) -> bool:
        """For the pool: whether resolving it runs done callbacks (user code that may be slow)."""
        return bool(self._callback_list)

    def settle(self, result: Any, exception: BaseException | None) -> bool:
        """For the pool: ``set_exception(exception)`` if it is not None, else
        ``set_result(result)``, in one call; False (and nothing changed) if it was done."""
        with self._lock:
            if self._state in _DONE:
                return False
            self._result = result
            self._exception = exception
            self._state = FINISHED
            for waiter in self._waiter_list or ():
                if exception is None:
                    waiter.add_result(self)
                else:
                    waiter.add_exception(self)
            if self._cond is not None:
                self._cond.notify_all()
        if self._callback_list:
            self._invoke_callbacks()  # type: ignore[attr-defined]
        return True

    # -- its own transitions -------------------------------------------------------------

    def _notify_cancelled_locked(self) -> None:
        """Under ``_lock``: -> CANCELLED_AND_NOTIFIED, and every waiter told."""
        self._state = CANCELLED_AND_NOTIFIED
        for waiter in self._waiter_list or ():
            waiter.add_cancelled(self)
        if self._cond is not None:
            self._cond.notify_all()

    def _cancel_unowned(self) -> bool:
        """Future.cancel() itself, for a Future its pool no longer holds."""
        with self._lock:
            if self._state == RUNNING or self._state == FINISHED:
                return False
            if self._state in _CANCELLED:
                return True
            self._state = CANCELLED
            if self._cond is not None:
                self._cond.notify_all()
        if self._callback_list:
            self._invoke_callbacks()  # type: ignore[attr-defined]
        return True
