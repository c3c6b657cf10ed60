"""The schedulers compared, each behind the same three calls.

A ``Competitor`` makes a fresh scheduler with ``schedule``,
``schedule_many`` and ``cancel`` and knows how to drain it. The core and the
twin are drained through their own API: ``pop_due`` in batches of BATCH
tasks, each task called, then the batch completed with ``complete_many``;
the baselines through theirs (see
baselines.py). The first baseline, "heapq, versioned", is the one the report
leads with: the core's algorithm written plainly in Python, drained by its
own ``pop_due`` in the same batches. Workloads of single calls drain the
core, the twin and "heapq, versioned" one ``next()`` at a time instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import baselines

CORE = "c"  # the key of the Cython core, which every speedup is measured against
VERSIONED = "versioned"  # the main baseline: the core's algorithm in heapq and a dict

# sched's cancel is O(n) (list.remove + heapify), so a workload with n/10
# cancels is O(n**2): at n = 100,000 it takes minutes, at 10,000 up to 6 s
# per run on a 2-core machine. Workloads that cancel or replace give it at
# most this many tasks (config.py picks a lower cap for quick runs).
SCHED_CANCEL_CAP = 10_000


# Tasks claimed per pop_due call when draining: a worker's batch.
BATCH = 64


def drain_pop_due(sched: Any, limit: int | None = BATCH) -> None:
    """Claim every due task of a core or twin Scheduler with ``pop_due``, ``limit`` at a time
    (all at once when None); run each, then complete the batch with ``complete_many``."""
    pop_due, complete_many = sched.pop_due, sched.complete_many
    while True:
        tasks = pop_due(1e300, limit)  # far past every run_at: all pending tasks are due
        if not tasks:
            return
        for task in tasks:
            task.fn()
        complete_many(tasks)


def drain_versioned_pop_due(sched: Any) -> None:
    """Claim and run every entry of a HeapqVersioned with its ``pop_due``, BATCH at a time."""
    pop_due = sched.pop_due
    while True:
        entries = pop_due(1e300, BATCH)
        if not entries:
            return
        for entry in entries:
            entry[4]()


def drain_scheduler(sched: Any) -> None:
    """Claim, run and complete every pending task of a core or twin Scheduler."""
    claim, complete = sched.next, sched.complete
    while True:
        task = claim(1e300)  # far past every run_at: all pending tasks are due
        if task is None or task.__class__ is float:
            return
        task.fn()
        complete(task)


def drain_versioned(sched: Any) -> None:
    """Claim and run every pending entry of a HeapqVersioned, as drain_scheduler does the core's."""
    claim = sched.next
    while True:
        entry = claim(1e300)
        if entry is None or entry.__class__ is float:
            return
        entry[4]()


def drain_baseline(sched: Any) -> None:
    """Run every pending task of a baseline."""
    sched.drain()


@dataclass(frozen=True)
class Competitor:
    """One scheduler under test."""

    key: str  # short name in JSON and plots
    label: str  # column heading in the table
    make: Callable[[], Any]  # a fresh scheduler that can cancel and replace
    drain: Callable[[Any], None]
    make_simple: Callable[[], Any] | None = None  # a cheaper one for workloads that never cancel
    cancel_cap: int | None = None  # largest n for workloads that cancel or replace
    drain_single: Callable[[Any], None] | None = None  # one task a call, if not drain

    def drain_for(self, single: bool) -> Callable[[Any], None]:
        """The drain of a workload that claims in batches, or (``single``) one task a call."""
        return self.drain_single if single and self.drain_single is not None else self.drain

    def factory(self, cancels: bool) -> Callable[[], Any]:
        """The scheduler factory for a workload that does (or does not) cancel."""
        return self.make if cancels or self.make_simple is None else self.make_simple

    def runs_at(self, n: int, cancels: bool) -> bool:
        """Whether this competitor takes part at size ``n``."""
        return not cancels or self.cancel_cap is None or n <= self.cancel_cap


def core_available() -> bool:
    """Whether the compiled core imports."""
    try:
        import pysched._core  # noqa: F401
    except ImportError:
        return False
    return True


def sortedcontainers_available() -> bool:
    """Whether sortedcontainers (in the ``bench`` extra) is installed."""
    try:
        import sortedcontainers  # type: ignore[import-untyped, import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def scheduler_competitors(sched_cancel_cap: int = SCHED_CANCEL_CAP) -> list[Competitor]:
    """Every competitor installed here, the core first (when it imports)."""
    from pysched._scheduler_py import Scheduler as PureScheduler

    found = []
    if core_available():
        from pysched._core import Scheduler as CoreScheduler

        found.append(Competitor(CORE, "pysched", CoreScheduler, drain_pop_due,
                                drain_single=drain_scheduler))
    found += [
        Competitor(VERSIONED, "heapq, versioned", baselines.HeapqVersioned,
                   drain_versioned_pop_due, drain_single=drain_versioned),
        Competitor("py", "pure twin", PureScheduler, drain_pop_due, drain_single=drain_scheduler),
        Competitor("heapq", "heapq, entry finder", baselines.HeapqScheduler, drain_baseline,
                   make_simple=baselines.HeapqTuples),
        Competitor("sched", "sched", baselines.SchedScheduler, drain_baseline,
                   cancel_cap=sched_cancel_cap),
        Competitor("pq", "PriorityQueue", baselines.PriorityQueueScheduler, drain_baseline),
    ]
    if sortedcontainers_available():
        found.append(Competitor("sorted", "SortedList", baselines.SortedListScheduler,
                                drain_baseline))
    return found
