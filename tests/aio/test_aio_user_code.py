"""AsyncScheduler and what user code may raise or do to it.

Each version must end exactly once whatever its code raises or returns, and a
version must not be able to wait on itself forever.
"""

from __future__ import annotations

import asyncio

import pytest

from support.aio import VirtualTimeLoop, run, settle


def test_a_generator_exit_raised_by_a_version_fails_it_and_frees_its_slot(make_scheduler,
                                                                          loop_factory):
    # Raised by the version's own code, not by its Task being destroyed: the
    # version fails with it, as an asyncio Task does, and its slot is freed.
    async def coroutine():
        await asyncio.sleep(0)
        raise GeneratorExit

    def plain():
        raise GeneratorExit

    async def main():
        async with make_scheduler(max_concurrency=1) as s:
            raised = s.schedule("coroutine", 0.0, 1, coroutine)
            called = s.schedule("plain", 0.0, 0, plain)
            after = s.schedule("after", 0.0, -1, str, ("after",))
            assert await after == "after"  # the cap of one was freed twice
            s._check()
            stats = s.stats()
        return raised.exception(), called.exception(), stats

    raised, called, stats = run(main, loop_factory)
    assert isinstance(raised, GeneratorExit) and isinstance(called, GeneratorExit)
    assert (stats["failed"], stats["completed"], stats["running"]) == (2, 1, 0)


def test_a_version_awaiting_its_own_future_fails_as_a_task_awaiting_itself(make_scheduler,
                                                                           loop_factory):
    # It would wait for its own end forever, and cancelling it recursed
    # without end: its Task cancelled the Future it awaited, which cancelled
    # its Task again. asyncio refuses a Task that awaits itself; so does this.
    futures = {}

    async def awaits_itself():
        return await futures["self"]

    def returns_itself():
        return futures["returned"]

    async def main():
        async with make_scheduler() as s:
            futures["self"] = s.schedule("self", 0.0, 0, awaits_itself)
            futures["returned"] = s.schedule("returned", 0.0, 0, returns_itself)
            await asyncio.wait(futures.values())
            s._check()

    run(main, loop_factory)
    for fut in futures.values():
        error = fut.exception()
        assert isinstance(error, RuntimeError) and "its own" in str(error), error


def test_cancelling_a_version_awaiting_its_own_future_does_not_recurse(make_scheduler):
    # The same version, cancelled before it got to await: it ends cancelled.
    futures = {}
    awaiting = asyncio.Event()

    async def awaits_itself():
        awaiting.set()
        try:
            return await futures["self"]
        except RuntimeError:
            await asyncio.sleep(60)  # still running when cancelled
            raise

    async def main():
        async with make_scheduler() as s:
            futures["self"] = s.schedule("self", 0.0, 0, awaits_itself)
            await awaiting.wait()
            await settle()
            assert s.cancel("self")
            await asyncio.wait([futures["self"]])
            s._check()

    loop = VirtualTimeLoop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert futures["self"].cancelled()


def test_a_version_awaiting_a_future_it_returned_is_cancelled_before_its_task_steps(
        make_scheduler, loop_factory):
    # Its fn returned an awaitable that is not a coroutine (a Future), and a
    # callable of the same pump cancelled the version before its Task took a
    # step. The Task was cancelled before it ran a line of the scheduler's
    # wrapper, which finishes versions: the version stayed running for ever,
    # its Future pending, its slot taken, and aclose() waited without end.
    async def main():
        async with make_scheduler() as s:
            awaited = asyncio.get_running_loop().create_future()
            returned = s.schedule("returned", 0.0, 1, lambda: awaited)
            cancel = s.schedule("cancel", 0.0, 0, s.cancel, ("returned",))
            assert await cancel is True
            await asyncio.wait([returned])
            assert returned.cancelled() and returned.cancel_reason == "cancelled"
            s._check()
            stats = s.stats()
            assert (stats["running"], stats["cancelled"], stats["completed"]) == (0, 1, 1)
            assert not awaited.done()  # never awaited, as by a Task cancelled before its first step

    run(main, loop_factory)


def test_running_versions_that_all_await_aclose_each_return(make_scheduler, loop_factory):
    # Each waited for the other versions only, so each waited for the other:
    # neither returned, and the scheduler never closed.
    async def main():
        async with make_scheduler() as s:
            began = []
            all_began = asyncio.Event()

            async def closer(n):
                began.append(n)
                if len(began) == 3:
                    all_began.set()
                await all_began.wait()  # all three have begun: close() ends none of them
                await s.aclose()
                return n

            futures = [s.schedule(n, 0.0, 0, closer, (n,)) for n in range(3)]
            assert await asyncio.gather(*futures) == [0, 1, 2]
        assert s.state == "closed"
        s._check()

    run(main, loop_factory)


@pytest.mark.parametrize("returns", ["coroutine", "future"])
def test_a_callable_cancelling_itself_before_returning_an_awaitable_ends_cancelled(
        make_scheduler, loop_factory, returns):
    # The stop asked for while its fn ran cancelled its Task before the first
    # step, which never entered the wrapper that finishes the version: it
    # stayed running for ever, its Future pending and its slot taken.
    ran = []

    async def body():
        ran.append("body")

    async def main():
        async with make_scheduler(max_concurrency=1) as s:
            awaited = asyncio.get_running_loop().create_future()
            futures = {}

            def stop_myself(how):
                if how == "by id":
                    assert s.cancel("by id") is True
                else:
                    assert futures[how].cancel("enough") is True
                return body() if returns == "coroutine" else awaited

            for how in ("by id", "by future"):
                futures[how] = s.schedule(how, 0.0, 0, stop_myself, (how,))
            after = s.schedule("after", 0.0, -1, str, ("after",))
            assert await after == "after"  # the slot was freed each time
            for how, fut in futures.items():
                assert fut.cancelled() and fut.cancel_reason == "cancelled", how
            with pytest.raises(asyncio.CancelledError, match="enough"):
                futures["by future"].result()
            s._check()
            stats = s.stats()
            assert (stats["cancelled"], stats["running"]) == (2, 0)
            assert not awaited.done()

    run(main, loop_factory)
    assert ran == []  # the coroutine it returned never ran a line


class _AwaitRaises:
    def __await__(self):
        raise ValueError("no await")


def test_what_an_awaited_result_raises_ends_its_version_alone(make_scheduler, loop_factory):
    # Pins that these end their own version only (failed, or cancelled with
    # the message of a CancelledError the code raised itself), the rest runs.
    other_loop = asyncio.new_event_loop()

    async def cancels_itself():
        await asyncio.sleep(0)
        raise asyncio.CancelledError("my own")

    async def main():
        async with make_scheduler(max_concurrency=1) as s:
            futures = [s.schedule("await raises", 0.0, 3, _AwaitRaises),
                       s.schedule("other loop", 0.0, 2, other_loop.create_future),
                       s.schedule("own cancel", 0.0, 1, cancels_itself)]
            after = s.schedule("after", 0.0, 0, str, ("after",))
            assert await after == "after"
            s._check()
            return futures, s.stats()

    try:
        (raises, foreign, cancelled), stats = run(main, loop_factory)
    finally:
        other_loop.close()
    assert isinstance(raises.exception(), ValueError)
    assert isinstance(foreign.exception(), RuntimeError)  # a Future of another loop
    assert cancelled.cancelled() and cancelled.cancel_reason == "cancelled"
    with pytest.raises(asyncio.CancelledError, match="my own"):
        cancelled.result()
    assert (stats["failed"], stats["cancelled"], stats["completed"]) == (2, 1, 1)
