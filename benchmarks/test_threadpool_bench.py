"""ThreadPoolScheduler on the Cython core against the pure twin: due no-op tasks.

One pool of 4 workers per test, reused by every round; a round submits (or
schedules, with ids and versions) ``TASKS`` no-ops and waits for them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pysched.threadpool import ThreadPoolScheduler

TASKS = 10_000


def noop() -> None:
    pass


@pytest.fixture
def pool(impl: Any) -> Iterator[ThreadPoolScheduler]:
    with ThreadPoolScheduler(4, _core_factory=impl.Scheduler) as executor:
        yield executor


def test_submit(benchmark: Any, pool: ThreadPoolScheduler) -> None:
    benchmark.group = f"threadpool submit, {TASKS:,} due no-ops, 4 workers"

    def run() -> None:
        for future in [pool.submit(noop) for _ in range(TASKS)]:
            future.result()

    benchmark.pedantic(run, rounds=5, warmup_rounds=1)


def test_schedule(benchmark: Any, pool: ThreadPoolScheduler) -> None:
    benchmark.group = f"threadpool schedule, {TASKS:,} due no-ops with ids, 4 workers"
    clock = pool.clock

    def run() -> None:
        for future in [pool.schedule(k, clock(), 0, noop) for k in range(TASKS)]:
            future.result()

    benchmark.pedantic(run, rounds=5, warmup_rounds=1)
