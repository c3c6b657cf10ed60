"""AsyncTaskFuture: the asyncio Future of one version of a scheduled task.

A version's Future also carries what the scheduler needs to run it (its
caller's context, and once claimed the core Task and the asyncio Task that
awaits its result), so each version allocates one object of ours. Fields live
in ``__slots__``: a Future subclass with a ``__dict__`` costs about 200 ns
more to make, and the scheduler makes one per ``schedule()``.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Hashable
from typing import Any, Protocol

CANCELLED = "cancelled"
REPLACED = "replaced"
CLOSED = "closed"

__all__ = ["CANCELLED", "CLOSED", "REPLACED", "AsyncTaskFuture"]


class _Owner(Protocol):
    """What a Future needs of the scheduler that handed it out."""

    def _cancel_version(self, fut: AsyncTaskFuture, reason: str, msg: Any = None) -> bool: ...


class AsyncTaskFuture(asyncio.Future):  # type: ignore[type-arg]
    """The asyncio Future of one version of a scheduled task.

    ``cancel(msg=None)`` cancels the version: one that has not started (still
    pending, or claimed while its coroutine has not begun) never starts and
    the Future is cancelled at once; a running one has its asyncio Task
    cancelled and, as with an asyncio Task, the Future resolves when the
    function actually returns or raises. ``msg`` reaches the CancelledError,
    as it does for asyncio's own Futures.
    """

    __slots__ = ("_owner", "_task_id", "_version", "_context", "_cancel_reason",
                 "_task", "_aio", "_coro", "_stop_reason", "_stop_msg")

    # Set by the scheduler right after construction (see AsyncScheduler.schedule):
    _owner: _Owner | None  # while the version is pending or running
    _task_id: Hashable
    _version: int
    _context: contextvars.Context  # its caller's context, which the version runs in
    _cancel_reason: str | None
    _task: Any  # the core Task, once claimed
    _aio: asyncio.Task[Any] | None  # the asyncio Task awaiting the result, if any
    _coro: Any  # the coroutine that Task runs, to tell whether it has begun
    _stop_reason: str | None  # why a running version was asked to stop
    _stop_msg: Any  # the message it was asked to stop with

    @property
    def task_id(self) -> Hashable:
        """The task id this version belongs to."""
        return self._task_id

    @property
    def version(self) -> int:
        """The version number the core gave it, from 1 per task id."""
        return self._version

    @property
    def cancel_reason(self) -> str | None:
        """Why it was cancelled: "cancelled", "replaced" or "closed"; else None."""
        return self._cancel_reason

    def cancel(self, msg: Any = None) -> bool:
        """Cancel this version (see the class docstring); False if already done."""
        if self.done():
            return False
        owner = self._owner
        if owner is None:  # not a version of any scheduler: a plain Future
            return self._resolve_cancelled(CANCELLED, msg)
        return owner._cancel_version(self, CANCELLED, msg)

    def _resolve_cancelled(self, reason: str, msg: Any = None) -> bool:
        """Cancel the Future itself with ``reason`` (also its message unless ``msg`` is given)."""
        self._owner = None
        if self.done():
            return False
        self._cancel_reason = reason
        return super().cancel(msg if msg is not None else reason)


def new_future(owner: _Owner, task_id: Hashable, version: int,
               loop: asyncio.AbstractEventLoop) -> AsyncTaskFuture:
    """The Future of a version just scheduled, in its caller's context."""
    fut = AsyncTaskFuture(loop=loop)
    fut._owner = owner
    fut._task_id = task_id
    fut._version = version
    fut._context = contextvars.copy_context()
    fut._cancel_reason = None
    fut._task = None
    fut._aio = None
    fut._coro = None
    fut._stop_reason = None
    fut._stop_msg = None
    return fut
