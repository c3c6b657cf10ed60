"""What users write instead of pysched: the competitors, as they write them.

Each baseline has the core's ordering (earliest ``run_at``, then the higher
``priority``, then submission order) and the same small surface the workloads
use: ``schedule(task_id, run_at, priority, fn)`` (scheduling an id again
replaces its pending task), ``cancel(task_id) -> bool`` and ``drain()``, which
runs every pending task in order and calls its ``fn``. None of them has
pysched's versions, parked runs or stale-entry bound: they are the honest
minimum a user would write for these workloads, so the comparison flatters
them if anything.
"""

from __future__ import annotations

import itertools
import math
import queue
import sched
from collections.abc import Callable, Hashable
from functools import partial
from heapq import heappop, heappush
from typing import Any

__all__ = [
    "HeapqScheduler",
    "HeapqTuples",
    "PriorityQueueScheduler",
    "SchedScheduler",
    "SortedListScheduler",
]

# The heapq documentation's placeholder for a removed task.
REMOVED = "<removed-task>"


class _EntryFinder:
    """The heapq documentation's entry-finder pattern, over any heap's ``put``.

    Entries are lists ``[run_at, -priority, count, task_id, fn]`` so that a
    removed one can be marked in place; the unique count means ids and
    functions are never compared. Removed entries stay in the heap until they
    reach the top: nothing bounds them, as in the documentation's recipe.
    """

    def __init__(self, put: Callable[[list[Any]], None]) -> None:
        self._put = put
        self._entry_finder: dict[Hashable, list[Any]] = {}
        self._counter = itertools.count()

    def __len__(self) -> int:
        """Pending tasks (removed entries still in the heap not counted)."""
        return len(self._entry_finder)

    def schedule(self, task_id: Hashable, run_at: float, priority: int,
                 fn: Callable[[], Any]) -> None:
        if task_id in self._entry_finder:
            self.cancel(task_id)
        entry = [run_at, -priority, next(self._counter), task_id, fn]
        self._entry_finder[task_id] = entry
        self._put(entry)

    def cancel(self, task_id: Hashable) -> bool:
        entry = self._entry_finder.pop(task_id, None)
        if entry is None:
            return False
        entry[3] = REMOVED
        return True


class HeapqScheduler(_EntryFinder):
    """The entry-finder pattern on a plain list with ``heapq``."""

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        super().__init__(partial(heappush, self._heap))

    def drain(self) -> None:
        heap, entry_finder = self._heap, self._entry_finder
        while heap:
            _, _, _, task_id, fn = heappop(heap)
            if task_id is not REMOVED:
                del entry_finder[task_id]
                fn()


class HeapqTuples:
    """Plain ``(run_at, -priority, count, fn)`` tuples: for workloads with no cancel.

    Without ids there is nothing to find, replace or cancel; the cheapest
    correct heap scheduler, and what users write when they need no more.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Callable[[], Any]]] = []
        self._counter = itertools.count()

    def schedule(self, task_id: Hashable, run_at: float, priority: int,
                 fn: Callable[[], Any]) -> None:
        heappush(self._heap, (run_at, -priority, next(self._counter), fn))

    def cancel(self, task_id: Hashable) -> bool:
        raise NotImplementedError("plain tuples keep no ids: use HeapqScheduler")

    def drain(self) -> None:
        heap = self._heap
        while heap:
            heappop(heap)[3]()


def _no_delay(seconds: float) -> None:
    """sched's delayfunc: never sleeps, since every event is already due."""


def _end_of_time() -> float:
    """sched's timefunc: every event is due, like ``next(now=1e300)`` on the core."""
    return math.inf


class SchedScheduler:
    """The standard library's ``sched``: ``enterabs``, ``cancel`` and ``run``.

    A dict from id to Event lets an id be replaced or cancelled, as callers
    must keep one. ``sched`` runs the lower priority number first, so the
    priority is negated. ``cancel`` is ``list.remove`` plus ``heapify``: O(n).
    """

    def __init__(self) -> None:
        self._sched = sched.scheduler(_end_of_time, _no_delay)
        self._events: dict[Hashable, sched.Event] = {}

    def schedule(self, task_id: Hashable, run_at: float, priority: int,
                 fn: Callable[[], Any]) -> None:
        old = self._events.get(task_id)
        if old is not None:
            self._sched.cancel(old)
        self._events[task_id] = self._sched.enterabs(run_at, -priority, fn)

    def cancel(self, task_id: Hashable) -> bool:
        event = self._events.pop(task_id, None)
        if event is None:
            return False
        self._sched.cancel(event)
        return True

    def drain(self) -> None:
        self._sched.run()
        # Forgetting ran events one by one would need a wrapper per action;
        # clearing once afterwards is cheaper, which only favours sched.
        self._events.clear()


class PriorityQueueScheduler(_EntryFinder):
    """The entry-finder pattern on ``queue.PriorityQueue`` (thread-safe).

    It has no removal, so cancel marks the entry and the drain skips it, as
    with heapq; every put and get takes the queue's lock.
    """

    def __init__(self) -> None:
        self._queue: queue.PriorityQueue[list[Any]] = queue.PriorityQueue()
        super().__init__(self._queue.put)

    def drain(self) -> None:
        get, entry_finder = self._queue.get_nowait, self._entry_finder
        while True:
            try:
                _, _, _, task_id, fn = get()
            except queue.Empty:
                return
            if task_id is not REMOVED:
                del entry_finder[task_id]
                fn()


class SortedListScheduler:
    """sortedcontainers' ``SortedList`` of ``(run_at, -priority, count)`` keys: real removal.

    Cancel and replace remove the key at once (O(log n)), so nothing stale
    is kept; the id and function live in a dict beside it.
    """

    def __init__(self) -> None:
        from sortedcontainers import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
            SortedList,
        )

        self._keys: Any = SortedList()
        self._key_of: dict[Hashable, tuple[float, int, int]] = {}
        self._entry_of: dict[tuple[float, int, int], tuple[Hashable, Callable[[], Any]]] = {}
        self._counter = itertools.count()

    def schedule(self, task_id: Hashable, run_at: float, priority: int,
                 fn: Callable[[], Any]) -> None:
        if task_id in self._key_of:
            self.cancel(task_id)
        key = (run_at, -priority, next(self._counter))
        self._key_of[task_id] = key
        self._entry_of[key] = (task_id, fn)
        self._keys.add(key)

    def cancel(self, task_id: Hashable) -> bool:
        key = self._key_of.pop(task_id, None)
        if key is None:
            return False
        self._keys.remove(key)
        del self._entry_of[key]
        return True

    def drain(self) -> None:
        pop, entry_of, key_of = self._keys.pop, self._entry_of, self._key_of
        while self._keys:
            task_id, fn = entry_of.pop(pop(0))
            del key_of[task_id]
            fn()
