"""AsyncScheduler close semantics: open -> closing -> closed, nothing left unresolved.

As for the ThreadPoolScheduler: new schedules are refused from the first
moment, every pending version is cancelled (reason "closed"), running ones
finish, or are cancelled with ``cancel_running``; close is idempotent and may
be called from inside a running task.
"""

from __future__ import annotations

import asyncio

import pytest

from pysched import SchedulerClosed

from support.aio import run, settle


class Gated:
    """A coroutine function that reports its start and waits for the test to release it."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.gate = asyncio.Event()
        self.log: list[str] = []

    async def __call__(self, result: str = "done") -> str:
        self.started.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.log.append("cancelled")
            raise
        self.log.append("finished")
        return result


async def one_running(s):
    """Schedule a Gated task as "r" and wait until it runs; return it and its Future."""
    body = Gated()
    fut = s.schedule("r", 0.0, 0, body)
    await body.started.wait()
    return body, fut


def test_close_cancels_pending_and_lets_running_finish(make_scheduler, loop_factory):
    async def main():
        ran = []
        s = make_scheduler()
        body, running = await one_running(s)
        pending = s.schedule_in("p", 3600.0, 0, ran.append, ("p",))
        parked = s.schedule("r", 0.0, 0, ran.append, ("r v2",))  # waits for the running version
        closing = asyncio.ensure_future(s.aclose())
        await settle()
        assert s.state == "closing" and not closing.done()
        assert pending.cancel_reason == "closed" and parked.cancel_reason == "closed"
        with pytest.raises(SchedulerClosed):
            s.schedule("late", 0.0, 0, ran.append, ("late",))
        assert not running.done()
        s._check()
        body.gate.set()
        await closing
        assert s.state == "closed"
        s._check()
        return ran, running.result(), body.log, s.stats()

    ran, result, log, stats = run(main, loop_factory)
    assert ran == [] and result == "done" and log == ["finished"]
    assert [stats[k] for k in ("completed", "cancelled", "pending", "running")] == [1, 2, 0, 0]


def test_close_with_cancel_running_cancels_their_tasks(make_scheduler, loop_factory):
    async def main():
        s = make_scheduler()
        body, running = await one_running(s)
        await s.aclose(cancel_running=True)
        assert s.state == "closed" and running.cancelled()
        return running.cancel_reason, body.log

    assert run(main, loop_factory) == ("closed", ["cancelled"])


def test_async_with_closes_on_exit_as_configured(make_scheduler, loop_factory):
    async def main():
        body = Gated()
        async with make_scheduler(cancel_running_on_close=True) as s:
            running = s.schedule("r", 0.0, 0, body)
            pending = s.schedule_in("p", 3600.0, 0, int)
            await body.started.wait()
        return s.state, running.cancel_reason, pending.cancel_reason

    assert run(main, loop_factory) == ("closed", "closed", "closed")


def test_async_with_closes_when_the_body_raises(make_scheduler, loop_factory):
    async def main():
        s = make_scheduler()
        with pytest.raises(KeyError):
            async with s:
                pending = s.schedule_in("p", 3600.0, 0, int)
                raise KeyError("body")
        return s.state, pending.cancel_reason

    assert run(main, loop_factory) == ("closed", "closed")


def test_close_is_idempotent_and_a_later_cancel_running_escalates(make_scheduler, loop_factory):
    async def main():
        s = make_scheduler()
        body, running = await one_running(s)
        s.close()
        s.close()
        assert s.state == "closing" and not running.done()
        s.close(cancel_running=True)
        await s.aclose()
        await s.aclose()
        return s.state, running.cancel_reason

    assert run(main, loop_factory) == ("closed", "closed")


def test_close_of_a_scheduler_never_used(make_scheduler, loop_factory):
    async def main():
        s = make_scheduler()
        s.close()
        await s.aclose()
        return s.state

    assert run(main, loop_factory) == "closed"


def test_aclose_from_inside_a_task_waits_for_the_others_only(make_scheduler, loop_factory):
    async def main():
        other = Gated()
        log = []
        s = make_scheduler()

        async def closer():
            await s.aclose(cancel_running=False)
            log.append(("aclose returned", s.state, other.log[:]))
            return "closer done"

        other_fut = s.schedule("other", 0.0, 1, other)
        await other.started.wait()
        closer_fut = s.schedule("closer", 0.0, 0, closer)
        await settle()
        assert s.state == "closing" and not closer_fut.done()
        other.gate.set()
        results = await asyncio.gather(other_fut, closer_fut)
        await settle()
        return log, results, s.state

    log, results, state = run(main, loop_factory)
    assert log == [("aclose returned", "closing", ["finished"])]
    assert results == ["done", "closer done"] and state == "closed"


def test_cancel_running_from_inside_a_task_spares_the_caller(make_scheduler, loop_factory):
    async def main():
        other = Gated()
        s = make_scheduler()

        async def closer():
            await s.aclose(cancel_running=True)
            return "closer done"

        other_fut = s.schedule("other", 0.0, 1, other)
        await other.started.wait()
        result = await s.schedule("closer", 0.0, 0, closer)
        await asyncio.gather(other_fut, return_exceptions=True)
        await settle()
        return result, other_fut.cancel_reason, s.state

    assert run(main, loop_factory) == ("closer done", "closed", "closed")


def test_a_cancelled_aclose_cancels_what_runs_and_reraises(make_scheduler, loop_factory):
    async def main():
        s = make_scheduler()
        body, running = await one_running(s)
        closing = asyncio.ensure_future(s.aclose())
        await settle()
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        return s.state, running.cancel_reason, body.log

    assert run(main, loop_factory) == ("closed", "closed", ["cancelled"])


def test_every_future_is_resolved_once_closed(make_scheduler, loop_factory):
    async def main():
        bodies = [Gated() for _ in range(4)]
        s = make_scheduler(max_concurrency=2)
        futures = [s.schedule(i, 0.0, 0, body) for i, body in enumerate(bodies)]
        futures += [s.schedule_in(("later", i), 0.001 * i, 0, int) for i in range(5)]
        await bodies[0].started.wait()
        await bodies[1].started.wait()
        futures.append(s.schedule(0, 0.0, 0, int))  # a newer version of a running id
        bodies[0].gate.set()
        closing = asyncio.ensure_future(s.aclose())
        await settle()
        bodies[1].gate.set()
        await closing
        s._check()
        return [f.done() for f in futures], s.stats()

    done, stats = run(main, loop_factory)
    assert all(done)
    assert stats["scheduled"] == 10 and stats["pending"] == stats["running"] == 0


def test_a_second_cancel_stops_aclose_waiting(make_scheduler, loop_factory):
    async def main():
        started = asyncio.Event()
        refuse = True

        async def stubborn():
            started.set()
            while refuse:
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    continue  # refuses to stop while ``refuse``
            return "gave in"

        s = make_scheduler()
        running = s.schedule("r", 0.0, 0, stubborn)
        await started.wait()
        closing = asyncio.ensure_future(s.aclose())
        await settle()
        closing.cancel()
        await settle()
        assert not closing.done(), "the first cancel waits for the running versions"
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        state = s.state
        refuse = False
        s.cancel("r")
        return state, await running, s.state

    assert run(main, loop_factory) == ("closing", "gave in", "closed")
