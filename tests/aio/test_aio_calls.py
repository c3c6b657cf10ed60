"""Plain callables are called directly by the pump; only an awaitable result gets a Task.

The pump must then survive whatever a callable does to the scheduler from
inside its call: schedule (itself, too), cancel, close, raise.
"""

from __future__ import annotations

import asyncio
import gc
import sys

import pytest

from support.aio import LOOPS, VirtualTimeLoop, run


def counting_tasks(loop_factory):
    """``loop_factory`` whose loops record the name of each coroutine they make a Task for."""
    made = []

    def factory(loop, coro, **kwargs):
        made.append(coro.__qualname__)
        return asyncio.Task(coro, loop=loop, **kwargs)

    def new_loop():
        loop = loop_factory()
        loop.set_task_factory(factory)
        return loop

    return new_loop, made


def test_plain_callables_run_without_a_task(make_scheduler, loop_factory):
    async def later():
        return "awaited"

    def returns_a_coroutine():
        return later()

    async def main():
        async with make_scheduler() as s:
            now = [s.schedule(k, 0.0, 0, int, (k,)) for k in range(20)]
            soon = [s.schedule_in(k + 20, 0.001, 0, int, (k,)) for k in range(20)]
            awaited = s.schedule("coro", 0.0, 0, returns_a_coroutine)
            results = [await f for f in now + soon], await awaited
        return results, list(made)

    new_loop, made = counting_tasks(loop_factory)
    (results, awaited), made = run(main, new_loop)
    assert results == list(range(20)) * 2 and awaited == "awaited"
    # Beside main() (and wait_for's Task on real loops) and the host: one Task, for the coroutine.
    ours = [name for name in made
            if name not in ("_wait", "wait_for") and not name.endswith(".main")]
    assert len(ours) == 1, ours


def test_a_callable_rescheduling_itself_due_now_runs_once_per_iteration(make_scheduler,
                                                                        loop_factory):
    async def main():
        iteration = [0]
        seen = []

        async def count_iterations():
            while True:
                iteration[0] += 1
                await asyncio.sleep(0)

        def again():
            seen.append(iteration[0])
            if len(seen) < 30:
                s.schedule("again", 0.0, 0, again)

        counter = asyncio.get_running_loop().create_task(count_iterations())
        async with make_scheduler() as s:
            await s.schedule("again", 0.0, 0, again)
            while len(seen) < 30:
                await asyncio.sleep(0)
        counter.cancel()
        await asyncio.gather(counter, return_exceptions=True)
        return seen

    seen = run(main, loop_factory)
    assert len(seen) == 30 and seen == sorted(set(seen)), "more than one run per iteration"


def test_a_callable_cancelling_a_version_due_in_the_same_pump(make_scheduler, loop_factory):
    async def main():
        ran = []
        async with make_scheduler() as s:
            def first():
                ran.append("first")
                assert s.cancel("second") is True

            f1 = s.schedule("first", 0.0, 1, first)
            f2 = s.schedule("second", 0.0, 0, ran.append, ("second",))
            await asyncio.gather(f1, f2, return_exceptions=True)
            s._check()
            return ran, f2.cancel_reason, s.stats()

    ran, reason, stats = run(main, loop_factory)
    assert ran == ["first"] and reason == "cancelled"
    assert (stats["completed"], stats["cancelled"]) == (1, 1)


def test_a_callable_closing_the_scheduler(make_scheduler, loop_factory):
    async def main():
        ran = []
        s = make_scheduler()

        def closer():
            ran.append("closer")
            s.close()
            return "closed it"

        f1 = s.schedule("closer", 0.0, 1, closer)
        f2 = s.schedule("next", 0.0, 0, ran.append, ("next",))
        f3 = s.schedule_in("later", 1.0, 0, ran.append, ("later",))
        result = await f1
        await s.aclose()
        s._check()
        return ran, result, f2.cancel_reason, f3.cancel_reason, s.state

    assert run(main, loop_factory) == (["closer"], "closed it", "closed", "closed", "closed")


def test_a_callable_replacing_its_own_id_runs_the_new_version_after(make_scheduler,
                                                                    loop_factory):
    async def main():
        ran = []
        async with make_scheduler() as s:
            def v1():
                ran.append("v1")
                assert s.state_of("a") == "running"
                box.append(s.schedule("a", 0.0, 0, v2))
                return 1

            def v2():
                ran.append("v2")
                return 2

            box = []
            first = await s.schedule("a", 0.0, 0, v1)
            second = await box[0]
            s._check()
        return ran, first, second

    assert run(main, loop_factory) == (["v1", "v2"], 1, 2)


