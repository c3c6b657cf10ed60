"""AsyncTaskFuture works wherever asyncio takes a Future, on every loop.

It is not a subclass of asyncio.Future (see pysched/aio/_future.py): each test
uses it as an asyncio user would use a Future, through asyncio's own
functions, and checks what asyncio's Future would give.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import logging

import pytest

from pysched.aio import AsyncTaskFuture

from support.aio import run, settle

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


async def forever() -> None:
    await asyncio.Event().wait()


def test_it_is_a_future_to_asyncio(make_scheduler, loop_factory):
    async def main():
        async with make_scheduler() as s:
            fut = s.schedule("a", 0.0, 0, int, ("7",))
            assert asyncio.isfuture(fut) and not asyncio.iscoroutine(fut)
            assert asyncio.ensure_future(fut) is fut
            assert fut.get_loop() is asyncio.get_running_loop()
            assert not fut.done() and not fut.cancelled()
            with pytest.raises(asyncio.InvalidStateError):
                fut.result()
            with pytest.raises(asyncio.InvalidStateError):
                fut.exception()
            got = await fut
            return got, fut.result(), fut.exception(), fut.done(), repr(fut)

    got, result, exc, done, text = run(main, loop_factory)
    assert (got, result, exc, done) == (7, 7, None, True)
    assert "task_id='a'" in text and "result=7" in text


def test_gather_wait_and_as_completed_take_it(make_scheduler, loop_factory):
    async def main():
        async with make_scheduler() as s:
            a = s.schedule_in("a", 0.002, 0, int, ("1",))
            b = s.schedule_in("b", 0.001, 0, asyncio.sleep, (0, "b"))
            bad = s.schedule("bad", 0.0, 0, int, ("x",))
            gathered = await asyncio.gather(a, b, bad, return_exceptions=True)
            c = s.schedule("c", 0.0, 0, int, ("3",))
            d = s.schedule_in("d", 60.0, 0, int, ("4",))
            done, pending = await asyncio.wait({c, d}, timeout=0.01)
            assert done == {c} and pending == {d}
            e = s.schedule_in("e", 0.001, 0, int, ("5",))
            in_order = [await f for f in asyncio.as_completed([e, c])]
            s.cancel("d")
            return gathered, in_order, d.cancelled()

    gathered, in_order, d_cancelled = run(main, loop_factory)
    assert gathered[:2] == [1, "b"] and isinstance(gathered[2], ValueError)
    assert in_order == [3, 5] and d_cancelled


def test_gather_raises_a_cancelled_versions_message(make_scheduler, loop_factory):
    async def main():
        async with make_scheduler() as s:
            fut = s.schedule_in("a", 60.0, 0, int)
            waiting = asyncio.ensure_future(asyncio.gather(fut))
            await settle(2)
            fut.cancel("not today")
            with pytest.raises(asyncio.CancelledError) as raised:
                await waiting
            return raised.value.args, fut.cancel_reason

    args, reason = run(main, loop_factory)
    assert args == ("not today",) and reason == "cancelled"


def test_wait_for_times_out_a_running_version_and_cancels_it(make_scheduler, loop_factory):
    stopped = []

    async def slow():
        try:
            await forever()
        except asyncio.CancelledError:
            stopped.append(True)
            raise

    async def main():
        async with make_scheduler() as s:
            assert await asyncio.wait_for(s.schedule("quick", 0.0, 0, int, ("2",)), 5) == 2
            fut = s.schedule("slow", 0.0, 0, slow)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(fut, 0.01)
            return fut.cancelled(), fut.cancel_reason, s.stats()["cancelled"]

    assert run(main, loop_factory) == (True, "cancelled", 1)
    assert stopped == [True]


def test_shield_keeps_the_version_when_the_waiter_is_cancelled(make_scheduler, loop_factory):
    async def main():
        async with make_scheduler() as s:
            fut = s.schedule_in("a", 0.01, 0, int, ("9",))
            waiter = asyncio.ensure_future(asyncio.shield(fut))
            await settle(2)
            waiter.cancel()
            await settle(2)
            return waiter.cancelled(), await fut

    assert run(main, loop_factory) == (True, 9)


def test_a_task_awaiting_it_cancels_the_version_with_its_message(make_scheduler, loop_factory):
    async def main():
        async with make_scheduler() as s:
            fut = s.schedule_in("a", 60.0, 0, int)

            async def waiter():
                return await fut

            task = asyncio.ensure_future(waiter())
            await settle(2)
            task.cancel("bye")
            with pytest.raises(asyncio.CancelledError):
                await task
            return fut.cancelled(), fut.cancel_reason, s.stats()["pending"]

    assert run(main, loop_factory) == (True, "cancelled", 0)


def test_cancel_keeps_its_message_pending_and_running(make_scheduler, loop_factory):
    async def main():
        async with make_scheduler() as s:
            pending = s.schedule_in("p", 60.0, 0, int)
            running = s.schedule("r", 0.0, 0, forever)
            await settle(3)
            assert pending.cancel("msg-p") and running.cancel("msg-r")
            assert not pending.cancel("again")
            messages = []
            for fut in (pending, running):
                with pytest.raises(asyncio.CancelledError) as raised:
                    await fut
                messages.append(raised.value.args)
                with pytest.raises(asyncio.CancelledError):
                    fut.result()
                with pytest.raises(asyncio.CancelledError):
                    fut.exception()
            return messages

    assert run(main, loop_factory) == [("msg-p",), ("msg-r",)]


def test_done_callbacks_run_soon_in_their_context_and_can_be_removed(make_scheduler,
                                                                    loop_factory):
    async def main():
        calls = []
        async with make_scheduler() as s:
            fut = s.schedule_in("a", 0.001, 0, int, ("1",))

            def seen(done):
                calls.append((request_id.get(), done.result()))

            def removed(done):
                calls.append("removed")

            request_id.set("caller")
            fut.add_done_callback(seen)
            context = contextvars.copy_context()
            context.run(request_id.set, "given")
            fut.add_done_callback(seen, context=context)
            fut.add_done_callback(removed)
            fut.add_done_callback(removed)
            assert fut.remove_done_callback(removed) == 2
            assert fut.remove_done_callback(removed) == 0
            await fut  # its callbacks were added before this Task's own wake-up
            assert len(calls) == 2
            fut.add_done_callback(seen)  # already done: through call_soon, too
            assert len(calls) == 2
            await settle(2)
        return calls

    assert run(main, loop_factory) == [("caller", 1), ("given", 1), ("caller", 1)]


def test_run_until_complete_takes_it(make_scheduler, loop_factory):
    loop = loop_factory()
    try:
        s = make_scheduler()

        async def start():
            return s.schedule_in("a", 0.001, 0, int, ("5",))

        fut = loop.run_until_complete(start())
        assert loop.run_until_complete(fut) == 5
        loop.run_until_complete(s.aclose())
    finally:
        loop.close()


def test_one_made_by_hand_behaves_as_loop_create_future(loop_factory):
    async def main():
        loop = asyncio.get_running_loop()
        fut: AsyncTaskFuture[int] = AsyncTaskFuture(loop=loop)
        loop.call_soon(fut.set_result, 4)
        got = await fut
        with pytest.raises(asyncio.InvalidStateError):
            fut.set_result(5)
        other: AsyncTaskFuture[int] = AsyncTaskFuture(loop=loop)
        assert other.cancel("why") and other.cancelled() and not other.cancel()
        failed: AsyncTaskFuture[int] = AsyncTaskFuture(loop=loop)
        failed.set_exception(KeyError)
        with pytest.raises(TypeError):
            AsyncTaskFuture(loop=loop).set_exception(StopIteration())
        return got, other.cancel_reason, type(failed.exception())

    assert run(main, loop_factory) == (4, "cancelled", KeyError)


def test_an_exception_never_retrieved_is_reported_once_collected(make_scheduler, loop_factory,
                                                                caplog):
    caplog.set_level(logging.ERROR, logger="asyncio")

    async def main():
        async with make_scheduler() as s:
            lost = s.schedule("lost", 0.0, 0, int, ("x",))
            seen = s.schedule("seen", 0.0, 0, int, ("y",))
            await asyncio.wait([lost, seen])
            assert isinstance(seen.exception(), ValueError)
            del lost, seen
            gc.collect()

    run(main, loop_factory)
    reports = [r for r in caplog.records if "never retrieved" in r.getMessage()]
    assert len(reports) == 1
    assert "lost" in reports[0].getMessage()
    assert isinstance(reports[0].exc_info[1], ValueError)
