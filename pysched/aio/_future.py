"""AsyncTaskFuture: the asyncio Future of one version of a scheduled task.

A version's Future also carries what the scheduler needs to run it (its
caller's context, and once claimed the core Task and the asyncio Task that
awaits its result), so each version allocates one object of ours. The fields
every version or every coroutine sets live in ``__slots__``, set when they
first matter; those most versions leave at their default are class
attributes, set on the instance (in the ``__dict__`` that asyncio's Future
already has) only when they differ. The scheduler makes one per
``schedule()``, so each field set counts.
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

    __slots__ = ("_owner", "_task_id", "_version", "_context", "_task", "_aio", "_coro")

    # Set by the scheduler right after construction (see AsyncScheduler.schedule):
    _owner: _Owner | None  # while the version is pending or running
    _task_id: Hashable
    _version: int
    # Its caller's context, which the version runs in; dropped once it started
    # or ended, as the core Task is, so a Future kept after its version holds
    # neither the context's values nor fn and its arguments.
    _context: contextvars.Context | None
    # Set when the version is claimed:
    _task: Any  # the core Task
    _aio: asyncio.Task[Any] | None  # the asyncio Task awaiting its result, if any
    _coro: Any  # the coroutine that Task awaits, to tell whether it has begun (with _aio)
    # Defaults, set on the instance when they differ:
    _cancel_reason: str | None = None
    _stop_reason: str | None = None  # why a running version was asked to stop
    _stop_msg: Any = None  # the message it was asked to stop with

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
        self._context = None
        if self.done():
            return False
        self._cancel_reason = reason
        return super().cancel(msg if msg is not None else reason)
