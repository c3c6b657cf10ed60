"""AsyncScheduler's inline book-keeping matches the book's own methods.

AsyncScheduler keeps its versions' records in the shared book
(``pysched.pool.book``), but adds, claims and completes a plain callable's
version inline, on the book's dicts and the record, as the path every
version takes (a call per step fewer: see the comments there). Here the same
random operations go to an AsyncScheduler and to a bare ``Book`` driven
through ``adopt()``, ``claim()``, ``complete()`` and ``cancel()``: what runs,
in which order, what is pending and every count must agree after each step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysched.aio import AsyncScheduler
from pysched.pool.book import Book, NoWakeups

from support.aio import VirtualTimeLoop, run

IDS = st.sampled_from("abcd")
OPS = st.lists(st.one_of(
    st.tuples(st.just("schedule"), IDS, st.sampled_from([0.0, 0.5, 1.0]), st.integers(-1, 1)),
    st.tuples(st.just("cancel"), IDS),
    st.tuples(st.just("advance"), st.sampled_from([0.0, 0.5, 2.0])),
), max_size=30)


class Record:
    """The least a book's record is (``pysched.pool.book.BookVersion``)."""

    series = None
    in_run = False
    run_at = 0.0
    cancel_reason: str | None = None

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.task_id: Hashable = None
        self.task: Any = None
        self.future = None

    def has_started(self) -> bool:
        return True  # the model runs what it claims at once


def _model_schedule(book: Book[Record], task_id: str, run_at: float, priority: int,
                    fn: Callable[[], Any]) -> None:
    book.core.schedule(task_id, run_at, priority, fn)
    for ended in book.adopt(task_id, Record(fn)) or ():
        assert ended.cancel_reason == "replaced"


def _model_run_due(book: Book[Record], now: float) -> None:
    while True:
        claimed = book.claim(now)
        if claimed is None or claimed.__class__ is float:
            break
        claimed.task.fn()  # type: ignore[union-attr]
        book.complete(claimed)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # impl: a module
@given(ops=OPS)
def test_inline_paths_agree_with_the_books_methods(impl, ops):
    async def main():
        loop = asyncio.get_running_loop()
        ran: list[tuple[str, int]] = []
        model: Book[Record] = Book(impl.Scheduler(clock=loop.time), 10**9, None, NoWakeups())
        async with AsyncScheduler(_core_factory=impl.Scheduler) as s:
            for n, op in enumerate(ops):
                now = loop.time()
                if op[0] == "schedule":
                    _, task_id, delay, priority = op
                    s.schedule(task_id, now + delay, priority, ran.append, (("aio", n),))
                    _model_schedule(model, task_id, now + delay, priority,
                                    lambda n=n: ran.append(("book", n)))
                elif op[0] == "cancel":
                    ended: list[Record] = []
                    found, started = model.cancel(op[1], "cancelled", ended)
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
                assert all(r.task_id == k for k, r in book.pending.items())
                assert not book.running and not model.running
                assert book.peak <= 1 and model.peak <= 1
                stats = s.stats()
                core_stats = model.core.stats()
                counts = model.counts.as_dict()
                for name in ("scheduled", "completed"):
                    assert stats[name] == core_stats[name], name
                for name in ("cancelled", "replaced", "failed"):
                    assert stats[name] == counts[name], name
                s._check()

    run(main, VirtualTimeLoop)
