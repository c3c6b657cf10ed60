"""Asking a version's coroutine whether it has begun; how to give its Task a context."""

from __future__ import annotations

import inspect
import sys
from typing import Any

__all__ = ["TASKS_TAKE_A_CONTEXT", "has_begun"]

# 3.10's create_task takes no context: there a Task copies the current one.
TASKS_TAKE_A_CONTEXT = sys.version_info >= (3, 11)


def has_begun(coro: Any) -> bool:
    """Whether any code of a version's coroutine has run.

    ``coro`` is None when the version's function returned an awaitable other
    than a coroutine: that function already ran, so the version has begun.
    """
    return coro is None or inspect.getcoroutinestate(coro) != inspect.CORO_CREATED
