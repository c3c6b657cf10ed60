"""ThreadPoolScheduler on the Cython core against the pure twin: due no-op tasks.

One pool of 4 workers per test, reused by every round; a round submits (or
schedules, with ids and versions) ``TASKS`` no-ops and waits for them all,
with pysched.bench.runtime_workloads' drain functions.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pysched.bench.runtime_workloads import cores, drain_schedule, drain_submit
from pysched.threadpool import ThreadPoolScheduler

TASKS = 10_000


@pytest.fixture
def pool(impl: Any) -> Iterator[ThreadPoolScheduler]:
    if impl.Scheduler not in cores().values():  # a baseline heap, not a core a pool can run on
        pytest.skip("a ThreadPoolScheduler runs on pysched's cores only")
    with ThreadPoolScheduler(4, _core_factory=impl.Scheduler) as executor:
        yield executor


def test_submit(benchmark: Any, pool: ThreadPoolScheduler) -> None:
    benchmark.group = f"threadpool submit, {TASKS:,} due no-ops, 4 workers"
    benchmark.pedantic(drain_submit, args=(pool, TASKS), rounds=5, warmup_rounds=1)


def test_schedule(benchmark: Any, pool: ThreadPoolScheduler) -> None:
    benchmark.group = f"threadpool schedule, {TASKS:,} due no-ops with ids, 4 workers"
    benchmark.pedantic(drain_schedule, args=(pool, TASKS), rounds=5, warmup_rounds=1)
