"""The core Scheduler against the pure twin and heapq, versioned, on pysched.bench's workloads.

``pytest benchmarks/test_scheduler_bench.py``; one group per workload and size.
"""

from __future__ import annotations

from typing import Any

import pytest

from pysched.bench.workloads import WORKLOADS, Workload, noop

SIZES = [1_000, 100_000]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.key)
def test_scheduler(benchmark: Any, impl: Any, workload: Workload, n: int) -> None:
    benchmark.group = f"scheduler {workload.title} n={n:,}"
    run = workload.build(impl.Scheduler, impl.drain, n, 0, [noop] * n)
    ops = benchmark.pedantic(run, rounds=5 if n < 100_000 else 2, warmup_rounds=1)
    benchmark.extra_info["ops"] = ops
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["ns_per_op"] = benchmark.stats.stats.median * 1e9 / ops
