"""A claimed version starts only while its lease is provably live, and a lost lease fences.

A worker that is paused or starved (a loaded machine, a stopped process) past
its lease must not start a claim it holds, because another worker may have
taken the row meanwhile. Each test drives the clocks by hand (the scheduler's
monotonic clock, and the store's wall clock on which leases are measured) and
holds claimed runs in an executor until the test lets them go: a worker that
picks its claims up late, deterministically.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from typing import Any

import pytest

from pysched import durable
from pysched.durable import Claim, DurableScheduler, MemoryStore, NewTask, Outcome, current_task
from pysched.durable.store import batch_prefix

import support.durable as h
from support.durable import open_spec

ARGS = '{"args":[],"kwargs":{}}'
LEASE = 1000.0  # fake seconds; the heartbeat thread's real-time beat never comes in a test


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class HeldExecutor(Executor):
    """Keeps every submitted run until ``release()``: a worker that picks claims up late."""

    def __init__(self) -> None:
        self.jobs: list[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = []
        self.lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self.lock:
            self.jobs.append((future, fn, args))
        return future

    def held(self) -> int:
        with self.lock:
            return len(self.jobs)

    def release(self) -> None:
        with self.lock:
            jobs, self.jobs = self.jobs, []
        for future, fn, args in jobs:
            future.set_running_or_notify_cancel()
            future.set_result(fn(*args))


@durable.task(name="lease-watch")
def lease_watch(started: str, release: str) -> str:
    """Set ``started``, wait for ``release``; fail if this run's lease was lost meanwhile."""
    running = current_task()
    assert running is not None
    h.event(started).set()
    assert h.event(release).wait(30), "the test never released this task"
    if running.lease_lost:
        raise RuntimeError("finished after its lease was lost")
    return "finished with the lease"


@pytest.fixture
def fixed() -> Iterator[tuple[MemoryStore, Clock, Clock]]:
    """A memory store on a fake wall clock, and the fake monotonic clock for the scheduler."""
    h.reset()
    wall, mono = Clock(1_000_000.0), Clock(50.0)
    yield MemoryStore(clock=wall), wall, mono


def scheduler(store: Any, wall: Clock, mono: Clock, **options: Any) -> DurableScheduler:
    options.setdefault("heartbeat", LEASE - 1)
    return DurableScheduler(store, lease=LEASE, clock=mono, wall_clock=wall,
                            poll_interval=0.02, resync_interval=1000.0, **options)


def done(sched: DurableScheduler, pool: HeldExecutor | None = None) -> None:
    """Let every held run and task go, then close (a failed check must not hang the test)."""
    h.event("release").set()
    if pool is not None:
        pool.release()
    assert sched.close(timeout=30)


def take_over(store: Any, wall: Clock, task_id: str) -> Claim:
    """Another node's view: the lease lapsed (store clock), the row is released, it claims it.
    Repeated while a renewal of the first owner lands in between (it moves the expiry)."""
    for _ in range(1000):
        wall.now += LEASE + 1
        store.requeue_expired()  # or the first node's own housekeeping did it
        claims = store.claim(wall.now, 10, "other", LEASE)
        if claims:
            assert [c.task_id for c in claims] == [task_id]
            return claims[0]  # type: ignore[no-any-return]
    raise AssertionError("the lease was never released")


def test_a_claim_picked_up_after_its_lease_ran_out_is_never_started(
        fixed: tuple[MemoryStore, Clock, Clock]) -> None:
    store, wall, mono = fixed
    pool = HeldExecutor()
    sched = scheduler(store, wall, mono, executor=pool, max_workers=1)
    try:
        sched.schedule("a", mono.now, 0, h.note, ["first"])
        h.wait_for(lambda: pool.held() == 1, what="the claim handed to the pool")
        mono.now += LEASE  # the worker picks the claim up a whole lease later
        theirs = take_over(store, wall, "a")
        pool.release()
        assert h.CALLS == []  # not started here: the other node's run is the only one
        assert sched.stats()["lease_lapsed"] == 1
        h.wait_for(lambda: sched.stats()["not_recorded"] == 1, what="the hand-back refused")
        assert store.get("a")["lease_owner"] == "other"  # the hand-back took nothing from it
        assert store.finish([Outcome(theirs.token, "a", 1, "completed", None)]) == [True]
    finally:
        done(sched, pool)


