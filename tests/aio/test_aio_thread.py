"""The scheduler is called only on its loop's thread while that loop runs.

schedule() checks the thread and the loop's is_running() rather than asking
asyncio for the running loop each time: each way to call it from elsewhere
must still raise, and change nothing; so must cancel(), a Future's cancel(),
close() and a series handle called from another thread.
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


def test_calls_from_another_thread_while_the_loop_runs_raise_and_change_nothing(
        make_scheduler, loop_factory):
    # Only schedule() checked its thread: cancel(), a Future's cancel() and
    # close() changed the books and resolved Futures from the other thread,
    # racing the pump.
    async def main():
        async with make_scheduler() as s:
            kept = s.schedule_in("kept", 60.0, 0, int)
            before = s.stats()
            for call in (lambda: s.cancel("kept"), kept.cancel, s.close,
                         lambda: s.close(cancel_running=True)):
                how, what = in_thread(call)
                assert how == "raised" and isinstance(what, RuntimeError), (how, what)
                assert s.stats() == before and not kept.done() and s.state == "open"
                s._check()
            assert s.cancel("kept") and kept.cancelled()  # on the loop's thread it works

    run(main, loop_factory)


def test_a_series_handle_from_another_thread_raises_and_changes_nothing(make_scheduler,
                                                                        loop_factory):
    # The handle changed the series book from the other thread, then armed
    # the loop's timer from there, racing the loop.
    from pysched import Every

    async def main():
        async with make_scheduler() as s:
            handle = s.schedule_recurring("tick", Every(3600), 0, int)
            paused = s.schedule_recurring("paused", Every(3600), 0, int)
            paused.pause()
            for call in (handle.pause, paused.resume, handle.cancel):
                how, what = in_thread(call)
                assert how == "raised" and isinstance(what, RuntimeError), (how, what)
            assert not handle.paused and not handle.cancelled
            assert paused.paused and not paused.cancelled
            handle.pause()  # on the loop's thread it works
            assert handle.paused and handle.cancel() and handle.cancelled

    run(main, loop_factory)
