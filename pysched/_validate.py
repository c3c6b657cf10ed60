"""Argument checks shared by the Cython core and the pure-Python twin.

Each check either returns the normalised value or raises TypeError, ValueError
or OverflowError with a message that names the argument. They run before any
state changes, so a rejected call leaves a structure exactly as it was. The
Cython core keeps its own fast path for the common types and calls these for
everything else, so there is one wording for every error.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Hashable

# Type checkers take any TYPE_CHECKING as true; at run time typing stays unloaded,
# as import pysched loads this module and importing typing costs as much as the rest.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def check_time(value: Any, name: str) -> float:
    """Return ``value`` as a finite float, or raise naming ``name``."""
    if isinstance(value, (bool, complex, str, bytes)) or not hasattr(value, "__float__"):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}")
    try:
        seconds = float(value)
    except OverflowError:
        raise OverflowError(f"{name} is too large to be a time: {value!r}") from None
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}") from exc
    if not math.isfinite(seconds):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return seconds + 0.0  # -0.0 is 0.0, as the core's integer keys of times have it


def _as_int(value: Any, name: str) -> int:
    """``value`` as an int (anything with ``__index__`` but bool), or TypeError naming ``name``."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None


def check_priority(value: Any, name: str = "priority") -> int:
    """Return ``value`` as an int in the signed 64-bit range, or raise."""
    number = _as_int(value, name)
    if not INT64_MIN <= number <= INT64_MAX:
        raise OverflowError(f"{name} must fit in a signed 64-bit integer, got {number}")
    return number


def check_hashable(value: Any, name: str) -> int:
    """Return ``hash(value)``, or raise TypeError naming ``name``."""
    if not isinstance(value, Hashable):
        raise TypeError(f"{name} must be hashable, not {type(value).__name__}")
    try:
        return hash(value)
    except TypeError as exc:
        raise TypeError(f"{name} must be hashable: {exc}") from exc


def check_callable(value: Any, name: str = "fn") -> None:
    """Raise TypeError naming ``name`` unless ``value`` is callable."""
    if not callable(value):
        raise TypeError(f"{name} must be callable, not {type(value).__name__}")


def check_capacity(value: Any, name: str = "capacity") -> int:
    """Return ``value`` as a non-negative int, or raise naming ``name``."""
    number = _as_int(value, name)
    if number < 0:
        raise ValueError(f"{name} must be >= 0, got {number}")
    if number > INT64_MAX:
        raise OverflowError(f"{name} is too large: {number}")
    return number


def check_iterable(value: Any, name: str) -> list[Any]:
    """Return the items of ``value`` as a list, or raise TypeError naming ``name``."""
    try:
        iterator = iter(value)
    except TypeError:
        raise TypeError(f"{name} must be iterable, not {type(value).__name__}") from None
    return list(iterator)


def check_schedule_item(item: Any, name: str) -> tuple[Hashable, float, int, Any]:
    """Return a ``(task_id, run_at, priority, fn)`` item checked as ``schedule()`` checks them.

    Errors name the field within ``name``: ``items[3].run_at``.
    """
    if not isinstance(item, (tuple, list)) or len(item) != 4:
        raise TypeError(f"{name} must be a (task_id, run_at, priority, fn) tuple, "
                        f"not {type(item).__name__}"
                        + (f" of length {len(item)}" if isinstance(item, (tuple, list)) else ""))
    task_id, run_at, priority, fn = item
    check_hashable(task_id, f"{name}.task_id")
    run_at = check_time(run_at, f"{name}.run_at")
    priority = check_priority(priority, f"{name}.priority")
    check_callable(fn, f"{name}.fn")
    return task_id, run_at, priority, fn


def not_a_task(value: Any, name: str) -> TypeError:
    """The error for ``name`` given ``value``, which is not a Task of the scheduler."""
    return TypeError(f"{name} must be a Task, not {type(value).__name__}")


def missing_key(key: Any, name: str = "key") -> KeyError:
    """The error for a ``name`` that names no entry, for the caller to raise."""
    return KeyError(f"{name} {key!r} is not in the queue")


def duplicate_key(key: Any, name: str = "key") -> ValueError:
    """The error for a ``name`` that already names an entry, for the caller to raise."""
    return ValueError(f"{name} {key!r} is already in the queue")


def check_choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise naming ``name``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value
