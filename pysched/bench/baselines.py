"""What users write instead of pysched: the competitors, as they write them.

Each baseline has the core's ordering (earliest ``run_at``, then the higher
``priority``, then submission order) and the same small surface the workloads
use: ``schedule(task_id, run_at, priority, fn)`` (scheduling an id again
replaces its pending task), ``schedule_many(items)`` (each ``(task_id,
run_at, priority, fn)`` in order, as ``schedule`` would one by one),
``cancel(task_id) -> bool``, and either ``next(now)`` and ``pop_due(now,
limit)`` (``HeapqVersioned``, claimed as from the core) or ``drain()``, which
runs every pending task in order and calls its ``fn``. None of them has
pysched's running state, parked runs or argument checks: they are the honest
minimum a user would write for these workloads, so the comparison flatters
them if anything.

``schedule_many`` is the batch a user would write for each: the heapq ones
append the whole batch and ``heapify`` when the batch outnumbers the heap
(O(n + k) instead of k pushes), else push each; the others, which have no
cheaper bulk path, loop over ``schedule``.
"""

from __future__ import annotations

import itertools
import math
import queue
import sched
from collections.abc import Callable, Hashable, Iterable
from functools import partial
from heapq import heapify, heappop, heappush
from typing import Any

__all__ = [
    "HeapqScheduler",
    "HeapqTuples",
    "HeapqVersioned",
    "PriorityQueueScheduler",
    "SchedScheduler",
    "SortedListScheduler",
]

# The core's: below this many entries a rebuild costs more than it saves.
REBUILD_FLOOR = 64

# The heapq documentation's placeholder for a removed task.
REMOVED = "<removed-task>"

Item = tuple[Hashable, float, int, Callable[[], Any]]  # (task_id, run_at, priority, fn)


def schedule_each(sched: Any, items: Iterable[Item]) -> None:
    """``schedule_many`` for a baseline with no bulk path: ``schedule`` each item in order."""
    schedule = sched.schedule
    for task_id, run_at, priority, fn in items:
        schedule(task_id, run_at, priority, fn)


def push_all(heap: list[Any], entries: list[Any]) -> None:
    """Add ``entries`` to ``heap``: appended and heapified if they outnumber it, else pushed."""
    if len(entries) > len(heap):
        heap += entries
        heapify(heap)
    else:
        for entry in entries:
            heappush(heap, entry)


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

    schedule_many = schedule_each

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

    def schedule_many(self, items: Iterable[Item]) -> None:
        entry_finder, counter, entries = self._entry_finder, self._counter, []
        for task_id, run_at, priority, fn in items:
            old = entry_finder.get(task_id)
            if old is not None:
                old[3] = REMOVED
            entry_finder[task_id] = entry = [run_at, -priority, next(counter), task_id, fn]
            entries.append(entry)
        push_all(self._heap, entries)

    def drain(self) -> None:
        heap, entry_finder = self._heap, self._entry_finder
        while heap:
            _, _, _, task_id, fn = heappop(heap)
            if task_id is not REMOVED:
                del entry_finder[task_id]
                fn()


# (run_at, -priority, seq, task_id, fn)
VersionedEntry = tuple[float, int, int, Hashable, Callable[[], Any]]


class HeapqVersioned:
    """A heap of ``(run_at, -priority, seq, task_id, fn)`` tuples and a dict of versions.

    The core's own algorithm, plainly: ``version_of[task_id]`` is the seq of
    the id's pending entry, so replacing or cancelling an id only changes (or
    drops) that number and the old entry turns stale in place. The seq is
    unique across ids, so it serves as the version: an id scheduled,
    cancelled and scheduled again never matches its old entry, and no counter
    per id outlives its tasks. Stale entries are popped when they reach the
    head, and the heap is rebuilt from its live entries when stale ones
    outnumber them (above REBUILD_FLOOR entries), so it holds at most about
    twice the pending tasks. ``next(now)`` returns the due entry itself.
    """

    def __init__(self) -> None:
        self._heap: list[VersionedEntry] = []
        self._version_of: dict[Hashable, int] = {}
        self._seq = 0

    def __len__(self) -> int:
        """Pending tasks."""
        return len(self._version_of)

    def schedule(self, task_id: Hashable, run_at: float, priority: int,
                 fn: Callable[[], Any]) -> int:
        """Make ``fn`` the pending version of ``task_id``; return its version."""
        self._seq = seq = self._seq + 1
        version_of = self._version_of
        replaces = task_id in version_of
        version_of[task_id] = seq
        heappush(self._heap, (run_at, -priority, seq, task_id, fn))
        if replaces:
            self._maybe_rebuild()
        return seq

    def schedule_many(self, items: Iterable[Item]) -> list[int]:
        """``schedule`` each item in order, the heap filled once; their versions."""
        version_of, seq, entries = self._version_of, self._seq, []
        live = len(version_of)
        for task_id, run_at, priority, fn in items:
            seq += 1
            version_of[task_id] = seq
            entries.append((run_at, -priority, seq, task_id, fn))
        self._seq = seq
        push_all(self._heap, entries)
        if len(version_of) - live < len(entries):  # some replaced: stale entries left
            self._maybe_rebuild()
        return [entry[2] for entry in entries]

    def cancel(self, task_id: Hashable) -> bool:
        """Drop the pending version of ``task_id``; False if there is none."""
        if self._version_of.pop(task_id, None) is None:
            return False
        self._maybe_rebuild()
        return True

    def next(self, now: float) -> VersionedEntry | float | None:
        """Claim the head entry if it is due; else the seconds until it is; None when empty."""
        heap, version_of = self._heap, self._version_of
        while heap:
            entry = heap[0]
            if version_of.get(entry[3]) != entry[2]:
                heappop(heap)  # stale: replaced or cancelled
                continue
            if entry[0] > now:
                return entry[0] - now
            del version_of[entry[3]]
            return heappop(heap)
        return None

    def pop_due(self, now: float, limit: int | None = None) -> list[VersionedEntry]:
        """Claim up to ``limit`` due entries (all when None), in ``next()`` order."""
        heap, version_of, due = self._heap, self._version_of, []
        left = -1 if limit is None else limit
        while heap and left:
            entry = heap[0]
            if version_of.get(entry[3]) != entry[2]:
                heappop(heap)  # stale: replaced or cancelled
                continue
            if entry[0] > now:
                break
            del version_of[entry[3]]
            due.append(heappop(heap))
            left -= 1
        return due

    def _maybe_rebuild(self) -> None:
        heap, live = self._heap, len(self._version_of)
        if len(heap) > REBUILD_FLOOR and len(heap) > 2 * live:
            version_of = self._version_of
            heap[:] = [entry for entry in heap if version_of.get(entry[3]) == entry[2]]
            heapify(heap)


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

    def schedule_many(self, items: Iterable[Item]) -> None:
        counter = self._counter
        push_all(self._heap, [(run_at, -priority, next(counter), fn)
                              for _, run_at, priority, fn in items])

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

    schedule_many = schedule_each

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

    schedule_many = schedule_each

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
