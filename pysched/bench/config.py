"""The sizes of a run: quick (the default), full, or custom ones for tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .competitors import SCHED_CANCEL_CAP


@dataclass(frozen=True)
class Config:
    """Every size a run uses; ``budget`` is the seconds of timing per measurement."""

    sizes: tuple[int, ...]  # n for the scheduler workloads
    budget: float
    sched_cancel_cap: int  # largest n given to sched in workloads that cancel (O(n) each)
    churn_pushes: int
    capacities: tuple[int, ...]
    top_n: int
    top_ks: tuple[int, ...]
    memory_n: int
    drain_n: int  # tasks drained with pop_due against next()
    throughput_tasks: int
    throughput_repeat: int
    lateness_tasks: int
    lateness_span: float
    lateness_repeat: int
    # interval series in one pool for a window of seconds, each competitor's turns
    calendar_series: int = 1_000
    calendar_seconds: int = 3
    calendar_repeat: int = 1
    huge_n: int | None = None  # --huge: the composites and memory at this n too


# --huge: the composite workloads and memory also at this n, where a pending
# set's cost per operation shows how it grows past every cache. Only the core
# and heapq, versioned take part in the timed cells: every competitor there
# would take hours of a shared machine.
HUGE_N = 10_000_000


# Quick: about 20 s of CPU on a 2-core machine, enough to see the speedups;
# sched is left out at 10,000 where it cancels (6 s for that one cell).
QUICK = Config(sizes=(1_000, 10_000), budget=0.1, sched_cancel_cap=1_000,
               churn_pushes=100_000, capacities=(100, 1_000, 10_000), top_n=100_000,
               top_ks=(10, 1_000), memory_n=100_000, drain_n=10_000, throughput_tasks=10_000,
               throughput_repeat=2,
               lateness_tasks=2_000, lateness_span=0.25, lateness_repeat=3)

# Full: the sizes the README's figures are quoted at (1,000,000 pushes at
# C = 1,000 and 100,000; a drain of 100,000; 10,000 tasks over one second;
# 1,000,000 pending for memory).
FULL = Config(sizes=(1_000, 10_000, 100_000, 1_000_000), budget=1.0,
              sched_cancel_cap=SCHED_CANCEL_CAP, churn_pushes=1_000_000,
              capacities=(1_000, 10_000, 100_000, 1_000_000), top_n=1_000_000,
              top_ks=(100, 10_000), memory_n=1_000_000, drain_n=100_000,
              throughput_tasks=50_000,
              throughput_repeat=5, lateness_tasks=10_000, lateness_span=1.0, lateness_repeat=3,
              calendar_series=10_000, calendar_seconds=20, calendar_repeat=3)


def custom(sizes: Sequence[int]) -> Config:
    """Every section scaled to ``sizes``, for tests and quick looks: one short repeat each."""
    sizes = tuple(sorted(set(sizes)))
    if not sizes or sizes[0] < 1:
        raise ValueError("sizes must be positive integers")
    largest = sizes[-1]
    # sched's O(n) cancel keeps its cap: uncapped, n = 1,000,000 would run for hours.
    return Config(sizes=sizes, budget=0.0, sched_cancel_cap=min(largest, SCHED_CANCEL_CAP),
                  churn_pushes=largest,
                  capacities=sizes, top_n=largest, top_ks=(max(1, sizes[0] // 10),),
                  memory_n=largest, drain_n=largest, throughput_tasks=largest, throughput_repeat=1,
                  lateness_tasks=min(largest, 1_000), lateness_span=0.05, lateness_repeat=1,
                  calendar_series=min(largest, 1_000), calendar_seconds=1)
