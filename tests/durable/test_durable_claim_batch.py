"""The claim batch grows with the run rate when no prefetch was given, and only then.

The claimer's growth is driven here by a fake clock and fake counts, so the
figures are exact; one end-to-end run checks that a backlog of no-op tasks on
a default scheduler is claimed in batches beyond max_workers + prefetch.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pysched.durable import DurableScheduler, MemoryStore, NewTask
from pysched.durable._claiming import AUTO_PREFETCH_MAX, AUTO_WAIT, Claimer

import support.durable as h


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def claimer(grow: int, lease: float = 30.0) -> tuple[Claimer, Any, Clock]:
    clock = Clock()
    shared = SimpleNamespace(grow=grow, lease=lease, poll=1.0, clock=clock,
                             counts={"claimed": 0}, inflight={})
    return Claimer(shared, None, None), shared, clock  # type: ignore[arg-type]


def finish(shared: Any, clock: Clock, n: int, seconds: float) -> None:
    shared.counts["claimed"] += n
    clock.now += seconds


def test_the_batch_grows_with_the_rate_claims_are_finished_and_shrinks_when_it_falls() -> None:
    c, shared, clock = claimer(AUTO_PREFETCH_MAX)
    assert c._growth() == 0  # no rate measured yet
    finish(shared, clock, 100, AUTO_WAIT)  # 1,000 a second: averaged with 0
    assert c._growth() == int(500 * AUTO_WAIT)
    finish(shared, clock, 100, AUTO_WAIT)
    assert c._growth() == int(750 * AUTO_WAIT)
    shared.inflight = dict.fromkeys(range(40))  # claimed, not finished: not counted
    finish(shared, clock, 40, AUTO_WAIT)
    assert c._growth() == int(375 * AUTO_WAIT)
    clock.now += AUTO_WAIT / 2  # too soon to measure again: the same answer
    assert c._growth() == int(375 * AUTO_WAIT)
    for _ in range(20):  # long tasks: nothing finishes, the batch falls back
        clock.now += 1.0
        c._growth()
    assert c._growth() == 0


def test_growth_is_bounded_by_grow_and_by_the_lease() -> None:
    c, shared, clock = claimer(10)
    finish(shared, clock, 10_000, AUTO_WAIT)
    assert c._growth() == 10
    c, shared, clock = claimer(AUTO_PREFETCH_MAX, lease=0.2)  # a tenth of it: 0.02 s
    finish(shared, clock, 200, AUTO_WAIT)  # 2,000 a second, averaged with 0
    assert c._growth() == int(1000 * 0.02)
    c, shared, clock = claimer(0)  # a prefetch was given: never grows
    finish(shared, clock, 10_000, AUTO_WAIT)
    assert c._growth() == 0


@pytest.mark.parametrize(("prefetch", "grows"), [(None, True), (2, False)])
def test_a_backlog_of_short_tasks_is_claimed_in_batches_beyond_the_prefetch(
        prefetch: int | None, grows: bool) -> None:
    h.reset()
    store = MemoryStore()
    n = 3000
    store.schedule([NewTask(f"t{i}", 0.0, 0, "note", '{"args":[],"kwargs":{}}')
                    for i in range(n)])
    s = DurableScheduler(store, max_workers=2, prefetch=prefetch, poll_interval=0.05)
    try:
        h.wait_for(lambda: store.counts() == {"completed": n}, 60, "every task completed")
        rounds = s.stats()["claim_rounds"]
    finally:
        s.close()
    # 4 at most per round without growth; a grown batch takes many more.
    assert (rounds < n / 4) == grows, rounds
