"""The dispatcher on a FakeClock: waits, wake-ups, claims, the worker cap, clock jumps.

``clock.wait_for_sleeper(t)`` returns once some pool thread waits for time
``t``: that is how these tests know the dispatcher reached its wait before
they act, so each case runs the same way every time.
"""

from __future__ import annotations

import random
import threading

import pytest

from pysched import current_token
from pysched.testing import FakeClock

from support.pool import WAIT, Concurrency, Gate


def test_an_earlier_task_interrupts_the_wait(make_pool, clock):
    pool = make_pool(1)
    ran = []
    late = pool.schedule("late", 10.0, 0, ran.append, ("late",))
    clock.wait_for_sleeper(10.0)
    early = pool.schedule("early", 5.0, 0, ran.append, ("early",))
    clock.wait_for_sleeper(5.0)  # woken at once, without any time passing
    assert clock() == 0.0 and ran == []
    clock.advance(5.0)
    early.result(WAIT)
    assert ran == ["early"] and not late.done()
    clock.wait_for_sleeper(10.0)
    clock.advance(5.0)
    late.result(WAIT)
    assert ran == ["early", "late"]


def test_a_cancel_wakes_the_dispatcher_to_the_next_head(make_pool, clock):
    pool = make_pool(1)
    pool.schedule("first", 5.0, 0, print)
    second = pool.schedule("second", 8.0, 0, abs, (-8,))
    clock.wait_for_sleeper(5.0)
    pool.cancel("first")
    clock.wait_for_sleeper(8.0)  # woken at once: it now waits for the new head
    assert clock() == 0.0 and not second.done()
    clock.advance(8.0)
    assert second.result(WAIT) == 8


def test_nothing_runs_early(make_pool, clock):
    pool = make_pool(2)
    fut = pool.schedule("a", 1.0, 0, clock)
    for step in (0.5, 0.25, 0.25 - 2**-20):  # exact binary fractions: 1 - 2**-20 at the end
        clock.wait_for_sleeper(1.0)
        clock.advance(step)
    clock.wait_for_sleeper(1.0)
    assert not fut.done() and clock() < 1.0
    clock.advance(2**-20)
    assert fut.result(WAIT) == 1.0


def test_cancel_just_before_the_claim(make_pool, clock):
    pool = make_pool(1)
    ran = []
    fut = pool.schedule("a", 5.0, 0, ran.append, ("a",))
    clock.wait_for_sleeper(5.0)  # the dispatcher is about to claim it at 5
    assert pool.cancel("a")
    probe = pool.schedule("probe", 5.0, 0, ran.append, ("probe",))
    clock.advance(5.0)
    probe.result(WAIT)
    assert ran == ["probe"] and fut.cancelled()


def test_cancel_just_after_the_claim(make_pool, clock):
    pool = make_pool(1)
    gate = Gate()
    fut = pool.schedule("a", 5.0, 0, gate, ("ran",))
    clock.advance(5.0)
    gate.wait_started()
    assert pool.cancel("a")  # running: only its token is set
    assert not fut.cancelled()
    gate.release()
    assert fut.result(WAIT) == "ran"
    assert pool.cancel("a") is False


def test_replacement_while_the_old_version_runs(make_pool, clock):
    pool = make_pool(2)
    gate = Gate()
    ran = []
    v1 = pool.schedule("job", 0.0, 0, gate, ("v1",))
    gate.wait_started()
    v2 = pool.schedule("job", 0.0, 0, ran.append, ("v2",))
    # a free worker runs other work but not v2: one version of an id at a time
    assert pool.submit(ran.append, "other").result(WAIT) is None
    assert ran == ["other"] and not v2.running() and not v2.done()
    assert pool.stats()["pending"] == 1
    gate.release()
    assert v1.result(WAIT) == "v1"
    v2.result(WAIT)
    assert ran == ["other", "v2"] and (v1.version, v2.version) == (1, 2)


@pytest.mark.parametrize("max_workers", [1, 4])
def test_the_worker_cap_holds_under_10000_tasks(make_pool, clock, max_workers):
    pool = make_pool(max_workers)
    seen = Concurrency()
    rng = random.Random(max_workers)

    def body():
        seen.enter()
        seen.leave()

    # the first max_workers tasks meet at a barrier: the cap is reached, not just respected
    barrier = threading.Barrier(max_workers, timeout=WAIT)

    def meet():
        seen.enter()
        barrier.wait()
        seen.leave()

    futs = [pool.schedule(("meet", n), 0.0, 1, meet) for n in range(max_workers)]
    futs += [pool.schedule(n, rng.random(), 0, body) for n in range(10_000)]
    for _ in range(10):
        clock.advance(0.1)
    clock.advance(0.1)
    for fut in futs:
        fut.result(WAIT)
    stats = pool.stats()
    assert seen.peak == max_workers and stats["peak_running"] == max_workers
    assert stats["completed"] == 10_000 + max_workers