def test_a_claim_picked_up_within_its_lease_starts(
        fixed: tuple[MemoryStore, Clock, Clock]) -> None:
    """The check refuses only what it must: just before the deadline, the run starts."""
    store, wall, mono = fixed
    pool = HeldExecutor()
    sched = scheduler(store, wall, mono, executor=pool, max_workers=1, heartbeat=LEASE / 3)
    try:
        sched.schedule("a", mono.now, 0, h.note, ["first"])
        h.wait_for(lambda: pool.held() == 1, what="the claim handed to the pool")
        # Trusted for the lease less half the gap between a heartbeat and the lease.
        mono.now += LEASE - (LEASE - LEASE / 3) / 2 - 1
        pool.release()
        assert h.CALLS == [("a", "first")]
        h.wait_for(lambda: store.get("a")["state"] == "completed", what="its outcome stored")
        assert sched.stats()["lease_lapsed"] == 0
    finally:
        done(sched, pool)


def test_a_claim_whose_renewal_found_the_lease_gone_is_never_started(
        fixed: tuple[MemoryStore, Clock, Clock]) -> None:
    """The local clock says the lease is young, but the store says another node has it
    (the store's clock ran on, as a database server's does while this host is stalled):
    the heartbeat's renewal returns without it, so the run never starts."""
    store, wall, mono = fixed
    pool = HeldExecutor()
    sched = scheduler(store, wall, mono, executor=pool, max_workers=1, heartbeat=0.01)
    try:
        sched.schedule("a", mono.now, 0, h.note, ["first"])
        h.wait_for(lambda: pool.held() == 1, what="the claim handed to the pool")
        take_over(store, wall, "a")
        h.wait_for(lambda: sched.stats()["leases_lost"] == 1, what="the renewal to miss it")
        pool.release()
        assert h.CALLS == []
        assert sched.stats()["lease_lapsed"] == 1
        assert store.get("a")["lease_owner"] == "other"
    finally:
        done(sched, pool)


def test_a_run_that_outlives_its_lease_learns_it_and_its_outcome_is_fenced_off(
        fixed: tuple[MemoryStore, Clock, Clock]) -> None:
    """At-least-once: a run already going when its lease is lost runs on (nothing can stop
    a thread); the other node runs the version again. The late finisher sees
    ``lease_lost`` and its outcome changes nothing of the other run's."""
    store, wall, mono = fixed
    sched = scheduler(store, wall, mono, max_workers=1, heartbeat=0.01)
    pool = None
    try:
        sched.schedule("a", mono.now, 0, lease_watch, ["started", "release"])
        assert h.event("started").wait(30)
        theirs = take_over(store, wall, "a")
        assert theirs.attempts == 2
        assert store.finish([Outcome(theirs.token, "a", 1, "completed", None)]) == [True]
        h.wait_for(lambda: sched.stats()["leases_lost"] == 1, what="the renewal to miss it")
        h.event("release").set()
        h.wait_for(lambda: sched.stats()["not_recorded"] == 1, what="the late outcome refused")
        row = store.get("a")
        assert (row["state"], row["error"], row["lease_owner"]) == ("completed", None, None)
        assert sched.stats()["failed"] == 0
    finally:
        done(sched, pool)


