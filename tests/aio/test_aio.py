"""AsyncScheduler: order, versions, cancellation, the cap, exceptions, bad input.

Every test runs on both cores; those that take ``loop_factory`` also on the
virtual-time loop, asyncio's loop and uvloop (where installed). On real loops
times are a few milliseconds ahead at most and only order is asserted.
"""

from __future__ import annotations

import asyncio
import functools
import math

import pytest

import pysched
from pysched import SchedulerClosed
from pysched.aio import AsyncScheduler, AsyncTaskFuture

from support.aio import VirtualTimeLoop, run, settle


def test_exported_from_the_package():
    assert pysched.AsyncScheduler is AsyncScheduler


# -- order and time -------------------------------------------------------------


def test_earliest_first_then_highest_priority_then_fifo(make_scheduler, loop_factory):
    async def main():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        order = []
        async with make_scheduler() as s:
            spec = [("late", 0.004, 100), ("low", 0.002, -5), ("high", 0.002, 7),
                    ("tie1", 0.002, 0), ("tie2", 0.002, 0)]
            futures = [s.schedule(name, t0 + dt, prio, order.append, (name,))
                       for name, dt, prio in spec]
            await asyncio.gather(*futures)
            s._check()
        return order

    assert run(main, loop_factory) == ["high", "tie1", "tie2", "low", "late"]


def test_start_order_follows_the_core_under_a_cap_of_one(make_scheduler, loop_factory):
    async def main():
        order = []

        async def work(i):
            order.append(i)
            await asyncio.sleep(0)

        async with make_scheduler(max_concurrency=1) as s:
            # All due at once: only priority and FIFO decide.
            futures = [s.schedule(i, 0.0, i % 3, work, (i,)) for i in range(12)]
            await asyncio.gather(*futures)
        return order

    expected = sorted(range(12), key=lambda i: (-(i % 3), i))
    assert run(main, loop_factory) == expected


def test_a_task_never_starts_before_its_run_at(make_scheduler, loop_factory):
    async def main():
        loop = asyncio.get_running_loop()
        async with make_scheduler() as s:
            due = [loop.time() + k * 0.001 for k in range(5)]
            futures = [s.schedule(k, t, 0, loop.time) for k, t in enumerate(due)]
            started = await asyncio.gather(*futures)
        return due, started

    due, started = run(main, loop_factory)
    assert all(start >= at for start, at in zip(started, due, strict=True))


def test_an_earlier_task_interrupts_the_wait_for_a_later_one(make_scheduler):
    async def main():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with make_scheduler() as s:
            far = s.schedule("far", t0 + 3600, 0, loop.time)
            await settle()  # the dispatcher now waits for t0 + 3600
            near = await s.schedule("near", t0 + 1, 0, loop.time)
            assert not far.done()
            s.cancel("far")
        return t0, near

    t0, near = run(main, VirtualTimeLoop)
    assert t0 + 1 <= near < t0 + 2


def test_schedule_in_is_relative_to_the_loop_clock(make_scheduler):
    async def main():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with make_scheduler() as s:
            return t0, await s.schedule_in("a", 5.0, 0, loop.time)

    t0, ran = run(main, VirtualTimeLoop)
    assert t0 + 5.0 <= ran < t0 + 5.5


def test_an_idle_scheduler_does_not_poll(make_scheduler):
    # A virtual loop counts its waits: one timer for the one task, no ticking.
    async def main():
        async with make_scheduler() as s:
            await s.schedule_in("a", 86400.0, 0, lambda: None)
        return asyncio.get_running_loop().waits

    waits = run(main, VirtualTimeLoop)
    assert len(waits) == 1 and waits[0] == pytest.approx(86400.0)


def test_the_timer_is_armed_for_the_heads_own_run_at(make_scheduler):
    # now + (run_at - now) rounds below run_at for these two: a timer armed
    # from the delay fires before the head is due, and the pump must wait again.
    now, run_at = 2330.8445025757264, 23978.09756849663
    assert now + (run_at - now) < run_at

    async def main():
        loop = asyncio.get_running_loop()
        async with make_scheduler() as s:
            ran_at = await s.schedule("a", run_at, 0, loop.time)
        return ran_at, loop.waits

    ran_at, waits = run(main, functools.partial(VirtualTimeLoop, now))
    assert ran_at == run_at and len(waits) == 1


