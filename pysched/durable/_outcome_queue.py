"""The outcome queue: the ends of runs here, waiting to be stored, oldest first.

A run's outcome is queued before its claim leaves ``Inflight``, so whoever sees
nothing in flight (closing) also sees every outcome still to store. A deque, whose
appends and pops are atomic: the runs append, and only the housekeeping thread
takes and puts back, so no lock is needed.

An outcome keeps its claim's lease until it is stored: ``tokens()`` names the
leases of the outcomes queued and of the batch being written, for the
heartbeat to renew. Otherwise a slow write (a long re-read on the same thread,
a retry after a lost connection) would let the lease lapse, and another worker
would run the finished version again.
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
        self._writing: list[Queued] = []  # the batch taken and not yet stored or put back

    def __len__(self) -> int:
        return len(self._items)

    def put(self, outcome: Outcome, future: DurableFuture | None = None,
            value: Any = None) -> None:
        self._items.append((outcome, future, value))

    def put_back(self, batch: list[Queued]) -> None:
        """Return a batch the store could not take, first in line to be tried again
        (by the thread that took it)."""
        self._items.extendleft(reversed(batch))
        self._writing = []

    def stored(self) -> None:
        """The batch taken last is stored (by the thread that took it)."""
        self._writing = []

    def tokens(self) -> list[str]:
        """The lease tokens of the outcomes not yet stored (from any thread)."""
        # deque.copy() and a list reference are taken whole, under the GIL.
        return [outcome.token for outcome, _, _ in (*self._writing, *self._items.copy())]

    def take(self) -> list[Queued]:
        """Every outcome queued, oldest first (by the one thread that takes them)."""
        items = self._items
        batch = self._writing = [items.popleft() for _ in range(len(items))]
        return batch
