"""The start rule and cancel messages.

A version the pump has claimed but whose coroutine has not begun (its Task
has not taken its first step) is still replaced, cancelled or closed as a
pending one is: it never runs a line, and its Future is cancelled at once with
its reason. A message given to ``cancel(msg)`` reaches the CancelledError, as
with asyncio's own Tasks and Futures.
"""

from __future__ import annotations

import asyncio

import pytest

from support.aio import run


def between_claim_and_first_step(action):
    """Call ``action()`` right after the pump claims what is due, before any new Task steps.

    The pump runs on the loop iteration after a schedule() call and a Task
    takes its first step on the iteration after it was made, so a callback
    queued just after the schedule() call runs exactly in between.
    """
    asyncio.get_running_loop().call_soon(action)


async def wait_until_done(*futures):
    await asyncio.gather(*futures, return_exceptions=True)


@pytest.mark.parametrize("how", ["schedule", "cancel", "future.cancel", "close"])
def test_a_claimed_version_not_begun_is_still_replaced_or_cancelled(make_scheduler, loop_factory,
                                                                     how):
    async def main():
        ran = []

        async def body(name):
            ran.append(name)
            return name

        s = make_scheduler()
        first = s.schedule("a", 0.0, 0, body, ("first",))
        outcome = {}
        acted = asyncio.Event()

        def act():
            assert s.state_of("a") == "running"  # claimed: its Task exists, not yet stepped
            if how == "schedule":
                outcome["second"] = s.schedule("a", 0.0, 0, body, ("second",))
            elif how == "cancel":
                assert s.cancel("a") is True
            elif how == "future.cancel":
                assert first.cancel("stop it") is True
            else:
                s.close()
            outcome["at once"] = first.cancelled()
            s._check()
            acted.set()

        between_claim_and_first_step(act)
        await acted.wait()
        second = outcome.get("second")
        await wait_until_done(first, *([] if second is None else [second]))
        await s.aclose()
        s._check()
        return (ran, outcome["at once"], first.cancel_reason,
                None if second is None else second.result(), s.stats())

    ran, at_once, reason, second, stats = run(main, loop_factory)
    expected_reason = {"schedule": "replaced", "close": "closed"}.get(how, "cancelled")
    assert at_once and reason == expected_reason
    assert ran == (["second"] if how == "schedule" else [])
    assert second == ("second" if how == "schedule" else None)
    assert stats["running"] == 0 and stats["state"] == "closed"


def test_the_message_of_a_release_reaches_the_cancelled_error(make_scheduler, loop_factory):
    async def main():
        s = make_scheduler()
        fut = s.schedule("a", 0.0, 0, asyncio.sleep, (0,))
        between_claim_and_first_step(lambda: fut.cancel("not now"))
        with pytest.raises(asyncio.CancelledError) as caught:
            await fut
        await s.aclose()
        return caught.value.args

    assert run(main, loop_factory) == ("not now",)


def test_a_running_version_cancelled_with_a_message_keeps_it(make_scheduler, loop_factory):
    async def main():
        started = asyncio.Event()
        seen = []

        async def forever():
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError as exc:
                seen.append(exc.args)
                raise

        async with make_scheduler() as s:
            fut = s.schedule("a", 0.0, 0, forever)
            await started.wait()
            assert fut.cancel("my-msg") is True
            with pytest.raises(asyncio.CancelledError) as caught:
                await fut
            return seen, caught.value.args, fut.cancel_reason

    seen, args, reason = run(main, loop_factory)
    assert seen == [("my-msg",)] and args == ("my-msg",) and reason == "cancelled"


def test_without_a_message_the_reason_is_the_message(make_scheduler, loop_factory):
    async def main():
        started = asyncio.Event()

        async def forever():
            started.set()
            await asyncio.Event().wait()

        async with make_scheduler() as s:
            pending = s.schedule_in("p", 10.0, 0, int)
            running = s.schedule("r", 0.0, 0, forever)
            await started.wait()
            s.cancel("p"), s.cancel("r")
            outcomes = await asyncio.gather(pending, running, return_exceptions=True)
        return [exc.args for exc in outcomes]

    assert run(main, loop_factory) == [("cancelled",), ("cancelled",)]


def test_a_plain_callable_cancelling_itself_ends_cancelled_with_its_message(make_scheduler,
                                                                            loop_factory):
    async def main():
        async with make_scheduler() as s:
            box = []

            def stop_myself():
                assert box[0].cancel("enough") is True
                return "ignored"

            box.append(s.schedule("a", 0.0, 0, stop_myself))
            with pytest.raises(asyncio.CancelledError) as caught:
                await box[0]
            return caught.value.args, box[0].cancel_reason, s.stats()["cancelled"]

    assert run(main, loop_factory) == (("enough",), "cancelled", 1)


def test_a_teardown_cancel_ends_with_a_reason(make_scheduler, loop_factory):
    """A Task cancelled by someone else than the scheduler: reason "cancelled", message kept."""
    async def main():
        started = asyncio.Event()
        tasks = []

        async def forever():
            tasks.append(asyncio.current_task())
            started.set()
            await asyncio.Event().wait()

        async with make_scheduler() as s:
            fut = s.schedule("a", 0.0, 0, forever)
            await started.wait()
            tasks[0].cancel("from outside")
            with pytest.raises(asyncio.CancelledError) as caught:
                await fut
            return caught.value.args, fut.cancel_reason

    assert run(main, loop_factory) == (("from outside",), "cancelled")


@pytest.mark.parametrize("then", ["cancel", "aclose"])
def test_a_task_cancelled_from_outside_before_its_first_step_is_released_later(
        make_scheduler, loop_factory, then):
    async def main():
        ran = []

        async def body():
            ran.append("body")

        s = make_scheduler()
        fut = s.schedule("a", 0.0, 0, body)
        # Its asyncio Task, cancelled not through the scheduler.
        between_claim_and_first_step(lambda: s._book.running["a"].aio.cancel())
        for _ in range(5):
            await asyncio.sleep(0)
        assert s.state_of("a") == "running" and not fut.done()
        if then == "cancel":
            assert s.cancel("a") is True
        await s.aclose()  # does not wait for it forever
        s._check()
        return ran, fut.cancel_reason, s.state

    reason = "cancelled" if then == "cancel" else "closed"
    assert run(main, loop_factory) == ([], reason, "closed")