# -- coroutines, callables and results ----------------------------------------------


def test_coroutine_functions_callables_and_awaitable_results(make_scheduler, loop_factory):
    async def double(x):
        await asyncio.sleep(0)
        return 2 * x

    async def main():
        async with make_scheduler() as s:
            return await asyncio.gather(
                s.schedule("coro", 0.0, 0, double, (21,)),
                s.schedule("plain", 0.0, 0, max, (3, 9)),
                s.schedule("kwargs", 0.0, 0, dict, (), {"a": 1}),
                s.schedule("partial", 0.0, 0, functools.partial(double, 5)),
                s.schedule("lambda", 0.0, 0, lambda: double(1)),
            )

    assert run(main, loop_factory) == [42, 9, {"a": 1}, 10, 2]


def test_futures_carry_the_task_id_and_version(make_scheduler, loop_factory):
    async def main():
        async with make_scheduler() as s:
            first = s.schedule("a", 0.0, 0, int)
            second = s.schedule("a", 0.0, 0, int)
            await second
        return first, second

    first, second = run(main, loop_factory)
    assert isinstance(second, AsyncTaskFuture) and asyncio.isfuture(second)
    assert (first.task_id, first.version, second.version) == ("a", 1, 2)
    assert first.cancelled() and first.cancel_reason == "replaced"
    assert second.result() == 0 and second.cancel_reason is None


def test_exceptions_fail_their_future_and_the_rest_runs_on(make_scheduler, loop_factory):
    async def bad_coro():
        await asyncio.sleep(0)
        raise KeyError("coro")

    async def main():
        async with make_scheduler() as s:
            plain = s.schedule("plain", 0.0, 1, int, ("not a number",))
            coro = s.schedule("coro", 0.0, 1, bad_coro)
            fine = s.schedule("fine", 0.0, 0, str, ("ok",))
            outcomes = await asyncio.gather(plain, coro, fine, return_exceptions=True)
            s._check()
            return outcomes, s.stats()

    (plain, coro, fine), stats = run(main, loop_factory)
    assert isinstance(plain, ValueError) and isinstance(coro, KeyError) and fine == "ok"
    assert (stats["failed"], stats["completed"]) == (2, 1)


# -- replacement and versions -----------------------------------------------------


def test_replacement_while_running_waits_for_the_old_version(make_scheduler, loop_factory):
    async def main():
        log = []
        started, gate = asyncio.Event(), asyncio.Event()

        async def v1():
            log.append("v1 start")
            started.set()
            await gate.wait()
            log.append("v1 end")
            return 1

        async with make_scheduler() as s:
            f1 = s.schedule("a", 0.0, 0, v1)
            await started.wait()
            f2 = s.schedule("a", 0.0, 0, lambda: log.append("v2") or 2)
            assert s.state_of("a") == "pending"
            await settle()  # due, but parked behind v1
            assert log == ["v1 start"] and not f2.done()
            assert s.stats()["running"] == 1 and s.stats()["pending"] == 1
            gate.set()
            results = await f1, await f2
            s._check()
        return log, results

    log, results = run(main, loop_factory)
    assert log == ["v1 start", "v1 end", "v2"] and results == (1, 2)


def test_a_refused_replacement_leaves_the_old_version_pending(make_scheduler):
    async def main():
        async with make_scheduler() as s:
            old = s.schedule_in("a", 10.0, 0, int)
            with pytest.raises(ValueError, match="run_at"):
                s.schedule("a", math.nan, 0, int)
            assert not old.done() and s.state_of("a") == "pending"
            s._check()
            assert s.stats()["scheduled"] == 1
            return await old

    assert run(main, VirtualTimeLoop) == 0


# -- cancellation ---------------------------------------------------------------------


def test_cancel_a_pending_version(make_scheduler, loop_factory):
    async def main():
        ran = []
        async with make_scheduler() as s:
            fut = s.schedule_in("a", 0.001, 0, ran.append, (1,))
            assert s.cancel("a") is True
            assert fut.cancelled() and fut.cancel_reason == "cancelled"
            assert s.cancel("a") is False and s.state_of("a") is None
            assert s.cancel("never scheduled") is False
            await settle()
            s._check()
            return ran, s.stats()

    ran, stats = run(main, loop_factory)
    assert ran == [] and stats["cancelled"] == 1 and stats["pending"] == 0


