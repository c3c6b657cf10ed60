"""The timeouts of running tasks: a min-heap of (deadline, seq, run, run_no).

Lazy deletion: a task that finishes before its deadline leaves its entry in
the heap, stale; an entry is live while its run's number still matches
and the scheduler still runs it. Stale entries are dropped when they reach the
root, and all at once by a rebuild as soon as they outnumber the live ones
(above REBUILD_FLOOR entries), and all at once when none is live, so the
heap holds at most ``max(2 * live, REBUILD_FLOOR)`` entries (none once no
run is timed); ``live`` is at most max_workers.
The owner calls everything under its lock.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import Any

REBUILD_FLOOR = 64

__all__ = ["Deadlines"]


class Deadlines:
    """Deadlines of running tasks; O(log n) add and expiry, O(1) amortised finish."""

    __slots__ = ("_heap", "_seq", "_live", "_is_live")

    def __init__(self, is_live: Callable[[Any, int], bool]) -> None:
        self._heap: list[tuple[float, int, Any, int]] = []
        self._seq = itertools.count()  # FIFO among equal deadlines; runs are never compared
        self._live = 0
        self._is_live = is_live  # (run, run_no) -> is that run still running?

    def __bool__(self) -> bool:
        return bool(self._heap)

    def add(self, deadline: float, run: Any, run_no: int) -> bool:
        """Track a run; True if it is now the earliest deadline."""
        heappush(self._heap, (deadline, next(self._seq), run, run_no))
        self._live += 1
        return self._heap[0][2] is run

    def finished(self) -> None:
        """One tracked run ended before its deadline: its entry turns stale."""
        self._live -= 1
        heap = self._heap
        if not self._live:  # every entry is stale: drop them, and the runs they hold
            heap.clear()
        elif len(heap) > REBUILD_FLOOR and len(heap) > 2 * self._live:
            is_live = self._is_live
            heap[:] = [entry for entry in heap if is_live(entry[2], entry[3])]
            heapify(heap)

    def first(self) -> float | None:
        """The earliest deadline still tracked (maybe stale), or None."""
        return self._heap[0][0] if self._heap else None

    def pop_expired(self, now: float) -> list[Any]:
        """Take out and return the live runs whose deadline is <= now."""
        heap = self._heap
        expired = []
        is_live = self._is_live
        while heap and heap[0][0] <= now:
            _, _, run, run_no = heappop(heap)
            if is_live(run, run_no):
                self._live -= 1
                expired.append(run)
        if not self._live:
            heap.clear()
        return expired
