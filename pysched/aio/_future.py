"""AsyncTaskFuture: the Future of one version of a scheduled task, on asyncio's Future protocol.

Why not a subclass of ``asyncio.Future``: the C Future calls
``loop.get_debug()`` when made and carries some twenty fields for the
garbage collector to walk; one with the version's fields took 0.36 µs to
make against 0.26 µs for this class (uvloop, CPython 3.11), and a
scheduler makes one per ``schedule()`` and keeps it while the version is
pending. So this class implements asyncio's Future protocol itself, as
``asyncio.isfuture()`` defines it (the ``_asyncio_future_blocking`` marker,
``get_loop()``, ``__await__``) with the methods and semantics of
``asyncio.Future``: await, ``asyncio.wait``, ``gather``, ``wait_for``,
``shield``, ``as_completed``, ``run_until_complete`` and Tasks waiting on it
take it as they take any Future. Done callbacks run through ``loop.call_soon`` in their context, as
asyncio's do; an exception never retrieved is reported to the loop's
exception handler when the Future is collected, as asyncio reports its own.
It is not an instance of ``asyncio.Future``.

What the scheduler needs to run the version (its caller's context, its
core Task, the asyncio Task awaiting its result) is not here but in the
book's record of the version (``pysched.aio._version.AioVersion``), which
points at this Future. Fields every Future sets are slots; those most leave
at their default are class attributes, set on the instance (in its
``__dict__``, made on first use) only when they differ.

Invariants: a Future leaves PENDING once, to FINISHED (``_result``, or
``_exception`` when it failed) or CANCELLED (``_cancel_message``), and only
through its own methods (the scheduler uses ``set_result``,
``set_exception`` and ``notify_cancelled``); its callbacks are scheduled
then, and dropped.
"""

from __future__ import annotations

import contextvars
from asyncio import AbstractEventLoop, CancelledError, InvalidStateError
from collections.abc import Callable, Generator, Hashable
from typing import Any, Generic, Protocol, TypeVar

from .._future_fields import CANCELLED, CLOSED, REPLACED, VersionFields

_T = TypeVar("_T")

_new = object.__new__

# asyncio's own state names (asyncio.base_futures), which repr() shows.
PENDING = "PENDING"
CANCELLED_STATE = "CANCELLED"
FINISHED = "FINISHED"

__all__ = ["CANCELLED", "CLOSED", "FINISHED", "PENDING", "REPLACED", "AsyncTaskFuture",
           "version_future"]


class _Owner(Protocol):
    """What a Future needs of the scheduler that handed it out (its LoopRunner)."""

    def cancel_future(self, fut: AsyncTaskFuture[Any], reason: str, msg: Any = None) -> bool: ...

    def is_calling(self, fut: AsyncTaskFuture[Any]) -> bool: ...


class _UnretrievedLog:
    """Reports a failed Future's exception if it is collected unretrieved.

    A separate object, made only when a Future fails, so the Future itself
    needs no ``__del__`` (which every version would pay for). It holds no
    reference to the Future: no cycle.
    """

    __slots__ = ("loop", "exc", "what")

    def __init__(self, loop: AbstractEventLoop, exc: BaseException, what: str) -> None:
        self.loop = loop
        self.exc: BaseException | None = exc
        self.what = what

    def __del__(self) -> None:
        if self.exc is not None and not self.loop.is_closed():
            self.loop.call_exception_handler({
                "message": f"{self.what} exception was never retrieved",
                "exception": self.exc,
            })


