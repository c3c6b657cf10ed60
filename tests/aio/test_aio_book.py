"""AsyncScheduler's inline book-keeping matches the book's own methods.

AsyncScheduler keeps its versions in the pool's book (pysched.pool.book),
but schedules, claims and finishes plain callables inline, on the book's
dicts, as the path every version takes. Here the same random operations go
to an AsyncScheduler and to a bare book driven through add(), claim(),
start(), finish() and cancel(): what runs, in which order, what is pending
and every count must agree after each step.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysched.aio import AsyncScheduler
from pysched.pool.book import NoWakeups, PoolBook, end_futures
from pysched.pool.future import TaskFuture

from support.aio import VirtualTimeLoop, run
from support.examples import examples

IDS = st.sampled_from("abcd")
OPS = st.lists(st.one_of(
    st.tuples(st.just("schedule"), IDS, st.sampled_from([0.0, 0.5, 1.0]), st.integers(-1, 1)),
    st.tuples(st.just("cancel"), IDS),
    st.tuples(st.just("advance"), st.sampled_from([0.0, 0.5, 2.0])),
), max_size=30)


class _Owner(NoWakeups):
    def cancel_future(self, fut: TaskFuture) -> bool:
        raise AssertionError("not used")

    def token_for(self, fut: TaskFuture) -> Any:
        raise AssertionError("not used")


def _model_run_due(book: PoolBook, now: float) -> None:
    """What a pool's worker does with every due version, in claim order."""
    ended: list[TaskFuture] = []
    while True:
        work = book.claim(now)
        if work is None or work.__class__ is float:
            break
        task, fut = work  # type: ignore[misc]
        assert book.start(fut)
        result = fut._fn()  # type: ignore[misc]
        book.finish(task, fut, True, now, now, None, ended)
        fut._set_outcome(result, None)
    end_futures(ended)


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # impl: a module
@given(ops=OPS)
def test_inline_paths_agree_with_the_books_methods(impl, ops):
    async def main():
        loop = asyncio.get_running_loop()
        ran: list[tuple[str, str]] = []
        model = PoolBook(impl.Scheduler(clock=loop.time), 10**9, 0.0, None, None, 16, _Owner())
        async with AsyncScheduler(_core_factory=impl.Scheduler) as s:
            for n, op in enumerate(ops):
                now = loop.time()
                if op[0] == "schedule":
                    _, task_id, delay, priority = op
                    s.schedule(task_id, now + delay, priority, ran.append, (("aio", n),))
                    fut = TaskFuture(model.wakeups, lambda n=n: ran.append(("book", n)))
                    fut._task_id = task_id
                    ended: list[TaskFuture] = []
                    model.add(task_id, now + delay, priority, fut, now, ended)
                    end_futures(ended)
                elif op[0] == "cancel":
                    ended = []
                    found, started = model.cancel(op[1], "cancelled", ended)
                    end_futures(ended)
                    assert s.cancel(op[1]) == found and started is None
                else:
                    await asyncio.sleep(op[1])  # the scheduler runs what is due by then
                    _model_run_due(model, loop.time())
                await asyncio.sleep(0)  # a pump asked for by a schedule runs
                _model_run_due(model, loop.time())
                ours = [k for tag, k in ran if tag == "aio"]
                theirs = [k for tag, k in ran if tag == "book"]
                assert ours == theirs, (ours, theirs)
                book = s._book
                assert book.pending.keys() == model.pending.keys()
                assert not book.running and not model.running
                assert book.peak <= 1 and model.peak <= 1
                stats = s.stats()
                counts = model.counts.as_dict()
                for name in ("scheduled", "completed", "cancelled", "replaced", "failed"):
                    assert stats[name] == counts[name], name
                s._check()

    run(main, VirtualTimeLoop)
