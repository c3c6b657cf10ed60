"""Running a version's awaitable in an asyncio Task of its own, in its caller's context."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import sys
import types
from collections.abc import Awaitable, Coroutine
from typing import Any

__all__ = ["create_task_in", "has_begun", "is_awaitable"]

_CoroutineType = types.CoroutineType


def is_awaitable(value: object) -> bool:
    """``inspect.isawaitable``, with the two common answers (a coroutine, None) first."""
    if value.__class__ is _CoroutineType:
        return True
    return value is not None and inspect.isawaitable(value)


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


if sys.version_info >= (3, 11):
    def _create_task(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any],
                     context: contextvars.Context) -> asyncio.Task[Any]:
        return loop.create_task(coro, context=context)
else:
    def _create_task(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any],
                     context: contextvars.Context) -> asyncio.Task[Any]:
        # 3.10's create_task takes no context: the Task copies the current one.
        return context.run(loop.create_task, coro)


def create_task_in(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[Any],
                   context: contextvars.Context) -> tuple[asyncio.Task[Any], Any]:
    """An asyncio Task awaiting ``awaitable`` in ``context``, and the coroutine it runs.

    The coroutine is returned only when it is ``awaitable`` itself (see
    ``has_begun``); any other awaitable is awaited by a wrapper coroutine.
    """
    if awaitable.__class__ is _CoroutineType:
        return _create_task(loop, awaitable, context), awaitable
    return _create_task(loop, _await(awaitable), context), None


def has_begun(coro: Any) -> bool:
    """Whether any code of a version's coroutine has run (True when it has none to tell by).

    A coroutine that has not begun can still be cancelled without running a
    line of it; any other awaitable came from a function that already ran.
    """
    return coro is None or inspect.getcoroutinestate(coro) != inspect.CORO_CREATED