def test_cancel_a_running_coroutine_resolves_when_it_has_stopped(make_scheduler, loop_factory):
    async def main():
        log = []
        started = asyncio.Event()

        async def slow():
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                log.append("cancelled")
                await asyncio.sleep(0)  # clean-up that awaits
                log.append("cleaned up")
                raise

        async with make_scheduler() as s:
            fut = s.schedule("a", 0.0, 0, slow)
            await started.wait()
            assert s.cancel("a") is True
            assert not fut.done(), "resolved before the coroutine stopped"
            with pytest.raises(asyncio.CancelledError):
                await fut
            s._check()
            return log, fut.cancel_reason, s.stats()

    log, reason, stats = run(main, loop_factory)
    assert log == ["cancelled", "cleaned up"] and reason == "cancelled"
    assert stats["cancelled"] == 1 and stats["running"] == 0


def test_a_coroutine_that_swallows_the_cancel_completes(make_scheduler, loop_factory):
    async def main():
        started = asyncio.Event()

        async def stubborn():
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                return "stopped on my terms"

        async with make_scheduler() as s:
            fut = s.schedule("a", 0.0, 0, stubborn)
            await started.wait()
            fut.cancel()
            return await fut, s.stats()["completed"]

    assert run(main, loop_factory) == ("stopped on my terms", 1)


def test_cancelling_the_future_cancels_the_version(make_scheduler, loop_factory):
    async def main():
        ran = []
        started = asyncio.Event()

        async def forever():
            started.set()
            await asyncio.Event().wait()

        async with make_scheduler() as s:
            pending = s.schedule_in("p", 0.001, 0, ran.append, ("p",))
            assert pending.cancel() is True and pending.cancel() is False
            assert s.state_of("p") is None
            running = s.schedule("r", 0.0, 0, forever)
            await started.wait()
            assert running.cancel() is True
            await asyncio.gather(running, return_exceptions=True)
            assert running.cancelled() and s.state_of("r") is None
            s._check()
        return ran

    assert run(main, loop_factory) == []


def test_cancelling_a_pending_future_spares_the_running_older_version(make_scheduler, loop_factory):
    async def main():
        started, gate = asyncio.Event(), asyncio.Event()

        async def v1():
            started.set()
            await gate.wait()
            return "v1"

        async with make_scheduler() as s:
            f1 = s.schedule("a", 0.0, 0, v1)
            await started.wait()
            f2 = s.schedule("a", 0.0, 0, int)
            f2.cancel()
            await settle()
            assert s.state_of("a") == "running" and not f1.done()
            gate.set()
            return await f1

    assert run(main, loop_factory) == "v1"


def test_a_wait_for_timeout_cancels_the_version(make_scheduler):
    async def main():
        ran = []
        async with make_scheduler() as s:
            fut = s.schedule_in("a", 3600.0, 0, ran.append, (1,))
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(fut, 1.0)
            assert fut.cancelled() and s.state_of("a") is None
        return ran

    assert run(main, VirtualTimeLoop) == []


# -- the concurrency cap -----------------------------------------------------------------


@pytest.mark.parametrize("cap", [1, 3, 8])
def test_the_cap_is_reached_and_never_exceeded(make_scheduler, loop_factory, cap):
    async def main():
        active = peak = 0

        async def work(i):
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            s._check()
            for _ in range(3):
                await asyncio.sleep(0)
            active -= 1
            return i

        async with make_scheduler(max_concurrency=cap) as s:
            results = await asyncio.gather(*(s.schedule(i, 0.0, 0, work, (i,)) for i in range(40)))
            return results, peak, s.stats()["peak_running"]

    results, peak, peak_running = run(main, loop_factory)
    assert results == list(range(40)) and peak == cap and peak_running == cap


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"max_concurrency": 0}, ValueError, "max_concurrency"),
    ({"max_concurrency": -1}, ValueError, "max_concurrency"),
    ({"max_concurrency": 1.5}, TypeError, "max_concurrency"),
    ({"max_concurrency": "2"}, TypeError, "max_concurrency"),
    ({"max_concurrency": True}, TypeError, "max_concurrency"),
])
def test_bad_constructor_arguments(make_scheduler, kwargs, error, match):
    with pytest.raises(error, match=match):
        make_scheduler(**kwargs)