def test_a_clock_that_jumps_forward_runs_everything_due_in_order(make_pool, clock):
    pool = make_pool(1)
    order = []
    futs = [pool.schedule(k, float(k), 0, order.append, (k,)) for k in (7, 3, 9, 1, 5)]
    clock.wait_for_sleeper(1.0)
    clock.advance(1_000_000.0)
    for fut in futs:
        fut.result(WAIT)
    assert order == [1, 3, 5, 7, 9]
    assert pool.stats()["lateness"]["max"] == 1_000_000.0 - 1.0


def test_timeouts_follow_a_jump(make_pool, clock):
    pool = make_pool(1)
    fut = pool.schedule("slow", 0.0, 0, lambda: current_token().wait(), timeout=60.0)
    clock.wait_for_sleeper(60.0)
    clock.advance(3600.0)  # past the deadline: the dispatcher sets the token
    assert isinstance(fut.exception(WAIT), TimeoutError)


def test_many_waiters_share_one_clock(impl):
    # Two pools on one FakeClock: one advance wakes both dispatchers.
    from pysched.threadpool import ThreadPoolScheduler

    shared = FakeClock()
    pools = [ThreadPoolScheduler(1, clock=shared, _core_factory=impl.Scheduler) for _ in range(2)]
    try:
        futs = [pool.schedule("x", 2.0, 0, abs, (-n,)) for n, pool in enumerate(pools)]
        shared.advance(2.0)
        assert [fut.result(WAIT) for fut in futs] == [0, 1]
    finally:
        for pool in pools:
            assert pool.close(wait=True)


def test_fake_clock_basics():
    clock = FakeClock(5)
    assert clock() == 5.0 and clock.now == 5.0 and clock.deadlines() == []
    with pytest.raises(ValueError, match="seconds"):
        clock.advance(-1)
    with pytest.raises(TypeError, match="seconds"):
        clock.advance("1")
    with pytest.raises(TypeError, match="start"):
        FakeClock("0")
    with pytest.raises(TimeoutError, match="no thread waits for 7"):
        clock.wait_for_sleeper(7.0, timeout=0.0)
    cond = threading.Condition()
    with cond:
        clock.wait_until(cond, 5.0)  # already reached: returns at once
    done = threading.Event()

    def sleeper():
        with cond:
            clock.wait_until(cond, 6.0)
        done.set()

    thread = threading.Thread(target=sleeper)
    thread.start()
    clock.wait_for_sleeper(6.0)
    assert clock.deadlines() == [6.0] and "sleepers=1" in repr(clock)
    clock.advance(0.5)
    assert clock.deadlines() == [6.0]  # not reached: not woken
    clock.advance(0.5)
    assert done.wait(WAIT)
    thread.join(WAIT)


def _dispatcher_claims(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record every version the dispatcher claims for another thread."""
    from pysched.pool.threads import PoolThreads

    claimed: list[object] = []
    fill = PoolThreads.fill_handoff

    def recording(self: PoolThreads, now: float) -> float | None:
        before = len(self.handoff)
        hint = fill(self, now)
        if threading.current_thread().name.endswith("-dispatcher"):
            claimed.extend(task.task_id for task, _ in list(self.handoff)[before:])
        return hint

    monkeypatch.setattr(PoolThreads, "fill_handoff", recording)
    return claimed


def test_a_free_worker_times_the_head_and_claims_it_itself(make_pool, clock, monkeypatch):
    """A task coming due starts with one wake-up: the worker that waited for it claims it."""
    claimed = _dispatcher_claims(monkeypatch)
    pool = make_pool(2)
    gate = Gate()
    ran = []
    first = pool.schedule("first", 5.0, 0, gate)
    second = pool.schedule("second", 6.0, 0, ran.append, ("second",))
    third = pool.schedule("third", 7.0, 0, ran.append, ("third",))
    clock.wait_for_sleeper(5.0)
    clock.advance(5.0)
    gate.wait_started()
    clock.wait_for_sleeper(6.0)  # the other worker took over the timing at once
    clock.advance(1.0)
    second.result(WAIT)
    clock.wait_for_sleeper(7.0)  # and then times the next head
    clock.advance(1.0)
    third.result(WAIT)
    gate.release()
    first.result(WAIT)
    assert ran == ["second", "third"]
    assert claimed == []  # the dispatcher handed nothing over


def test_a_due_task_goes_to_the_timing_worker(make_pool, clock, monkeypatch):
    claimed = _dispatcher_claims(monkeypatch)
    pool = make_pool(1)
    later = pool.schedule("later", 9.0, 0, abs, (-9,))
    clock.wait_for_sleeper(9.0)  # the only worker waits for 9
    assert pool.schedule("now", 0.0, 0, abs, (-1,)).result(WAIT) == 1
    clock.wait_for_sleeper(9.0)
    clock.advance(9.0)
    assert later.result(WAIT) == 9
    assert claimed == []
