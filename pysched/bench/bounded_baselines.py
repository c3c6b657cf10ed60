"""What users write instead of StableBoundedPriorityQueue: two heaps, or a SortedList.

Both keep the ``capacity`` best entries with the core's admission rule: the
lower priority number is better, equal priorities leave in push order (a seq
per push, refused pushes included, as the core counts them), and a full queue
admits a newcomer only when it is strictly better than its worst entry, which
it then evicts. Their surface is what the workloads use: ``push(priority,
value)``, ``pop()`` and ``snapshot()``.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush, heapreplace
from typing import Any

__all__ = ["SortedBoundedQueue", "TwoHeapsQueue"]

# Below this many nodes a heap is left for its root to clean: compacting a
# tiny heap costs more than it saves (the core's floor).
COMPACT_FLOOR = 64

Dropped = tuple[int, int, Any]  # (priority, seq, value) of an entry that left or was refused


class TwoHeapsQueue:
    """A min-heap and a max-heap over the same entries, with alive flags and lazy deletion.

    An entry is a list ``[priority, seq, value, alive]``: the best heap holds
    the entries themselves (lists compare by priority, then by the unique
    seq, so values are never compared), the worst heap ``(-priority, -seq,
    entry)`` tuples. Popping the best or evicting the worst only clears the
    entry's flag: its node in the other heap stays, dead, until it reaches
    that heap's root, so both roots are live after every call. A heap is
    rebuilt from its live entries when dead nodes outnumber them (above
    COMPACT_FLOOR), so memory follows the capacity.

    ``push`` reports what was dropped, as Lucene's ``insertWithOverflow``:
    None when the entry got in and nothing left, else ``(priority, seq,
    value)`` of the evicted worst entry or of the refused newcomer.
    """

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._best: list[list[Any]] = []
        self._worst: list[tuple[int, int, list[Any]]] = []
        self._live = 0
        self._seq = 0

    def __len__(self) -> int:
        return self._live

    def push(self, priority: int, value: Any) -> Dropped | None:
        """Offer an entry; what was dropped, or None. O(log n)."""
        self._seq = seq = self._seq + 1
        worst = self._worst
        if self._live == self._capacity:
            # Full: the newcomer's seq is the newest, so only a strictly
            # lower priority number beats the (live) worst root.
            if not worst or priority >= -worst[0][0]:
                return priority, seq, value
            entry = [priority, seq, value, True]
            evicted = heapreplace(worst, (-priority, -seq, entry))[2]
            evicted[3] = False
            heappush(self._best, entry)
            self._settle()
            return evicted[0], evicted[1], evicted[2]
        entry = [priority, seq, value, True]
        heappush(self._best, entry)
        heappush(worst, (-priority, -seq, entry))
        self._live += 1
        return None

    def pop(self) -> Any:
        """Remove and return the best value; IndexError when empty. O(log n) amortised."""
        entry = heappop(self._best)
        entry[3] = False
        self._live -= 1
        self._settle()
        return entry[2]

    def snapshot(self) -> list[Dropped]:
        """Every entry as ``(priority, seq, value)``, best first."""
        return sorted((e[0], e[1], e[2]) for e in self._best if e[3])

    def _settle(self) -> None:
        """Drop dead roots; rebuild a heap whose dead nodes outnumber the live ones."""
        best, worst, live = self._best, self._worst, self._live
        while best and not best[0][3]:
            heappop(best)
        while worst and not worst[0][2][3]:
            heappop(worst)
        if len(best) > 2 * live + COMPACT_FLOOR:
            best[:] = [entry for entry in best if entry[3]]
            heapify(best)
        if len(worst) > 2 * live + COMPACT_FLOOR:
            worst[:] = [node for node in worst if node[2][3]]
            heapify(worst)


class SortedBoundedQueue:
    """A bounded queue on sortedcontainers.SortedList.

    O(log n) push and pop, with larger constants than two heaps. Needs
    sortedcontainers (the ``bench`` extra), imported on first use so this
    module imports without it.
    """

    def __init__(self, capacity: int) -> None:
        from sortedcontainers import SortedList  # type: ignore[import-untyped, import-not-found, unused-ignore]

        self._capacity = capacity
        self._entries: Any = SortedList()  # (priority, seq, value), best first
        self._seq = 0

    def push(self, priority: int, value: Any) -> bool:
        """Add ``value`` unless the queue is full and it is no better than the worst; O(log n)."""
        self._seq += 1
        entries = self._entries
        if len(entries) >= self._capacity:
            if not self._capacity or priority >= entries[-1][0]:
                return False
            entries.pop()
        entries.add((priority, self._seq, value))
        return True

    def pop(self) -> Any:
        """Remove and return the best value; O(log n)."""
        return self._entries.pop(0)[2]

    def snapshot(self) -> list[tuple[int, int, Any]]:
        """Every (priority, seq, value) entry, best first."""
        return list(self._entries)
