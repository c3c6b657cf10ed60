"""schedule() runs only on its loop's thread while that loop runs.

It checks the thread and the loop's is_running() rather than asking asyncio
for the running loop each time: each way to call it from elsewhere must
still raise, and change nothing.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from support.aio import in_thread, run


def test_a_call_from_another_thread_raises_and_changes_nothing(make_scheduler, loop_factory):
    async def main():
        async with make_scheduler() as s:
            kept = s.schedule_in("kept", 60.0, 0, int)
            before = s.stats()
            how, what = in_thread(lambda: s.schedule("other", 0.0, 0, int))
            assert how == "raised" and isinstance(what, RuntimeError), what
            assert s.stats() == before and s.state_of("other") is None
            s._check()
            kept.cancel()

    run(main, loop_factory)


def test_a_call_while_its_loop_is_stopped_raises_and_changes_nothing(make_scheduler,
                                                                     loop_factory):
    loop = loop_factory()
    try:
        s = make_scheduler()

        async def start():
            return s.schedule_in("kept", 60.0, 0, int)

        kept = loop.run_until_complete(start())  # bound, with work pending; the loop stops
        before = s.stats()
        with pytest.raises(RuntimeError):
            s.schedule("other", 0.0, 0, int)
        assert s.stats() == before

        async def finish():
            kept.cancel()
            await s.aclose()

        loop.run_until_complete(finish())
    finally:
        loop.close()


def test_a_loop_run_again_on_another_thread_takes_calls_from_there_only(make_scheduler,
                                                                        loop_factory):
    loop = loop_factory()
    try:
        s = make_scheduler()

        async def bind():  # on this thread
            return s.schedule_in("kept", 60.0, 0, int)

        kept = loop.run_until_complete(bind())
        used_there = threading.Event()
        old_thread_done = threading.Event()
        outcome = {}

        async def on_the_new_thread():
            outcome["got"] = await s.schedule("new", 0.0, 0, int, ("5",))
            used_there.set()
            while not old_thread_done.is_set():  # the loop keeps running meanwhile
                await asyncio.sleep(0.001)
            kept.cancel()
            await s.aclose()

        thread = threading.Thread(target=loop.run_until_complete, args=(on_the_new_thread(),))
        thread.start()
        try:
            assert used_there.wait(30)
            with pytest.raises(RuntimeError):
                s.schedule("old", 0.0, 0, int)
        finally:
            old_thread_done.set()
            thread.join()
        assert outcome["got"] == 5 and s.state == "closed"
        assert s.stats()["scheduled"] == 2
    finally:
        loop.close()
