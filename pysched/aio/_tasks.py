"""What the scheduler asks of a version's result before and after it awaits it in a Task."""

from __future__ import annotations

import inspect
import sys
import types
from typing import Any

__all__ = ["TASKS_TAKE_A_CONTEXT", "has_begun", "is_awaitable", "unbegun_coroutine"]

_CoroutineType = types.CoroutineType


def is_awaitable(value: object) -> bool:
    """``inspect.isawaitable``, with the two common answers (a coroutine, None) first."""
    if value.__class__ is _CoroutineType:
        return True
    return value is not None and inspect.isawaitable(value)


# 3.10's create_task takes no context: there a Task copies the current one.
TASKS_TAKE_A_CONTEXT = sys.version_info >= (3, 11)


def unbegun_coroutine(awaitable: object) -> Any:
    """``awaitable`` if it is a coroutine (which may not have begun yet), else None.

    Any other awaitable came from a function that already ran: it has begun.
    """
    return awaitable if awaitable.__class__ is _CoroutineType else None


def has_begun(coro: Any) -> bool:
    """Whether any code of a coroutine from ``unbegun_coroutine`` has run (True for None)."""
    return coro is None or inspect.getcoroutinestate(coro) != inspect.CORO_CREATED
