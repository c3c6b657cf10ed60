"""StableBoundedPriorityQueue: the Cython core against heapq, two heaps, the twin and SortedList.

The workloads (``churn``, ``top_k``) live in pysched.bench.bounded_workloads
and the baselines in pysched.bench.bounded_baselines, which ``python -m
pysched.bench`` runs too; this script is their stand-alone report at one size.

Run: ``python benchmarks/bench_bounded_queue.py [n_pushes] [repeats]``
(defaults 1,000,000 and 3). Each figure is the least CPU time of this process
over the repeats, after a warm-up: on a shared machine wall time also counts
the other processes' turns (at a load of 8 on 2 cores a wall-clock median
swung by 3x between runs), which CPU time mostly does not.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable

from pysched.bench.bounded import TWO_HEAPS, queue_competitors
from pysched.bench.bounded_workloads import churn, churn_priorities, churn_queue, top_k
from pysched.bench.competitors import CORE


def cpu_seconds(run: Callable[[], object], repeats: int) -> float:
    """The least CPU time of ``repeats`` calls of ``run``, after one warm-up call."""
    run()
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def main(n_pushes: int = 1_000_000, repeats: int = 3) -> None:
    impls = {key: (label, cls) for key, label, cls in queue_competitors()}
    if CORE not in impls:
        print("no compiled core: no speedups")
    if "sorted" not in impls:
        print("sortedcontainers not installed: no SortedList baseline")
    priorities = churn_priorities(n_pushes, 0)
    for capacity in (1_000, 100_000):
        # Every implementation must end in the same state before its time counts.
        snapshots = {key: churn_queue(cls, capacity, priorities).snapshot()
                     for key, (_, cls) in impls.items()}
        assert all(s == snapshots["py"] for s in snapshots.values()), "implementations disagree"
        times = {key: cpu_seconds(churn(cls, capacity, n_pushes, 0), repeats)
                 for key, (_, cls) in impls.items()}
        print(f"churn  C={capacity:>7,} n={n_pushes:,}: " + "  ".join(
            f"{impls[key][0]} {seconds:.3f}s" for key, seconds in times.items()))
        if CORE in times:
            print(f"       pysched is {times[TWO_HEAPS] / times[CORE]:.1f}x heapq, two heaps"
                  f" and {times['py'] / times[CORE]:.1f}x the pure twin")
    for k in (100, 10_000):
        runs = {label: top_k(cls, k, n_pushes, 1) for label, cls in impls.values()}
        runs["heapq.nsmallest"] = top_k(None, k, n_pushes, 1)
        assert len({tuple(run()) for run in runs.values()}) == 1, "top-k results disagree"
        print(f"top-k  k={k:>7,} n={n_pushes:,}: " + "  ".join(
            f"{label} {cpu_seconds(run, repeats):.3f}s" for label, run in runs.items()))


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
