"""The outcome queue: the ends of runs here, waiting to be stored, oldest first.

A run's outcome is queued before its claim leaves ``Inflight``, so whoever sees
nothing in flight (closing) also sees every outcome still to store. A deque, whose
appends and pops are atomic: the runs append, and only the housekeeping thread
takes and puts back, so no lock is needed.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ._futures import DurableFuture
from .store import Outcome

__all__ = ["OutcomeQueue", "Queued"]


# An outcome to store, and the Future and value (or exception) it settles then: a plain
# tuple, one per run, which is cheaper to make than a named one.
Queued = tuple[Outcome, "DurableFuture | None", Any]


class OutcomeQueue:
    """Outcomes not yet stored; ``put`` by the runs, ``take`` by the housekeeping thread."""

    def __init__(self) -> None:
        self._items: deque[Queued] = deque()

    def __len__(self) -> int:
        return len(self._items)

    def put(self, outcome: Outcome, future: DurableFuture | None = None,
            value: Any = None) -> None:
        self._items.append((outcome, future, value))

    def put_back(self, batch: list[Queued]) -> None:
        """Return a batch the store could not take, first in line to be tried again
        (by the thread that took it)."""
        self._items.extendleft(reversed(batch))

    def take(self) -> list[Queued]:
        """Every outcome queued, oldest first (by the one thread that takes them)."""
        items = self._items
        return [items.popleft() for _ in range(len(items))]
