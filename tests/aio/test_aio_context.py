"""AsyncScheduler and contextvars: each version sees the context of its own schedule() call.

``asyncio.create_task`` and ``loop.call_at`` copy the caller's context, so
work scheduled from three request handlers sees three request ids; the
scheduler must do the same for coroutines and plain callables, due now and
later, and a version's own changes stay in its copy.
"""

from __future__ import annotations

import asyncio
import contextvars

from support.aio import run

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


def read_plain() -> str:
    return request_id.get()


async def read_coro() -> str:
    await asyncio.sleep(0)
    return request_id.get()


def read_plain_returning_coro():  # a plain callable whose result is awaited in a Task
    seen = request_id.get()

    async def later():
        return seen, request_id.get()

    return later()


KINDS = [("coro", read_coro), ("plain", read_plain), ("plain->coro", read_plain_returning_coro)]
DELAYS = [("now", 0.0), ("later", 0.002)]


def schedule_all(s, tag):
    """One version of every kind and delay, in the current context; {name: future}."""
    return {f"{tag}/{kind}/{when}": s.schedule_in(f"{tag}/{kind}/{when}", delay, 0, fn)
            for kind, fn in KINDS for when, delay in DELAYS}


def test_versions_scheduled_in_turn_see_the_value_set_before_each_call(make_scheduler,
                                                                         loop_factory):
    async def main():
        async with make_scheduler() as s:
            futures = {}
            for tag in "ABC":  # one caller changing its context between calls
                request_id.set(tag)
                futures.update(schedule_all(s, tag))
            return {name: await fut for name, fut in futures.items()}

    results = run(main, loop_factory)
    for name, seen in results.items():
        tag = name[0]
        assert seen == tag or seen == (tag, tag), name


def test_versions_from_three_handlers_each_see_their_handler(make_scheduler, loop_factory):
    async def main():
        async with make_scheduler() as s:
            async def handler(tag):
                request_id.set(tag)
                futures = schedule_all(s, tag)
                return {name: await fut for name, fut in futures.items()}

            results = await asyncio.gather(*(handler(tag) for tag in "ABC"))
            return {name: seen for found in results for name, seen in found.items()}

    results = run(main, loop_factory)
    assert len(results) == 3 * len(KINDS) * len(DELAYS)
    for name, seen in results.items():
        tag = name[0]
        assert seen == tag or seen == (tag, tag), name


def plain_set(value):
    request_id.set(value)
    return request_id.get()


async def coro_set(value):
    request_id.set(value)
    await asyncio.sleep(0)
    return request_id.get()


SETTERS = [plain_set, coro_set, plain_set, coro_set]


def test_a_version_changes_only_its_own_copy(make_scheduler, loop_factory):
    async def main():
        request_id.set("caller")
        async with make_scheduler(max_concurrency=1) as s:
            # In turn, on one slot: a leak from one into the next would show.
            futures = [s.schedule(k, 0.0, -k, fn, (f"v{k}",)) for k, fn in enumerate(SETTERS)]
            seen_by_next = s.schedule("reader", 0.0, -10, read_plain)
            results = [await fut for fut in futures]
            return results, await seen_by_next, request_id.get()

    results, seen_by_next, caller = run(main, loop_factory)
    assert results == ["v0", "v1", "v2", "v3"]
    assert seen_by_next == "caller" and caller == "caller"


def test_a_replacement_runs_in_the_context_of_the_call_that_replaced(make_scheduler,
                                                                      loop_factory):
    async def main():
        async with make_scheduler() as s:
            request_id.set("first")
            old = s.schedule_in("a", 0.001, 0, read_plain)
            request_id.set("second")
            new = s.schedule_in("a", 0.001, 0, read_plain)
            return old.cancel_reason, await new

    assert run(main, loop_factory) == ("replaced", "second")


def test_versions_scheduled_from_a_context_without_variables_share_nothing(make_scheduler,
                                                                            loop_factory):
    # Such a version keeps no copy of its caller's context (there is nothing
    # in it): each must still run in a context of its own.
    async def main():
        async with make_scheduler(max_concurrency=1) as s:
            def schedule_all_from_here():
                assert len(contextvars.copy_context()) == 0
                futures = [s.schedule(k, 0.0, -k, fn, (f"v{k}",))
                           for k, fn in enumerate(SETTERS)]
                later = [s.schedule_in(("later", k), 0.001, -k, fn, (f"w{k}",))
                         for k, fn in enumerate(SETTERS)]
                readers = [s.schedule("reader", 0.0, -10, read_plain),
                           s.schedule_in("reader later", 0.002, 0, read_coro)]
                return futures + later, readers

            futures, readers = contextvars.Context().run(schedule_all_from_here)
            results = [await fut for fut in futures]
            return results, [await fut for fut in readers], contextvars.copy_context()

    results, seen_by_readers, caller = run(main, loop_factory)
    assert results == ["v0", "v1", "v2", "v3", "w0", "w1", "w2", "w3"]
    assert seen_by_readers == ["-", "-"] and request_id not in caller
