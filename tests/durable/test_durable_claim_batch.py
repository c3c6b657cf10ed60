"""The claim batch grows with the run rate when no prefetch was given, and only then.

The claimer's growth is driven here by a fake clock and fake counts, so the
figures are exact; one end-to-end run checks that a backlog of no-op tasks on
a default scheduler is claimed in batches beyond max_workers + prefetch.
"""

from __future__ import annotations

import pytest

from pysched.durable import DurableScheduler, MemoryStore, NewTask
from pysched.durable._claiming import AUTO_PREFETCH_MAX, AUTO_WAIT, Claimer
from pysched.durable._counters import COUNTERS, Counters
from pysched.durable._inflight import Inflight
from pysched.durable._lifecycle import Lifecycle, Wakeup
from pysched.durable._settings import Settings
from pysched.durable.store import Claim

import support.durable as h


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Claims:
    """The claimer's view of this worker: how many it claimed, how many are in flight."""

    def __init__(self) -> None:
        self.counters = Counters(COUNTERS)
        self.inflight = Inflight()


def claimer(grow: int, lease: float = 30.0) -> tuple[Claimer, Claims, Clock]:
    clock = Clock()
    claims = Claims()
    settings = Settings(owner="me", lease=lease, beat=lease / 3, poll=1.0, resync_every=30.0,
                        max_skew=5.0, cap=4, grow=grow, retention=None, retention_batch=1000,
                        stale_after=300.0)
    c = Claimer(settings, MemoryStore(), routing=None, mirror=None, runs=None,  # type: ignore[arg-type]
                inflight=claims.inflight, lifecycle=Lifecycle(dispatching=True),
                counters=claims.counters, clock=clock, wakeup=Wakeup())
    return c, claims, clock


def finish(claims: Claims, clock: Clock, n: int, seconds: float) -> None:
    claims.counters.add("claimed", n)
    clock.now += seconds


def hold(claims: Claims, n: int) -> None:
    """``n`` claims in flight: claimed, not finished."""
    claims.inflight.claimed([Claim(f"t{i}", 1, 0.0, 0, "note", "", 1, f"token{i}", 1)
                             for i in range(n)], live_until=float("inf"))


def test_the_batch_grows_with_the_rate_claims_are_finished_and_shrinks_when_it_falls() -> None:
    c, claims, clock = claimer(AUTO_PREFETCH_MAX)
    assert c._growth(clock.now) == 0  # no rate measured yet
    finish(claims, clock, 100, AUTO_WAIT)  # 1,000 a second: averaged with 0
    assert c._growth(clock.now) == int(500 * AUTO_WAIT)
    finish(claims, clock, 100, AUTO_WAIT)
    assert c._growth(clock.now) == int(750 * AUTO_WAIT)
    hold(claims, 40)  # claimed, not finished: not counted
    finish(claims, clock, 40, AUTO_WAIT)
    assert c._growth(clock.now) == int(375 * AUTO_WAIT)
    clock.now += AUTO_WAIT / 2  # too soon to measure again: the same answer
    assert c._growth(clock.now) == int(375 * AUTO_WAIT)
    for _ in range(20):  # long tasks: nothing finishes, the batch falls back
        clock.now += 1.0
        c._growth(clock.now)
    assert c._growth(clock.now) == 0


def test_growth_is_bounded_by_grow_and_by_the_lease() -> None:
    c, claims, clock = claimer(10)
    finish(claims, clock, 10_000, AUTO_WAIT)
    assert c._growth(clock.now) == 10
    c, claims, clock = claimer(AUTO_PREFETCH_MAX, lease=0.2)  # a tenth of it: 0.02 s
    finish(claims, clock, 200, AUTO_WAIT)  # 2,000 a second, averaged with 0
    assert c._growth(clock.now) == int(1000 * 0.02)
    c, claims, clock = claimer(0)  # a prefetch was given: never grows
    finish(claims, clock, 10_000, AUTO_WAIT)
    assert c._growth(clock.now) == 0


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
