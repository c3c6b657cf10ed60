"""A scheduler left open: the loop's shutdown ends its work as it ends every Task.

``asyncio.run`` cancels every Task once ``main()`` has returned and then closes
the loop. A scheduler never closed must start nothing during that teardown
(a Task started then is destroyed while pending), and each of its Futures
must end with a reason. An idle scheduler leaves nothing on the loop.

Once its loop has closed, a scheduler holding work refuses every call and
changes nothing; an idle one still closes.
"""

from __future__ import annotations

import asyncio

import pytest

from support.aio import VirtualTimeLoop, destroyed_pending, run, run_as_asyncio_run


@pytest.mark.parametrize("cap", [1, None])
def test_teardown_starts_nothing_and_ends_every_future(make_scheduler, loop_factory, asyncio_log,
                                                        cap):
    log = []
    futures = []

    async def job(name):
        log.append(("start", name, returned[0]))
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            log.append(("cancelled", name, returned[0]))
            await asyncio.sleep(0)  # a clean-up that awaits, as real ones do
            raise

    def plain(name):
        log.append(("start", name, returned[0]))

    returned = [False]

    async def main():
        s = make_scheduler(max_concurrency=cap)
        for k in range(4):  # due now: running, or waiting for the cap
            futures.append(s.schedule(f"now{k}", 0.0, -k, job, (f"now{k}",)))
        futures.append(s.schedule("plain", 0.0, -9, plain, ("plain",)))
        futures.append(s.schedule_in("later", 3600.0, 0, job, ("later",)))
        for _ in range(10):
            await asyncio.sleep(0)
        returned[0] = True  # main() returns, the scheduler still open

    run_as_asyncio_run(main, loop_factory)
    not_done = [fut.task_id for fut in futures if not fut.done()]
    reasons = {fut.task_id: fut.cancel_reason for fut in futures if fut.cancelled()}
    futures.clear()  # nothing of the scheduler is left but what the loop dropped
    assert destroyed_pending(asyncio_log) == []
    assert [entry for entry in log if entry[0] == "start" and entry[2]] == []
    assert not_done == []
    assert None not in reasons.values() and reasons["later"] == "closed"


def test_a_running_version_that_outlives_its_own_cancel_frees_no_slot_to_refill(
        make_scheduler, loop_factory, asyncio_log):
    """A version swallowing the teardown's cancel ends normally; still nothing new starts."""
    log = []

    async def stubborn(name):
        log.append(name)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0)
            return "stopped on my terms"

    async def main():
        s = make_scheduler(max_concurrency=1)
        s.schedule("first", 0.0, 1, stubborn, ("first",))
        s.schedule("second", 0.0, 0, stubborn, ("second",))
        for _ in range(5):
            await asyncio.sleep(0)

    run_as_asyncio_run(main, loop_factory)
    assert log == ["first"]
    assert destroyed_pending(asyncio_log) == []


def test_a_timer_firing_during_the_teardown_starts_nothing(make_scheduler, asyncio_log):
    """Another Task's slow clean-up lets the scheduler's timer fire while the loop shuts down."""
    started = []

    async def slow_cleanup():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)  # the scheduler's version comes due meanwhile
            raise

    async def main():
        asyncio.get_running_loop().create_task(slow_cleanup())
        s = make_scheduler()
        s.schedule_in("soon", 0.01, 0, started.append, ("soon",))
        await asyncio.sleep(0)

    run_as_asyncio_run(main, VirtualTimeLoop)
    assert started == []
    assert destroyed_pending(asyncio_log) == []


def test_an_idle_open_scheduler_leaves_no_task_on_the_loop(make_scheduler, loop_factory):
    async def main():
        s = make_scheduler()
        await s.schedule("a", 0.0, 0, int)
        s.schedule_in("b", 1.0, 0, int).cancel()
        await asyncio.sleep(0)
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()], s.state

    left, state = run_as_asyncio_run(main, loop_factory)
    assert left == [] and state == "open"


def test_work_scheduled_again_after_idle_is_tied_to_the_loop_again(make_scheduler, loop_factory,
                                                                   asyncio_log):
    started = []

    async def main():
        s = make_scheduler()
        await s.schedule("a", 0.0, 0, int)
        await asyncio.sleep(0)  # idle: the first host has returned
        s.schedule("b", 0.0, 0, asyncio.sleep, (3600,))
        s.schedule_in("c", 3600.0, 0, started.append, ("c",))
        await asyncio.sleep(0)
        return s

    s = run_as_asyncio_run(main, loop_factory)
    assert started == [] and s.state == "closed" and s.stats()["cancelled"] == 2
    del s
    assert destroyed_pending(asyncio_log) == []


def test_main_returning_right_after_schedule_leaves_nothing_behind(make_scheduler, loop_factory,
                                                                   asyncio_log):
    """The teardown cancels a version's Task before its first step, and the host with it."""
    ran = []
    futures = []

    async def body():
        ran.append("body")

    async def main():
        s = make_scheduler()
        futures.append(s.schedule("now", 0.0, 0, body))
        futures.append(s.schedule("plain", 0.0, 1, ran.append, ("plain",)))  # as call_soon would

    run_as_asyncio_run(main, loop_factory)
    outcome = [(f.task_id, f.done(), f.cancelled() and f.cancel_reason) for f in futures]
    futures.clear()
    assert destroyed_pending(asyncio_log) == []  # and no coroutine left never awaited
    # Whether the coroutine's first step came before the teardown depends on the loop.
    began = "body" in ran
    assert ran == ["plain", "body"] if began else ran == ["plain"]
    assert outcome == [("now", True, False if began else "closed"), ("plain", True, False)]


def test_calls_after_the_loop_closed_raise_and_change_nothing(make_scheduler, loop_factory):
    # Each ended Future scheduled its done callbacks on the closed loop, which
    # raised half-way: cancel() raised with its version cancelled, close()
    # left later Futures pending for ever and the scheduler closing, its timer
    # still armed.
    loop = loop_factory()
    s = make_scheduler()

    async def start():
        futures = [s.schedule_in(k, 60.0, 0, int) for k in range(3)]
        for fut in futures:
            fut.add_done_callback(lambda f: None)
        return futures

    try:
        futures = loop.run_until_complete(start())
    finally:
        loop.close()
    before = s.stats()
    for call in (lambda: s.cancel(0), futures[1].cancel, s.close):
        with pytest.raises(RuntimeError, match="closed"):
            call()
        assert s.stats() == before and not any(fut.done() for fut in futures)
        s._check()
    s._runner.host.task._log_destroy_pending = False  # dropped with its loop, as documented


def test_an_idle_scheduler_is_closed_and_cancelled_after_its_loop_closed(make_scheduler,
                                                                         loop_factory):
    # Only a scheduler holding work refuses once its loop closed: closing one
    # left idle and open, or one already closed, still works, also with
    # cancel_running (which asked for the running loop's current Task).
    idle, closed, unused = make_scheduler(), make_scheduler(), make_scheduler()
    unused.close(cancel_running=True)
    assert unused.state == "closed"

    async def main():
        assert await idle.schedule_in("done", 0.0, 0, int, (1,)) == 1
        async with closed:
            closed.schedule_in("done", 0.0, 0, int)

    run(main, loop_factory)
    assert idle.cancel("done") is False and closed.cancel("done") is False
    idle.close()
    closed.close(cancel_running=True)
    assert idle.state == closed.state == "closed"
    idle._check()
    closed._check()
