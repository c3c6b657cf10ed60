"""StableBoundedPriorityQueue against the pure twin and heapq, two heaps: churn and top-k.

The workloads are pysched.bench.bounded_workloads', as in ``python -m pysched.bench``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pysched.bench.bounded_workloads import churn, top_k

PUSHES = 100_000


@pytest.mark.parametrize("capacity", [1_000, 100_000])
def test_churn(benchmark: Any, impl: Any, capacity: int) -> None:
    benchmark.group = f"bounded-queue churn C={capacity:,}, {PUSHES:,} pushes"
    run = churn(impl.StableBoundedPriorityQueue, capacity, PUSHES, 0)
    ops = benchmark.pedantic(run, rounds=3, warmup_rounds=1)
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["ns_per_op"] = benchmark.stats.stats.median * 1e9 / ops


@pytest.mark.parametrize("k", [100, 10_000])
def test_top_k(benchmark: Any, impl: Any, k: int) -> None:
    benchmark.group = f"bounded-queue top-{k:,} of {PUSHES:,}"
    best = benchmark.pedantic(top_k(impl.StableBoundedPriorityQueue, k, PUSHES, 1),
                              rounds=3, warmup_rounds=1)
    assert len(best) == k