def test_a_late_finish_never_overwrites_the_run_that_took_over(
        store_spec: dict[str, Any]) -> None:
    """Finishing is fenced by the claim's token on every store: a worker whose lease
    lapsed records nothing, whether the row was taken over and finished, taken over
    and running, or only released (then it runs again: at-least-once)."""
    store = open_spec(store_spec)
    ids = ("finished", "running", "released")
    try:
        store.schedule([NewTask(i, 100.0, 0, "note", ARGS) for i in ids])
        late = store.claim(1e9, 10, "late", -1.0)  # leases already expired
        assert sorted(store.requeue_expired()) == sorted(ids)
        taken = {c.task_id: c for c in store.claim(1e9, 2, "other", 3600.0)}
        assert sorted(taken) == ["finished", "running"]  # in claim order, two of them
        assert store.finish([Outcome(taken["finished"].token, "finished", 1, "completed",
                                     None)]) == [True]
        failed = [Outcome(c.token, c.task_id, c.version, "failed", "late") for c in late]
        assert store.finish(failed) == [False, False, False]
        finished, running, released = (store.get(i) for i in ids)
        assert (finished["state"], finished["error"]) == ("completed", None)
        assert (running["state"], running["lease_owner"], running["error"]) == (
            "running", "other", None)
        assert (released["state"], released["lease_owner"]) == ("pending", None)
        assert store.heartbeat("late", 3600.0, [c.token for c in late]) == []  # all lost
    finally:
        store.close()


def test_release_batch_hands_back_only_that_batch_unrun(store_spec: dict[str, Any]) -> None:
    store = open_spec(store_spec)
    try:
        store.schedule([NewTask(i, 100.0, 0, "note", ARGS) for i in ("a", "b", "c", "d")])
        batch = batch_prefix("w")
        lost = store.claim(1e9, 2, "w", 3600.0, None, batch)
        kept = store.claim(1e9, 1, "w", 3600.0)  # another batch of the same owner
        theirs = store.claim(1e9, 1, "x", 3600.0)
        assert all(c.token.startswith(batch + ":") for c in lost)
        assert store.release_batch("x", batch) == []  # only the owner's leases
        assert sorted(store.release_batch("w", batch)) == ["a", "b"]
        for task_id in ("a", "b"):
            row = store.get(task_id)
            assert (row["state"], row["attempts"], row["lease_owner"]) == ("pending", 0, None)
        assert store.get(kept[0].task_id)["lease_owner"] == "w"
        assert store.get(theirs[0].task_id)["lease_owner"] == "x"
        again = store.claim(1e9, 10, "y", 3600.0)  # claimable at once, as first attempts
        assert [(c.task_id, c.attempts) for c in again] == [("a", 1), ("b", 1)]
        assert store.release_batch("w", batch) == []
    finally:
        store.close()


def test_a_claim_that_fails_after_leasing_releases_its_rows_at_once(
        store_spec: dict[str, Any]) -> None:
    """The database leased the rows, then the claim raised (its answer lost or unreadable):
    the claimer releases that batch instead of leaving it to a lease that never ends here."""
    h.reset()
    store = open_spec(store_spec)
    real_claim = store.claim
    failures = []

    def claim_then_fail(*args: Any) -> list[Claim]:
        claims = real_claim(*args)
        if not failures:
            failures.append([c.task_id for c in claims])
            raise ConnectionError("the answer was lost after the commit")
        return claims

    store.claim = claim_then_fail  # type: ignore[method-assign]
    sched = DurableScheduler(store, lease=3600.0, poll_interval=0.02, max_workers=2)
    try:
        sched.schedule_many([(f"t{i}", sched.clock(), 0, h.note, [i]) for i in range(3)])
        h.wait_for(lambda: store.counts() == {"completed": 3}, what="every task run")
        assert failures and failures[0]  # the failed claim had leased rows
        assert sorted(c[0] for c in h.CALLS) == ["t0", "t1", "t2"]
        assert all(store.get(f"t{i}")["attempts"] == 1 for i in range(3))  # given back
    finally:
        sched.close()
        store.close()


@pytest.mark.parametrize(("lease", "beat", "trusted"), [
    (30.0, 10.0, 20.0),  # the default heartbeat: both bounds agree
    (2.0, 0.5, 1.0),  # two heartbeats: a same-owner restart would release it after that
    (10.0, 9.0, 9.5),  # a heartbeat near the lease: halfway from the next renewal to expiry
])
def test_how_long_a_lease_is_trusted_after_its_statement_was_sent(
        lease: float, beat: float, trusted: float) -> None:
    sched = DurableScheduler(MemoryStore(), max_workers=0, lease=lease, heartbeat=beat)
    try:
        assert sched._s.live_until(100.0) == 100.0 + trusted
    finally:
        sched.close()
