"""What a scheduled version's Future tells about its version, shared by every kind of Future.

``TaskFuture`` (``pysched.pool``) and ``AsyncTaskFuture`` (``pysched.aio``)
derive from ``VersionFields``, so both answer ``task_id``, ``version`` and
``cancel_reason`` from one definition. The fields behind them are declared
here and set by each Future on itself: ``_task_id`` and ``_version`` when it
is made, ``_cancel_reason`` when its scheduler cancels it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

__all__ = ["CANCELLED", "CLOSED", "EVICTED", "REPLACED", "SELF", "TIMEOUT", "VersionFields"]

# Why a version was cancelled (its Future's cancel_reason).
CANCELLED = "cancelled"
REPLACED = "replaced"
EVICTED = "evicted"
CLOSED = "closed"
TIMEOUT = "timeout"

# The _task_id of a Future that is its own task id (ThreadPoolScheduler.submit):
# storing the Future in its own field would make a reference cycle and leave
# every finished Future to the garbage collector.
SELF: Any = object()


class VersionFields:
    """The identity of a version, as its Future tells it (see the module docstring)."""

    __slots__ = ()

    _task_id: Hashable  # SELF: the Future is its own task id
    _version: int
    _cancel_reason: str | None = None

    @property
    def task_id(self) -> Hashable:
        """The task id this version belongs to; for ``submit()`` it is the Future itself."""
        value = self._task_id
        return self if value is SELF else value

    @property
    def version(self) -> int:
        """The version number the core gave it, from 1 per task id (a series: its first run's)."""
        return self._version

    @property
    def cancel_reason(self) -> str | None:
        """Why it was cancelled: "cancelled", "replaced", "evicted", "closed", "timeout"; else
        None."""
        return self._cancel_reason
