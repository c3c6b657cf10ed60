"""The store as a scheduler's public methods reach it: refused once the scheduler closed.

A closed DurableScheduler closes the store it opened, so a call that reached
the store after that raised the store's own error (``sqlite3.ProgrammingError``,
a closed connection pool's RuntimeError); on a store it did not open the same
call went through. Every such call goes through one ``StoreGate``, which
answers SchedulerClosed instead, on every store alike, once the scheduler's
``Lifecycle`` says the store is released.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .._errors import SchedulerClosed
from ._lifecycle import Lifecycle

__all__ = ["StoreGate"]

T = TypeVar("T")

_CLOSED = "the durable scheduler is closed"


class StoreGate:
    """Runs the store calls of a scheduler's public methods and of its series handles."""

    def __init__(self, lifecycle: Lifecycle) -> None:
        self._lifecycle = lifecycle

    def call(self, action: Callable[[], T]) -> T:
        """``action()``, or SchedulerClosed once closed: before it starts, or when it fails
        because the store was closed while it ran."""
        if self._lifecycle.store_released:
            raise SchedulerClosed(_CLOSED)
        try:
            return action()
        except Exception as exc:
            if self._lifecycle.store_released:
                raise SchedulerClosed(_CLOSED) from exc
            raise
