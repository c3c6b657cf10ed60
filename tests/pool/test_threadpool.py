"""ThreadPoolScheduler basics: the Executor API, Futures, versions, tokens, stats, bad input.

Every test runs on both cores (``impl``) and on a FakeClock, so nothing sleeps.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math
import threading

import pytest

import pysched
from pysched import SchedulerClosed, SchedulerFull, TaskCancelled, TaskTimeout
from pysched.testing import FakeClock
from pysched.threadpool import ThreadPoolScheduler

from support.pool import WAIT, Gate, accounted


def test_submit_runs_now_and_returns_a_future(make_pool):
    pool = make_pool()
    fut = pool.submit(pow, 2, exp=10)
    assert isinstance(fut, cf.Future)
    assert fut.result(WAIT) == 1024
    assert fut.task_id is fut and fut.version == 1
    stats = pool.stats()
    assert stats["completed"] == 1 and stats["pending"] == 0 and stats["running"] == 0


def test_map_and_context_manager(impl, clock):
    with ThreadPoolScheduler(3, clock=clock, _core_factory=impl.Scheduler) as pool:
        assert list(pool.map(abs, range(-5, 0))) == [5, 4, 3, 2, 1]
        futs = [pool.submit(str, n) for n in range(50)]
    # __exit__ is shutdown(wait=True): the pending work ran first, as ThreadPoolExecutor does
    assert [f.result(0) for f in futs] == [str(n) for n in range(50)]
    assert pool.state == "closed"


def test_schedule_waits_for_run_at_and_keeps_order(make_pool, clock):
    pool = make_pool(1)
    order = []
    gate = Gate()
    pool.schedule("gate", 0.0, 0, gate)
    gate.wait_started()
    # while the only worker is busy: same run_at orders by priority, then FIFO
    futs = [pool.schedule(name, run_at, prio, order.append, (name,))
            for name, run_at, prio in [("late", 2.0, 9), ("low", 1.0, -1), ("high", 1.0, 5),
                                        ("tie1", 1.0, 0), ("tie2", 1.0, 0)]]
    clock.advance(1.0)
    gate.release()
    for fut in futs[1:]:
        fut.result(WAIT)
    assert order == ["high", "tie1", "tie2", "low"]
    assert not futs[0].done() and pool.stats()["pending"] == 1
    clock.advance(1.0)
    futs[0].result(WAIT)
    assert order[-1] == "late"


def test_schedule_in_is_relative_to_the_clock(make_pool, clock):
    pool = make_pool()
    clock.advance(100.0)
    fut = pool.schedule_in("x", 2.5, 0, clock)
    clock.wait_for_sleeper(102.5)
    assert not fut.done()
    clock.advance(2.5)
    assert fut.result(WAIT) == 102.5


def test_replacing_a_pending_version_cancels_its_future(make_pool, clock):
    pool = make_pool()
    ran = []
    first = pool.schedule("job", 5.0, 0, ran.append, (1,))
    second = pool.schedule("job", 6.0, 0, ran.append, (2,))
    assert first.cancelled() and first.cancel_reason == "replaced"
    assert (first.version, second.version) == (1, 2)
    clock.advance(6.0)
    second.result(WAIT)
    assert ran == [2]
    assert pool.stats()["replaced"] == 1


def test_future_cancel_on_a_pending_version_removes_it(make_pool, clock):
    pool = make_pool(1)
    ran = []
    fut = pool.schedule("a", 1.0, 0, ran.append, ("a",))
    assert fut.cancel() and fut.cancelled() and fut.cancel_reason == "cancelled"
    assert fut.cancel()  # idempotent
    after = pool.schedule("b", 1.0, 0, ran.append, ("b",))
    clock.advance(1.0)
    after.result(WAIT)
    assert ran == ["b"]
    stats = pool.stats()
    assert stats["cancelled"] == 1 and stats["pending"] == 0
    with pytest.raises(cf.CancelledError):
        fut.result(0)


def test_future_cancel_on_a_running_version_is_refused(make_pool):
    pool = make_pool()
    gate = Gate()
    fut = pool.submit(gate, "done")
    gate.wait_started()
    assert not fut.cancel() and fut.running()
    gate.release()
    assert fut.result(WAIT) == "done"


def test_cancel_by_id(make_pool, clock):
    pool = make_pool()
    fut = pool.schedule("a", 1.0, 0, print)
    assert pool.cancel("a") is True
    assert fut.cancelled() and fut.cancel_reason == "cancelled"
    assert pool.cancel("a") is False and pool.cancel("never") is False


def test_cancel_running_sets_the_token_and_waits_for_the_return(make_pool):
    pool = make_pool()
    seen = {}
    started = threading.Event()

    def body():
        token = pysched.current_token()
        started.set()
        seen["woke"] = token.wait()
        seen["reason"] = token.reason
        return "returned anyway"

    fut = pool.schedule("a", 0.0, 0, body)
    assert started.wait(WAIT)
    assert pool.cancel("a") is True
    # completion is reported only when fn returns: the Future gets what it returned
    assert fut.result(WAIT) == "returned anyway"
    assert seen == {"woke": True, "reason": "cancelled"}
    assert pool.stats()["completed"] == 1


def test_raise_if_cancelled_fails_the_future(make_pool):
    pool = make_pool()
    started = threading.Event()

    def body():
        token = pysched.current_token()
        started.set()
        token.wait()
        token.raise_if_cancelled()

    fut = pool.schedule("a", 0.0, 0, body)
    assert started.wait(WAIT)
    pool.cancel("a")
    assert isinstance(fut.exception(WAIT), TaskCancelled)
    assert fut.exception().reason == "cancelled"
    assert pool.stats()["failed"] == 1


def test_token_callbacks_run_once_outside_the_lock(make_pool):
    pool = make_pool()
    started = threading.Event()
    calls = []

    def body():
        token = pysched.current_token()
        # a callback may call back into the scheduler: it runs outside its lock
        token.add_callback(lambda: calls.append(pool.stats()["running"]))
        started.set()
        token.wait()

    fut = pool.schedule("a", 0.0, 0, body)
    assert started.wait(WAIT)
    pool.cancel("a")
    pool.cancel("a")
    fut.result(WAIT)
    assert calls == [1]


def test_current_token_outside_a_task_raises():
    with pytest.raises(RuntimeError, match="outside a pysched task"):
        pysched.current_token()


def test_fn_raising_fails_its_future_and_the_worker_survives(make_pool):
    pool = make_pool(1)
    bad = pool.submit(int, "not a number")
    assert isinstance(bad.exception(WAIT), ValueError)

    def exits():
        raise SystemExit(3)

    fatal = pool.submit(exits)
    assert isinstance(fatal.exception(WAIT), SystemExit)
    assert pool.submit(sum, (1, 2)).result(WAIT) == 3  # the one worker is still there
    stats = pool.stats()
    assert (stats["failed"], stats["completed"]) == (2, 1)


def test_done_callback_that_raises_is_logged(make_pool, caplog):
    pool = make_pool(1)
    fut = pool.submit(int, "7")
    with caplog.at_level(logging.ERROR):
        fut.add_done_callback(lambda f: 1 / 0)
        assert fut.result(WAIT) == 7
        assert pool.submit(int, "8").result(WAIT) == 8
    assert any(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in caplog.records)


def test_timeout_sets_the_token_and_fails_the_future(make_pool, clock):
    pool = make_pool()
    started = threading.Event()

    def body():
        token = pysched.current_token()
        started.set()
        token.wait()
        return token.reason

    fut = pool.schedule("slow", 0.0, 0, body, timeout=5.0)
    assert started.wait(WAIT)
    clock.wait_for_sleeper(5.0)  # the dispatcher times the run
    clock.advance(5.0)
    exc = fut.exception(WAIT)
    assert isinstance(exc, TaskTimeout) and isinstance(exc, TimeoutError)
    assert pool.stats()["timed_out"] == 1


def test_timeout_reason_reaches_raise_if_cancelled(make_pool, clock):
    pool = make_pool()
    started = threading.Event()

    def body():
        started.set()
        token = pysched.current_token()
        token.wait()
        token.raise_if_cancelled()

    fut = pool.schedule("slow", 0.0, 0, body, timeout=1.0)
    assert started.wait(WAIT)
    clock.advance(1.0)
    exc = fut.exception(WAIT)
    assert isinstance(exc, TaskTimeout) and isinstance(exc.__cause__, TaskTimeout)


def test_a_task_finishing_before_its_timeout_is_not_timed_out(make_pool, clock):
    pool = make_pool()
    fut = pool.schedule("quick", 0.0, 0, abs, (-1,), timeout=1.0)
    assert fut.result(WAIT) == 1
    clock.advance(2.0)
    probe = pool.submit(abs, -2)
    assert probe.result(WAIT) == 2
    assert pool.stats()["timed_out"] == 0


def test_token_wait_runs_on_the_fake_clock(make_pool, clock):
    pool = make_pool()

    def body():
        return pysched.current_token().wait(3.0)

    fut = pool.schedule("a", 0.0, 0, body)
    clock.wait_for_sleeper(3.0)
    assert not fut.done()
    clock.advance(3.0)
    assert fut.result(WAIT) is False


def test_stats_account_for_every_version(make_pool, clock):
    pool = make_pool(1)
    gate = Gate()
    pool.schedule("gate", 0.0, 0, gate)
    gate.wait_started()
    pool.schedule("a", 1.0, 0, print)
    pool.schedule("a", 2.0, 0, print)  # replaces
    pool.schedule("b", 1.0, 0, print).cancel()
    pool.schedule("c", 9.0, 0, print)
    stats = pool.stats()
    assert stats["scheduled"] == 5 == accounted(stats)
    assert (stats["pending"], stats["running"]) == (2, 1)
    assert (stats["replaced"], stats["cancelled"]) == (1, 1)
    gate.release()


def test_lateness_is_start_minus_run_at_on_the_clock(make_pool, clock):
    pool = make_pool(1)
    futs = [pool.schedule(k, float(k), 0, abs, (k,)) for k in range(1, 11)]
    clock.advance(100.0)
    for fut in futs:
        fut.result(WAIT)
    lateness = pool.stats()["lateness"]
    assert lateness["count"] == 10
    assert lateness["max"] == 99.0 and lateness["p50"] == 94.0 and lateness["p99"] == 99.0


def test_lateness_reservoir_stays_bounded(make_pool):
    pool = make_pool(1, lateness_samples=8)
    for fut in [pool.submit(abs, -n) for n in range(100)]:
        fut.result(WAIT)
    assert pool.stats()["lateness"]["count"] == 100 and len(pool._book.lateness._samples) == 8


def test_backpressure_reject(make_pool):
    pool = make_pool(max_pending=2)
    pool.schedule("a", 5.0, 0, print)
    pool.schedule("b", 5.0, 0, print)
    with pytest.raises(SchedulerFull, match="max_pending=2"):
        pool.schedule("c", 5.0, 0, print)
    pool.schedule("a", 6.0, 1, print)  # replacing needs no room
    stats = pool.stats()
    assert (stats["pending"], stats["rejected"], stats["scheduled"]) == (2, 1, 3)


def test_aging_lets_a_long_waiting_task_outrank_a_newer_higher_one(make_pool, clock):
    # One worker, busy; "low" waits 10 s, then "high" (5 levels up) arrives for
    # the same run_at. With 1 s per level, low's effective priority is 10 > 5.
    order = []
    for aging, expected in [(1.0, ["low", "high"]), (None, ["high", "low"])]:
        pool = make_pool(1, aging=aging)
        gate = Gate()
        pool.schedule("gate", 0.0, 0, gate)
        gate.wait_started()
        pool.schedule("low", 0.0, 0, order.append, ("low",))
        clock.advance(10.0)
        last = pool.schedule("high", 0.0, 5, order.append, ("high",))
        gate.release()
        last.result(WAIT)
        pool.close()
        assert order == expected
        order.clear()


def test_aging_bounds_priorities(make_pool):
    pool = make_pool(aging=1.0)
    with pytest.raises(OverflowError, match="priority"):
        pool.schedule("a", 0.0, 2**41, print)
    assert pool.stats()["scheduled"] == 0


# -- bad input: TypeError/ValueError/OverflowError naming the argument, nothing changed ---


@pytest.mark.parametrize("args, error, name", [
    ((["unhashable"], 1.0, 0, print), TypeError, "task_id"),
    (("a", math.nan, 0, print), ValueError, "run_at"),
    (("a", math.inf, 0, print), ValueError, "run_at"),
    (("a", "soon", 0, print), TypeError, "run_at"),
    (("a", 1.0, 1.5, print), TypeError, "priority"),
    (("a", 1.0, "high", print), TypeError, "priority"),
    (("a", 1.0, 2**63, print), OverflowError, "priority"),
    (("a", 1.0, 0, "print"), TypeError, "fn"),
    (("a", 1.0, 0, print, 5), TypeError, "args"),
    (("a", 1.0, 0, print, "ab"), TypeError, "args"),
    (("a", 1.0, 0, print, (), [1]), TypeError, "kwargs"),
])
def test_schedule_rejects_bad_input(make_pool, args, error, name):
    pool = make_pool()
    with pytest.raises(error, match=name):
        pool.schedule(*args)
    assert pool.stats()["scheduled"] == 0 and pool.stats()["pending"] == 0


@pytest.mark.parametrize("timeout, error", [(0, ValueError), (-1, ValueError),
                                            (math.inf, ValueError), ("1", TypeError)])
def test_schedule_rejects_bad_timeouts(make_pool, timeout, error):
    pool = make_pool()
    with pytest.raises(error, match="timeout"):
        pool.schedule("a", 1.0, 0, print, timeout=timeout)
    assert pool.stats()["scheduled"] == 0


def test_other_methods_reject_bad_input(make_pool):
    pool = make_pool()
    with pytest.raises(ValueError, match="delay"):
        pool.schedule_in("a", -1.0, 0, print)
    with pytest.raises(TypeError, match="task_id"):
        pool.cancel({})
    with pytest.raises(TypeError, match="fn"):
        pool.submit(42)
    with pytest.raises(ValueError, match="interval"):
        pool.schedule_every("a", 0.0, 0, print)
    with pytest.raises(ValueError, match="mode"):
        pool.schedule_every("a", 1.0, 0, print, mode="sometimes")
    with pytest.raises(ValueError, match="overlap"):
        pool.schedule_every("a", 1.0, 0, print, overlap="pile")
    with pytest.raises(ValueError, match="on_error"):
        pool.schedule_every("a", 1.0, 0, print, on_error="ignore")
    with pytest.raises(TypeError, match="start_at"):
        pool.schedule_every("a", 1.0, 0, print, start_at="now")
    with pytest.raises(ValueError, match="timeout"):
        pool.close(timeout=-1)
    assert pool.stats()["scheduled"] == 0


@pytest.mark.parametrize("options, error, name", [
    ({"max_workers": 0}, ValueError, "max_workers"),
    ({"max_workers": 2.0}, TypeError, "max_workers"),
    ({"max_workers": True}, TypeError, "max_workers"),
    ({"clock": "monotonic"}, TypeError, "clock"),
    ({"clock": lambda: "noon"}, TypeError, "clock()"),
    ({"clock": lambda: math.nan}, ValueError, "clock()"),
    ({"wall_clock": 5}, TypeError, "wall_clock"),
    ({"wall_clock": lambda: math.nan}, ValueError, "wall_clock()"),
    ({"aging": 0}, ValueError, "aging"),
    ({"aging": "fast"}, TypeError, "aging"),
    ({"overflow": "drop"}, ValueError, "overflow"),
    ({"max_pending": -1}, ValueError, "max_pending"),
    ({"lateness_samples": 0}, ValueError, "lateness_samples"),
    ({"thread_name_prefix": 3}, TypeError, "thread_name_prefix"),
])
def test_constructor_rejects_bad_input(impl, options, error, name):
    options = {"max_workers": 1, **options}
    before = threading.active_count()
    with pytest.raises(error, match=name.replace("(", r"\(").replace(")", r"\)")):
        ThreadPoolScheduler(_core_factory=impl.Scheduler, **options)
    assert threading.active_count() == before  # no thread was started


def test_public_names():
    for name in ("ThreadPoolScheduler", "TaskFuture", "CancelToken", "current_token",
                 "TaskCancelled", "TaskTimeout", "SchedulerFull"):
        assert name in pysched.__all__ and hasattr(pysched, name)
    assert issubclass(pysched.ThreadPoolScheduler, cf.Executor)
    assert issubclass(SchedulerClosed, RuntimeError)


def bounded(make_pool, impl, max_pending, **options):
    factory = getattr(impl, "StableBoundedPriorityQueue", None)
    if factory is None:
        pytest.skip("this build has no StableBoundedPriorityQueue")
    return make_pool(max_pending=max_pending, overflow="evict_lowest", _queue_factory=factory,
                     **options)


def test_backpressure_evict_lowest(make_pool, impl, clock):
    pool = bounded(make_pool, impl, 3)
    futs = {name: pool.schedule(name, 5.0, prio, abs, (prio,))
            for name, prio in [("p5", 5), ("p1", 1), ("p3", 3)]}
    futs["p2"] = pool.schedule("p2", 5.0, 2, abs, (2,))  # evicts the lowest: p1
    assert futs["p1"].cancelled() and futs["p1"].cancel_reason == "evicted"
    for prio in (0, 2):  # not strictly better than the worst (now p2): refused
        with pytest.raises(SchedulerFull, match="priority below"):
            pool.schedule(f"late{prio}", 5.0, prio, print)
    stats = pool.stats()
    assert (stats["pending"], stats["evicted"], stats["rejected"]) == (3, 1, 2)
    clock.advance(5.0)
    assert sorted(f.result(WAIT) for n, f in futs.items() if n != "p1") == [2, 3, 5]


def test_evict_lowest_takes_the_newest_of_equals_and_follows_replacements(make_pool, impl):
    pool = bounded(make_pool, impl, 3)
    first = pool.schedule("a", 5.0, 1, print)
    second = pool.schedule("b", 5.0, 1, print)
    pool.schedule("c", 5.0, 9, print)
    pool.schedule("b", 5.0, 8, print)  # b replaced at priority 8: a is now the lowest
    assert second.cancel_reason == "replaced"
    pool.schedule("d", 5.0, 4, print)
    assert first.cancel_reason == "evicted"
    assert pool.stats()["evicted"] == 1


def test_claims_and_cancels_make_room(make_pool, impl, clock):
    pool = bounded(make_pool, impl, 2)
    pool.schedule("a", 1.0, 0, abs, (1,)).cancel()
    ran = pool.schedule("b", 1.0, 0, abs, (2,))
    pool.schedule("c", 9.0, 0, print)
    clock.advance(1.0)
    assert ran.result(WAIT) == 2  # claimed: its room is free again
    pool.schedule("d", 9.0, 0, print)
    stats = pool.stats()
    assert (stats["pending"], stats["evicted"], stats["rejected"]) == (2, 0, 0)


@pytest.mark.parametrize("call, name", [
    (lambda pool: pool.schedule_in("a", 1.7e308, 0, print), "delay"),
    (lambda pool: pool.schedule_every("a", 1.7e308, 0, print), "interval"),
])
def test_a_delay_that_runs_past_the_largest_time_is_refused_by_its_name(make_pool, call, name):
    pool = make_pool(1, clock=FakeClock(1e308))
    before = pool.stats()
    with pytest.raises(OverflowError, match=name):
        call(pool)
    assert pool.stats() == before
