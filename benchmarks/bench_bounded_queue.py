"""StableBoundedPriorityQueue: the Cython core against its pure twin and two baselines.

Workloads follow pysched.bench.workloads: a function of (queue class, sizes,
seed) that draws its inputs first and returns a ``run()`` closure, so a timer
measures only queue work; ``run()`` returns the number of operations.

- ``churn``: the issue's full-queue workload: ``n_pushes`` pushes of priorities
  0 to 10,000 (many ties) and one pop after every 10th push.
- ``top_k``: one-shot top-k of a stream, against ``heapq.nsmallest`` (stable,
  but not a container).
``SortedBoundedQueue`` is the obvious alternative built on sortedcontainers.

Run: ``python benchmarks/bench_bounded_queue.py [n_pushes] [repeats]``
(defaults 1,000,000 and 3). Each figure is the least CPU time of this process
over the repeats, after a warm-up: on a shared machine wall time also counts
the other processes' turns (at a load of 8 on 2 cores a wall-clock median
swung by 3x between runs), which CPU time mostly does not.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from pysched._bounded_queue_py import StableBoundedPriorityQueue as PureQueue

MAX_PRIORITY = 10_000
POP_EVERY = 10


def churn_priorities(n_pushes: int, seed: int) -> list[int]:
    """The churn workload's priorities: uniform over 0..MAX_PRIORITY."""
    rng = random.Random(seed)
    return [rng.randint(0, MAX_PRIORITY) for _ in range(n_pushes)]


def churn_queue(queue_cls: type, capacity: int, priorities: list[int]) -> Any:
    """Run the churn workload on a fresh queue and return the queue."""
    queue = queue_cls(capacity)
    push, pop = queue.push, queue.pop
    for i, priority in enumerate(priorities):
        push(priority, i)
        if i % POP_EVERY == POP_EVERY - 1:
            pop()
    return queue


def churn(queue_cls: type, capacity: int, n_pushes: int, seed: int) -> Callable[[], int]:
    """The full-queue churn workload; ``run()`` returns pushes + pops."""
    priorities = churn_priorities(n_pushes, seed)

    def run() -> int:
        churn_queue(queue_cls, capacity, priorities)
        return n_pushes + n_pushes // POP_EVERY

    return run


def top_k(queue_cls: type | None, k: int, n: int, seed: int) -> Callable[[], list[Any]]:
    """The ``k`` best of ``n`` values, best first (``queue_cls=None``: heapq.nsmallest)."""
    rng = random.Random(seed)
    priorities = [rng.randint(0, MAX_PRIORITY) for _ in range(n)]

    def run() -> list[Any]:
        if queue_cls is None:
            # (priority, index) pairs: stable like the queue, values never compared.
            return [i for _, i in heapq.nsmallest(k, zip(priorities, itertools.count()))]
        queue = queue_cls(k)
        push = queue.push
        for i, priority in enumerate(priorities):
            push(priority, i)
        return [value for _, _, value in queue.snapshot()]

    return run


class SortedBoundedQueue:
    """A bounded queue on sortedcontainers.SortedList: the baseline a user would write.

    Same admission rule (full: only a strictly better entry gets in). O(log n)
    push and pop, with larger constants than two heaps.
    """

    def __init__(self, capacity: int) -> None:
        from sortedcontainers import SortedList

        self._capacity = capacity
        self._entries: Any = SortedList()
        self._seq = 0

    def push(self, priority: int, value: Any) -> bool:
        self._seq += 1
        entries = self._entries
        if len(entries) >= self._capacity:
            if not self._capacity or priority >= entries[-1][0]:
                return False
            entries.pop()
        entries.add((priority, self._seq, value))
        return True

    def pop(self) -> Any:
        return self._entries.pop(0)[2]

    def snapshot(self) -> list[tuple[int, int, Any]]:
        return list(self._entries)


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


def _implementations() -> dict[str, type | None]:
    impls: dict[str, type | None] = {}
    try:
        from pysched._core import StableBoundedPriorityQueue as CoreQueue
    except ImportError:
        print("no compiled core: timing the pure twin only")
    else:
        impls["cython"] = CoreQueue
    impls["pure"] = PureQueue
    try:
        import sortedcontainers  # noqa: F401
    except ImportError:
        print("sortedcontainers not installed: no SortedList baseline")
    else:
        impls["sortedlist"] = SortedBoundedQueue
    return impls


def main(n_pushes: int = 1_000_000, repeats: int = 3) -> None:
    impls = _implementations()
    priorities = churn_priorities(n_pushes, 0)
    for capacity in (1_000, 100_000):
        # Every implementation must end in the same state before its time counts.
        snapshots = {name: churn_queue(cls, capacity, priorities).snapshot()
                     for name, cls in impls.items()}
        assert all(s == snapshots["pure"] for s in snapshots.values()), "implementations disagree"
        times = {name: cpu_seconds(churn(cls, capacity, n_pushes, 0), repeats)
                 for name, cls in impls.items()}
        print(f"churn  C={capacity:>7,} n={n_pushes:,}: " + "  ".join(
            f"{name} {seconds:.3f}s" for name, seconds in times.items()))
        if "cython" in times:
            print(f"       cython is {times['pure'] / times['cython']:.1f}x the pure twin")
    for k in (100, 10_000):
        runs = {name: top_k(cls, k, n_pushes, 1) for name, cls in impls.items()}
        runs["heapq.nsmallest"] = top_k(None, k, n_pushes, 1)
        assert len({tuple(run()) for run in runs.values()}) == 1, "top-k results disagree"
        print(f"top-k  k={k:>7,} n={n_pushes:,}: " + "  ".join(
            f"{name} {cpu_seconds(run, repeats):.3f}s" for name, run in runs.items()))


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
