"""Cooperative cancellation: the token a running task polls, waits on or hooks.

Invariant: a token's ``reason`` goes once from None to a non-empty string
("cancelled", "timeout" or "closed") and never changes again. Each callback
runs exactly once, outside the token's lock: in the thread that cancels, or at
once in the thread that adds it to a token already cancelled. A callback that
raises is logged (logger "pysched") and the others still run.

A scheduler's tokens share the scheduler's lock and clock, so ``wait`` runs on
the injected clock (a FakeClock drives it in tests) and the scheduler sets a
token in the same critical section that records the request. Its clock is
read through the scheduler's ``Clocks`` (``pysched.pool.clocks``), which
checks each reading. A token made by hand, ``CancelToken()``, has a lock of
its own and the monotonic clock.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, Protocol

from .._validate import check_callable, check_time
from .clocks import Waiter, waiter_for

LOGGER = logging.getLogger("pysched")

CANCELLED = "cancelled"
TIMEOUT = "timeout"
CLOSED = "closed"

__all__ = ["CancelToken", "TaskCancelled", "TaskTimeout", "current_token"]


class TaskCancelled(Exception):
    """Raised by ``CancelToken.raise_if_cancelled()`` once the token is set.

    ``reason`` says why: "cancelled" (``cancel(task_id)``), "timeout" or
    "closed" (``close(cancel_running=True)``). Raised out of a task's function,
    it fails that task's Future like any other exception.
    """

    def __init__(self, reason: str = CANCELLED, message: str | None = None) -> None:
        super().__init__(message or f"task {reason}")
        self.reason = reason


class TaskTimeout(TaskCancelled, TimeoutError):
    """A task ran past its timeout.

    It is what ``raise_if_cancelled()`` raises once the timeout has set the
    token, and the exception of that task's Future whatever the function did
    afterwards (an exception it raised is kept as ``__cause__``).
    """

    def __init__(self, message: str | None = None) -> None:
        super().__init__(TIMEOUT, message)


class CancelToken:
    """A cancellation request that a running task can see and react to.

    ``is_cancelled`` and ``reason`` are O(1) reads without a lock; ``wait``
    blocks until the token is set or ``timeout`` seconds of its clock pass.

    >>> token = CancelToken()
    >>> token.is_cancelled, token.wait(0)
    (False, False)
    >>> token.add_callback(lambda: print("stop"))
    >>> token.cancel()
    stop
    >>> token.is_cancelled, token.reason, token.wait()
    (True, 'cancelled', True)
    """

    __slots__ = ("_lock", "_clock", "_wait", "_reason", "_callbacks", "_condition")

    def __init__(self) -> None:
        self._bind(threading.Lock(), time.monotonic, waiter_for(time.monotonic), None)

    def _bind(self, lock: threading.Lock, clock: Callable[[], float], wait: Waiter,
              reason: str | None) -> None:
        self._lock = lock
        self._clock = clock
        self._wait = wait
        self._reason = reason
        self._callbacks: list[Callable[[], Any]] | None = None
        self._condition: threading.Condition | None = None  # made by the first wait()

    @property
    def is_cancelled(self) -> bool:
        """True once cancellation was requested."""
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """None, or why the token was set: "cancelled", "timeout" or "closed"."""
        return self._reason

    def raise_if_cancelled(self) -> None:
        """Raise TaskCancelled (TaskTimeout for a timeout) if the token is set."""
        reason = self._reason
        if reason is not None:
            raise TaskTimeout() if reason == TIMEOUT else TaskCancelled(reason)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the token is set or ``timeout`` seconds pass; return ``is_cancelled``.

        The seconds are the clock's: a scheduler's token under a FakeClock
        waits for the test to advance it.
        """
        if self._reason is not None:
            return True
        now = self._clock()
        deadline = None
        if timeout is not None:
            deadline = now + check_time(timeout, "timeout")
        while True:
            with self._lock:
                if self._reason is not None:
                    return True
                if deadline is not None and now >= deadline:
                    return False
                if self._condition is None:
                    self._condition = threading.Condition(self._lock)
                self._wait(self._condition, deadline, now)
                if self._reason is not None:
                    return True
            now = self._clock()  # outside the lock: the clock is the caller's code

    def add_callback(self, fn: Callable[[], Any]) -> None:
        """Call ``fn()`` once when the token is set; at once if it already is."""
        check_callable(fn, "fn")
        with self._lock:
            if self._reason is None:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(fn)
                return
        run_callbacks([fn])

    def cancel(self, reason: str = CANCELLED) -> bool:
        """Set the token; return False if it was already set. Runs the callbacks."""
        if not isinstance(reason, str) or not reason:
            raise TypeError("reason must be a non-empty str")
        with self._lock:
            callbacks = self._set_locked(reason)
            if callbacks is None:
                return False
        run_callbacks(callbacks)
        return True

    def _set_locked(self, reason: str) -> list[Callable[[], Any]] | None:
        """Set under the lock; return the callbacks to run after releasing it (None: was set)."""
        if self._reason is not None:
            return None
        self._reason = reason
        if self._condition is not None:
            self._condition.notify_all()
        callbacks, self._callbacks = self._callbacks or [], None
        return callbacks

    def __repr__(self) -> str:
        return f"<CancelToken {self._reason or 'not cancelled'}>"


def scheduler_token(lock: threading.Lock, clock: Callable[[], float], wait: Waiter,
                    reason: str | None) -> CancelToken:
    """A token on a scheduler's lock and clock (a checked reader: ``Clocks.now``), set
    already if ``reason``; the caller holds ``lock``."""
    token = CancelToken.__new__(CancelToken)
    token._bind(lock, clock, wait, reason)
    return token


def set_under_lock(token: CancelToken, reason: str) -> list[Callable[[], Any]] | None:
    """Set a scheduler's token with its lock held; the callbacks to run once it is
    released (None: it was set already)."""
    return token._set_locked(reason)


def run_callbacks(callbacks: list[Callable[[], Any]]) -> None:
    """Call each callback once: one that raises is logged, and the others still run."""
    call_each([partial(_logged, fn) for fn in callbacks])


def _logged(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:
        LOGGER.exception("pysched: exception in cancel callback %r", fn)


def call_each(calls: Iterable[Callable[[], Any]]) -> None:
    """Make every call, even when one raises; then raise the first exception, if any.

    For user code run on behalf of others (callbacks no one else holds any
    more): a BaseException from one (KeyboardInterrupt, say) stops none of
    the others, and the caller still sees it.
    """
    raised: BaseException | None = None
    for call in calls:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - raised below, after the others
            if raised is None:
                raised = exc
    if raised is not None:
        try:
            raise raised
        finally:
            raised = None  # no cycle through the traceback


class RunningTask(Protocol):
    """What current_token() needs of the task running in a context (a pool's PoolVersion)."""

    def current_token(self) -> CancelToken: ...


# The task running in this context: set by the worker around fn.
current_run: contextvars.ContextVar[RunningTask] = contextvars.ContextVar("pysched_current_run")


def current_token() -> CancelToken:
    """The cancel token of the pysched task running in this context.

    Call it from inside a task's function (or code it calls in the same
    context). RuntimeError anywhere else. O(1) after the first call of a run.
    """
    run = current_run.get(None)
    if run is None:
        raise RuntimeError("current_token() called outside a pysched task")
    return run.current_token()
