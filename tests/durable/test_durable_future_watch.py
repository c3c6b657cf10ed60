"""FutureWatch on its own: what each poll reads, over a store that records it.

The store holds rows as (row, written at) and answers ``finished_since`` and
``rows`` as the SQL stores do; its clock is set by the test.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pysched.durable import Row
from pysched.durable._futures import DurableFuture
from pysched.durable._inflight import Inflight
from pysched.durable._watch import BATCH, MARGIN, FutureWatch


class Rows:
    """The part of a store the watch reads."""

    def __init__(self) -> None:
        self.clock = 1000.0
        self.table: dict[str, tuple[Row, float]] = {}
        self.asked: list[int] = []
        self.fail_next = False
        self.clock_reads = 0

    def now(self) -> float:
        self.clock_reads += 1
        return self.clock

    def put(self, task_id: str, state: str, version: int = 1) -> None:
        self.table[task_id] = (Row(task_id, version, state, 0.0, 0, False, "note", "default"),
                              self.clock)

    def finished_since(self, since: float) -> list[Row]:
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("lost")
        return [row for row, at in self.table.values()
                if row.state != "pending" and at >= since]

    def rows(self, task_ids: Sequence[str]) -> list[Row]:
        self.asked.append(len(task_ids))
        return [self.table[i][0] for i in task_ids if i in self.table]


def watching(n: int) -> tuple[FutureWatch, Rows, Inflight, list[str]]:
    """A watch of ``n`` pending rows' Futures; what it settles, by task id."""
    store = Rows()
    inflight = Inflight()
    settled: list[str] = []

    def settle(rows: Sequence[Row]) -> None:
        # As the mirror does: a final state ends its version, a pending one older ones.
        for future in [f for by_version in inflight.supersede_all(
                [(r.task_id, r.version + (r.state != "pending")) for r in rows])
                for f in by_version]:
            settled.append(future.task_id)

    watch = FutureWatch(store, inflight, settle, set)  # type: ignore[arg-type]
    watch.start()
    ids = [f"t{i}" for i in range(n)]
    for i in ids:
        store.put(i, "pending")
    inflight.add_versions(lambda: [(i, 1) for i in ids],
                          lambda i, v: DurableFuture(lambda f: False, i, v))
    return watch, store, inflight, settled


def test_a_poll_reads_the_finished_and_one_batch_never_every_watched_row() -> None:
    watch, store, _, settled = watching(5 * BATCH)
    watch.poll()
    store.clock += 1
    store.put("t7", "completed")
    store.put(f"t{4 * BATCH}", "cancelled", 2)
    watch.poll()
    assert sorted(settled) == sorted(["t7", f"t{4 * BATCH}"])
    assert store.asked and max(store.asked) <= BATCH


def test_few_watched_are_all_read_at_each_poll() -> None:
    watch, store, _, settled = watching(10)
    store.clock += 3600  # far past any window: only a read by id finds it
    store.table["t3"] = (store.table["t3"][0]._replace(state="failed"), 0.0)
    watch.poll()
    assert settled == ["t3"]
    assert store.asked == [10]


def test_a_replaced_version_is_found_by_the_sweep_within_a_round() -> None:
    watch, store, _, settled = watching(4 * BATCH)
    store.put("t1", "pending", version=2)  # replaced elsewhere: out of every window
    for _ in range(4):
        watch.poll()
    assert settled == ["t1"]


def test_a_failed_read_leaves_the_window_where_it_was() -> None:
    watch, store, _, settled = watching(8 * BATCH)
    watch.poll()
    store.clock += 1
    store.put("t5", "completed")
    store.clock += 10 * MARGIN
    store.fail_next = True
    with pytest.raises(ConnectionError):
        watch.poll()
    store.clock += 10 * MARGIN
    watch.poll()  # t5 finished before the failed poll's clock: still in this window
    assert settled == ["t5"]


def test_with_nothing_watched_a_poll_reads_nothing_and_a_later_future_is_still_seen() -> None:
    watch, store, inflight, settled = watching(0)
    reads = store.clock_reads
    for _ in range(20):
        store.clock += 1
        watch.poll()
    assert store.clock_reads == reads and store.asked == []
    ids = [f"n{i}" for i in range(5 * BATCH)]
    for i in ids:
        store.put(i, "pending")
    inflight.add_versions(lambda: [(i, 1) for i in ids],
                          lambda i, v: DurableFuture(lambda f: False, i, v))
    store.clock += 1
    store.put("n9", "completed")
    watch.poll()
    assert settled == ["n9"] and max(store.asked) <= BATCH