def test_what_a_callable_raises_ends_its_version(make_scheduler, loop_factory):
    def raise_(exc):
        raise exc

    async def main():
        async with make_scheduler(max_concurrency=1) as s:
            futures = [s.schedule("value", 0.0, 3, raise_, (ValueError("bad"),)),
                       s.schedule("stop", 0.0, 2, raise_, (StopIteration(),)),
                       s.schedule("cancel", 0.0, 1, raise_, (asyncio.CancelledError("self"),)),
                       s.schedule("fine", 0.0, 0, str, ("fine",))]
            outcomes = await asyncio.gather(*futures, return_exceptions=True)
            s._check()
            return outcomes, futures[2].cancel_reason, s.stats()

    (value, stop, cancel, fine), reason, stats = run(main, loop_factory)
    assert isinstance(value, ValueError) and fine == "fine"
    assert isinstance(stop, RuntimeError) and isinstance(stop.__cause__, StopIteration)
    assert isinstance(cancel, asyncio.CancelledError) and cancel.args == ("self",)
    assert reason == "cancelled"
    assert (stats["failed"], stats["cancelled"], stats["completed"]) == (2, 1, 1)


def test_a_keyboard_interrupt_leaves_the_loop_and_the_books_straight(make_scheduler):
    def interrupt():
        raise KeyboardInterrupt

    loop = VirtualTimeLoop()
    s = make_scheduler()
    try:
        futures = []

        async def start():
            futures.append(s.schedule("interrupt", 0.0, 1, interrupt))
            futures.append(s.schedule("next", 0.0, 0, str, ("next",)))
            await asyncio.sleep(1)

        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(start())
        s._check()
        interrupted, following = futures
        assert isinstance(interrupted.exception(), KeyboardInterrupt)
        assert loop.run_until_complete(following) == "next"  # the loop goes on: so does it
        loop.run_until_complete(s.aclose())
        s._check()
    finally:
        loop.close()


@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager tasks came in Python 3.12")
def test_an_eager_task_factory_starts_coroutines_in_their_own_context(make_scheduler,
                                                                      loop_factory):
    import contextvars

    var = contextvars.ContextVar("var")

    async def read(name):
        seen = var.get()
        await asyncio.sleep(0)
        return name, seen, var.get()

    if loop_factory is LOOPS["uvloop"]:
        pytest.skip("uvloop's create_task and asyncio's eager task factory do not fit together")

    def new_loop():
        loop = loop_factory()
        loop.set_task_factory(asyncio.eager_task_factory)
        return loop

    async def main():
        async with make_scheduler(max_concurrency=2) as s:
            futures = []
            for tag in "ABC":
                var.set(tag)
                futures.append(s.schedule(tag, 0.0, 0, read, (tag,)))
            return [await f for f in futures]

    assert run(main, new_loop) == [(t, t, t) for t in "ABC"]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager tasks came in Python 3.12")
def test_an_eager_task_factory_may_end_a_version_before_create_task_returns(make_scheduler,
                                                                            loop_factory):
    if loop_factory is LOOPS["uvloop"]:
        pytest.skip("uvloop's create_task and asyncio's eager task factory do not fit together")

    async def instant(value):  # never suspends: its eager first step is all of it
        return value

    async def fails():
        raise ValueError("at once")

    def new_loop():
        loop = loop_factory()
        loop.set_task_factory(asyncio.eager_task_factory)
        return loop

    async def main():
        async with make_scheduler(max_concurrency=2) as s:
            futures = [s.schedule(k, 0.0, 0, instant, (k,)) for k in range(5)]
            failing = s.schedule("fails", 0.0, 0, fails)
            results = [await f for f in futures]
            with pytest.raises(ValueError, match="at once"):
                await failing
            s._check()
            # A Future kept after its version does not keep its Task.
            held = [any(isinstance(r, asyncio.Task) for r in gc.get_referents(f))
                    for f in futures]
            return results, s.stats(), held

    results, stats, held = run(main, new_loop)
    assert results == list(range(5)) and (stats["completed"], stats["failed"]) == (5, 1)
    assert held == [False] * 5
