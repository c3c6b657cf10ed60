"""What a scheduled version's Future tells about its version, shared by every kind of Future.

``TaskFuture`` (``pysched.pool``) and ``AsyncTaskFuture`` (``pysched.aio``)
take these properties as class attributes, so both answer ``task_id``,
``version`` and ``cancel_reason`` from one definition. Each reads a field its
scheduler sets on the Future: ``_task_id``, ``_version``, ``_cancel_reason``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

_T = TypeVar("_T")

__all__ = ["CANCELLED", "CLOSED", "EVICTED", "REPLACED", "SELF", "TIMEOUT", "Field",
           "cancel_reason", "task_id", "version"]

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


def _task_id(fut: Any) -> Hashable:
    """The task id this version belongs to; for ``submit()`` it is the Future itself."""
    value = fut._task_id
    return fut if value is SELF else value  # type: ignore[no-any-return]


def _version(fut: Any) -> int:
    """The version number the core gave it, from 1 per task id (a series: its first run's)."""
    return fut._version  # type: ignore[no-any-return]


def _cancel_reason(fut: Any) -> str | None:
    """Why it was cancelled: "cancelled", "replaced", "evicted", "closed", "timeout"; else None."""
    return fut._cancel_reason  # type: ignore[no-any-return]


class Field(property, Generic[_T]):
    """A read-only property whose value type the type checker sees; its getter's docstring."""

    def __init__(self, getter: Any) -> None:
        super().__init__(getter)
        self.__doc__ = getter.__doc__  # a subclass of property does not take it by itself

    if TYPE_CHECKING:
        @overload
        def __get__(self, instance: None, owner: type | None = None) -> Field[_T]: ...
        @overload
        def __get__(self, instance: object, owner: type | None = None) -> _T: ...
        def __get__(self, instance: object, owner: type | None = None) -> Any: ...


task_id: Field[Hashable] = Field(_task_id)
version: Field[int] = Field(_version)
cancel_reason: Field[str | None] = Field(_cancel_reason)
