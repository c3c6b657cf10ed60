"""A version's fn and what it returns: binding its arguments, its Task's context, its outcome."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._validate import check_callable

__all__ = ["TASKS_TAKE_A_CONTEXT", "bound_call", "checked_call", "has_begun", "settable"]

# 3.10's create_task takes no context: there a Task copies the current one.
TASKS_TAKE_A_CONTEXT = sys.version_info >= (3, 11)


def has_begun(coro: Any) -> bool:
    """Whether any code of a version's coroutine has run.

    When the version's function returned an awaitable other than a
    coroutine, ``coro`` is the scheduler's coroutine that awaits it: the
    version begins awaiting it at that coroutine's first step.
    """
    return inspect.getcoroutinestate(coro) != inspect.CORO_CREATED


def settable(exc: BaseException) -> BaseException:
    """``exc``, or a RuntimeError from it if it is a StopIteration (which a Future refuses)."""
    if isinstance(exc, StopIteration):
        error = RuntimeError("a scheduled function raised StopIteration")
        error.__cause__ = exc
        return error
    return exc


def checked_call(fn: Callable[..., Any], args: Iterable[Any], kwargs: Mapping[str, Any] | None
                 ) -> tuple[tuple[Any, ...], dict[str, Any] | None]:
    """``args`` as a tuple and ``kwargs`` as a dict (None when empty), after checking all
    three."""
    check_callable(fn, "fn")
    if isinstance(args, (str, bytes)) or not isinstance(args, Iterable):
        raise TypeError(f"args must be an iterable of arguments, not {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a mapping, not {type(kwargs).__name__}")
    return tuple(args), dict(kwargs) if kwargs else None


def bound_call(fn: Callable[..., Any], args: Iterable[Any],
               kwargs: Mapping[str, Any] | None) -> Callable[[], Any]:
    """``fn`` with its arguments bound, after checking all three."""
    args, kwargs = checked_call(fn, args, kwargs)
    if not args and not kwargs:
        return fn
    return functools.partial(fn, *args, **(kwargs or {}))
