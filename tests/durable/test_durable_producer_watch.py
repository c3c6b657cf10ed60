"""A producer's watch of its Futures costs what changed, not what it watches.

A producer (``max_workers=0``) settles the Futures of versions other processes
ran, cancelled or replaced from their rows. With more Futures watched than one
poll reads by id (``_watch.BATCH``), a poll reads the rows finished since the
poll before, and a bounded sweep of the rest; it must never re-read every
watched row. The store's ``rows`` is wrapped to record how many ids each read
asked for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from pysched.durable import Store

import support.durable as h

MANY = 1000  # watched Futures: several times what one poll reads by id
BATCH = 256  # pysched.durable._watch.BATCH


@pytest.fixture
def make(store_spec: dict[str, Any]) -> Any:
    if store_spec["kind"] == "memory":
        pytest.skip("a memory store keeps no index of finished rows: it reads every row")
    yield from h.schedulers(store_spec)


def count_reads(store: Store) -> list[int]:
    """Wrap ``store.rows``: the number of ids each call asked for (None: every pending row)."""
    asked: list[int] = []
    lock = threading.Lock()
    rows: Callable[..., Any] = store.rows

    def counted(task_ids: Any = None) -> Any:
        with lock:
            asked.append(-1 if task_ids is None else len(task_ids))
        return rows(task_ids)

    store.rows = counted  # type: ignore[method-assign]
    return asked


def producer_with_many(make: Any) -> tuple[Any, list[int], list[Any], list[Any]]:
    """A producer watching MANY Futures due in an hour and 5 due now; its reads."""
    producer = make(max_workers=0, poll_interval=0.01)
    asked = count_reads(producer.store)
    later = producer.schedule_many([(f"later-{i}", producer.clock() + 3600.0, 0, h.note)
                                    for i in range(MANY)])
    now = producer.schedule_many([(f"now-{i}", producer.clock(), 0, h.note, [i])
                                  for i in range(5)])
    return producer, asked, later, now


def test_a_poll_reads_what_finished_and_a_bounded_sweep_not_every_watched_row(make: Any
                                                                               ) -> None:
    producer, asked, later, now = producer_with_many(make)
    worker = make(max_workers=2)
    assert [f.result(timeout=30) for f in now] == [None] * 5  # settled from their rows
    h.wait_for(lambda: len(asked) >= 8, what="several polls")
    assert max(asked) <= BATCH, asked
    assert not any(f.done() for f in later)
    worker.close()


def test_a_version_replaced_elsewhere_is_cancelled_by_the_sweep(make: Any) -> None:
    producer, asked, later, _ = producer_with_many(make)
    other = make(max_workers=0)
    other.schedule_in("later-7", 3600.0, 0, h.note)  # a newer version, pending
    h.wait_for(later[7].cancelled, what="the replaced version's Future cancelled")
    assert max(asked) <= BATCH, asked
    assert not any(f.done() for i, f in enumerate(later) if i != 7)


def test_a_cancel_elsewhere_settles_at_the_next_poll(make: Any) -> None:
    producer, asked, later, _ = producer_with_many(make)
    other = make(max_workers=0)
    for i in (3, 500, 999):
        assert other.cancel(f"later-{i}")
    for i in (3, 500, 999):
        h.wait_for(later[i].cancelled, what=f"later-{i} cancelled")
    assert max(asked) <= BATCH, asked


def test_a_finish_written_behind_the_window_is_still_settled(make: Any,
                                                             store_spec: dict[str, Any]) -> None:
    """A finish whose clock reading is far older than its commit (a writer's clock, a
    stalled transaction) is out of every window: the sweep reads it all the same."""
    producer, asked, later, _ = producer_with_many(make)
    store = h.open_spec(store_spec)
    try:
        store._conns.get().execute(  # type: ignore[attr-defined]
            f"UPDATE {store_spec['table']} SET state = 'completed', updated_at = 1"
            " WHERE task_id = 'later-42'")
        assert later[42].result(timeout=30) is None
    finally:
        store.close()
    assert max(asked) <= BATCH, asked