class AsyncTaskFuture(VersionFields, Generic[_T]):
    """The Future of one version of a scheduled task; asyncio takes it as a Future.

    ``cancel(msg=None)`` cancels the version: one that has not started (still
    pending, or claimed while its coroutine has not begun) never starts and
    the Future is cancelled at once; a running one has its asyncio Task
    cancelled and, as with an asyncio Task, the Future resolves when the
    function actually returns or raises. ``msg`` reaches the CancelledError,
    as it does for asyncio's own Futures. ``AsyncTaskFuture(loop=loop)``
    makes one that belongs to no scheduler, which behaves as
    ``loop.create_future()`` does.
    """

    __slots__ = ("_loop", "_state", "_result", "_owner", "_task_id", "_version", "__dict__",
                 "__weakref__")

    _loop: AbstractEventLoop
    _state: str
    _result: Any  # set when it finishes
    _owner: _Owner | None  # the runner of the scheduler that made it; None if made by hand
    _task_id: Hashable
    _version: int
    # Defaults, set on the instance when they differ:
    _exception: BaseException | None = None
    _callbacks: list[tuple[Callable[[Any], object], contextvars.Context]] | None = None
    _cancel_message: Any = None
    _unretrieved: _UnretrievedLog | None = None

    def __init__(self, *, loop: AbstractEventLoop) -> None:
        self._loop = loop
        self._state = PENDING
        self._owner = None
        self._task_id = None
        self._version = 0

    # -- asyncio's Future protocol -------------------------------------------------

    # Its presence marks the Future protocol (asyncio.isfuture); a Task that
    # awaits the Future checks that __await__ set it.
    _asyncio_future_blocking = False

    def get_loop(self) -> AbstractEventLoop:
        """The event loop the Future belongs to."""
        return self._loop

    def done(self) -> bool:
        """True once finished or cancelled."""
        return self._state is not PENDING

    def cancelled(self) -> bool:
        """True if cancelled."""
        return self._state is CANCELLED_STATE

    def result(self) -> _T:
        """The result; raises its exception, CancelledError, or InvalidStateError if not done."""
        state = self._state
        if state is FINISHED:
            exc = self._exception
            if exc is None:
                return self._result  # type: ignore[no-any-return]
            self._retrieved()
            raise exc
        if state is CANCELLED_STATE:
            raise self._make_cancelled_error()
        raise InvalidStateError("Result is not ready.")

    def exception(self) -> BaseException | None:
        """The exception it failed with (None if it succeeded); as ``result()`` if not."""
        state = self._state
        if state is FINISHED:
            self._retrieved()
            return self._exception
        if state is CANCELLED_STATE:
            raise self._make_cancelled_error()
        raise InvalidStateError("Exception is not set.")

    def add_done_callback(self, fn: Callable[[Any], object], *,
                          context: contextvars.Context | None = None) -> None:
        """Call ``fn(future)`` through ``loop.call_soon`` once done, in ``context``."""
        if context is None:
            context = contextvars.copy_context()
        if self._state is not PENDING:
            self._loop.call_soon(fn, self, context=context)
            return
        callbacks = self._callbacks
        if callbacks is None:
            self._callbacks = [(fn, context)]
        else:
            callbacks.append((fn, context))

    def remove_done_callback(self, fn: Callable[[Any], object]) -> int:
        """Remove every registration of ``fn``; how many there were."""
        callbacks = self._callbacks
        if not callbacks:
            return 0
        kept = [(f, ctx) for f, ctx in callbacks if f != fn]
        self._callbacks = kept
        return len(callbacks) - len(kept)

    def cancel(self, msg: Any = None) -> bool:
        """Cancel this version (see the class docstring); False if already done."""
        if self._state is not PENDING:
            return False
        owner = self._owner
        if owner is None:  # made by hand: a plain Future
            return self.notify_cancelled(CANCELLED, msg)
        return owner.cancel_future(self, CANCELLED, msg)

    def set_result(self, result: _T) -> None:
        """Finish it with ``result``; InvalidStateError if done."""
        if self._state is not PENDING:
            raise InvalidStateError(f"{self._state}: {self!r}")
        self._result = result
        self._state = FINISHED
        if self._callbacks:
            self._schedule_callbacks()

    def set_exception(self, exception: BaseException | type[BaseException]) -> None:
        """Fail it with ``exception`` (a class is instantiated); InvalidStateError if done."""
        if self._state is not PENDING:
            raise InvalidStateError(f"{self._state}: {self!r}")
        if isinstance(exception, type):
            exception = exception()
        if isinstance(exception, StopIteration):
            raise TypeError("StopIteration interacts badly with generators "
                            "and cannot be raised into a Future")
        self._exception = exception
        self._result = None
        self._state = FINISHED
        self._unretrieved = _UnretrievedLog(self._loop, exception, self._what())
        if self._callbacks:
            self._schedule_callbacks()

    def __await__(self) -> Generator[Any, None, _T]:
        if self._state is PENDING:
            owner = self._owner
            # It would wait for its own end for ever, as asyncio refuses for a Task.
            if owner is not None and owner.is_calling(self):
                raise RuntimeError(f"{self._what()} cannot await its own Future")
            self._asyncio_future_blocking = True
            yield self  # the Task waits for it through add_done_callback
        if self._state is PENDING:
            raise RuntimeError("await wasn't used with future")
        return self.result()

    __iter__ = __await__

    def _make_cancelled_error(self) -> CancelledError:
        """The CancelledError a cancelled Future raises (asyncio's gather asks for it)."""
        msg = self._cancel_message
        return CancelledError() if msg is None else CancelledError(msg)

    def __repr__(self) -> str:
        state = self._state.lower()
        if self._state is FINISHED:
            exc = self._exception
            state += f" exception={exc!r}" if exc is not None else f" result={self._result!r}"
        return f"<{self._what()} {state}>"

    # -- for the scheduler that made it ---------------------------------------------------

    def notify_cancelled(self, reason: str, msg: Any = None) -> bool:
        """Cancel the Future with ``reason`` (its ``cancel_reason``; also its message unless
        ``msg`` is given): its version ended, or stopped, without a result. False if done."""
        if self._state is not PENDING:
            return False
        self._cancel_reason = reason
        self._cancel_message = msg if msg is not None else reason
        self._state = CANCELLED_STATE
        if self._callbacks:
            self._schedule_callbacks()
        return True

    def _schedule_callbacks(self) -> None:
        callbacks = self._callbacks
        self._callbacks = None
        call_soon = self._loop.call_soon
        for fn, context in callbacks or ():
            call_soon(fn, self, context=context)

    def _retrieved(self) -> None:
        log = self._unretrieved
        if log is not None:
            log.exc = None
            self._unretrieved = None

    def _what(self) -> str:
        if self._owner is None:
            return "AsyncTaskFuture"
        return f"AsyncTaskFuture task_id={self._task_id!r} version={self._version}"


def version_future(loop: AbstractEventLoop, owner: _Owner, task_id: Hashable,
                   version: int) -> AsyncTaskFuture[Any]:
    """The Future of ``version`` of ``task_id``, handed out by the scheduler ``owner``.

    Made without ``__init__``, and by a function rather than a classmethod:
    once per ``schedule()``, each call fewer is measured (about 360
    instructions of 16,000 per version, CPython 3.11, by callgrind).
    """
    fut: AsyncTaskFuture[Any] = _new(AsyncTaskFuture)
    fut._loop = loop
    fut._state = PENDING
    fut._owner = owner
    fut._task_id = task_id
    fut._version = version
    return fut