BAD_SCHEDULES = [
    ("schedule", ([], 0.0, 0, int), TypeError, "task_id"),
    ("schedule", ("a", math.nan, 0, int), ValueError, "run_at"),
    ("schedule", ("a", math.inf, 0, int), ValueError, "run_at"),
    ("schedule", ("a", "soon", 0, int), TypeError, "run_at"),
    ("schedule", ("a", 0.0, 1.5, int), TypeError, "priority"),
    ("schedule", ("a", 0.0, 2**63, int), OverflowError, "priority"),
    ("schedule", ("a", 0.0, 0, "int"), TypeError, "fn"),
    ("schedule", ("a", 0.0, 0, int, 5), TypeError, "args"),
    ("schedule", ("a", 0.0, 0, int, "ab"), TypeError, "args"),
    ("schedule", ("a", 0.0, 0, int, (), [1]), TypeError, "kwargs"),
    ("schedule_in", ("a", -1.0, 0, int), ValueError, "delay"),
    ("schedule_in", ("a", math.nan, 0, int), ValueError, "delay"),
    ("schedule_in", ("a", None, 0, int), TypeError, "delay"),
    ("schedule_in", ([], 1.0, 0, int), TypeError, "task_id"),
    ("cancel", ([],), TypeError, "task_id"),
    ("state_of", ({},), TypeError, "task_id"),
]


@pytest.mark.parametrize(("method", "args", "error", "match"), BAD_SCHEDULES,
                         ids=[f"{m}-{e.__name__}-{x}" for m, _, e, x in BAD_SCHEDULES])
def test_bad_input_names_the_argument_and_changes_nothing(make_scheduler, method, args, error,
                                                          match):
    async def main():
        async with make_scheduler() as s:
            kept = s.schedule_in("kept", 1.0, 0, int)
            before = s.stats()
            with pytest.raises(error, match=match):
                getattr(s, method)(*args)
            assert s.stats() == before and not kept.done()
            s._check()
            return await kept

    assert run(main, VirtualTimeLoop) == 0


def test_it_needs_a_running_loop_and_stays_on_its_loop(make_scheduler):
    s = make_scheduler()
    with pytest.raises(RuntimeError):
        s.schedule("a", 0.0, 0, int)

    async def use():
        return await s.schedule("a", 0.0, 0, int)

    assert run(use, VirtualTimeLoop) == 0
    with pytest.raises(RuntimeError, match="different event loop"):
        run(use, VirtualTimeLoop)


def test_schedule_after_close_raises_scheduler_closed(make_scheduler):
    async def main():
        s = make_scheduler()
        await s.aclose()
        with pytest.raises(SchedulerClosed):
            s.schedule("a", 0.0, 0, int)
        with pytest.raises(SchedulerClosed):
            s.schedule_in("a", 0.0, 0, int)
        assert s.stats()["scheduled"] == 0 and s.state == "closed"

    run(main, VirtualTimeLoop)


def test_the_module_doctests_pass():
    import doctest

    import pysched.aio._scheduler

    result = doctest.testmod(pysched.aio._scheduler)
    assert result.attempted > 0 and result.failed == 0


def test_a_future_kept_after_its_version_holds_neither_its_arguments_nor_its_context(
        make_scheduler, loop_factory):
    import contextvars
    import gc
    import weakref

    var = contextvars.ContextVar("var")

    class Payload:
        pass

    async def coro(payload):
        await asyncio.sleep(0)

    async def main():
        refs, futures = [], []
        async with make_scheduler() as s:
            for name, fn, delay in [("plain", id, 0.0), ("coro", coro, 0.0),
                                    ("cancelled", id, 10.0), ("replaced", id, 10.0)]:
                payload, value = Payload(), Payload()
                var.set(value)
                refs += [weakref.ref(payload), weakref.ref(value)]
                futures.append(s.schedule_in(name, delay, 0, fn, (payload,)))
                del payload, value
            s.cancel("cancelled")
            s.schedule_in("replaced", 0.0, 0, int)
            var.set(None)
            await asyncio.gather(*futures, return_exceptions=True)
        gc.collect()
        return [ref() is None for ref in refs], futures

    freed, futures = run(main, loop_factory)
    assert all(freed) and all(f.done() for f in futures)
