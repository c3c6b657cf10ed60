"""Group commit on the SQL stores: schedule, cancel and retry calls arriving together from
many threads share one transaction, each call still getting its own result or error.

To make a group for sure, a first write is held inside its transaction (its leader
waits on an event) while the other calls queue; released, the next leader takes them
all. ``_apply`` is watched to see which writes each transaction carried.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from pysched.durable import DurableScheduler, NewTask

import support.durable as h

ARGS = '{"args":[],"kwargs":{}}'
TOO_BIG = 2**70  # passes the store's checks; the database refuses it


@pytest.fixture
def sql_store(store: Any, store_spec: dict[str, Any]) -> Any:
    if store_spec["kind"] == "memory":
        pytest.skip("the memory store commits nothing")
    return store


@pytest.fixture
def make(store_spec: dict[str, Any]) -> Any:
    if store_spec["kind"] == "memory":
        pytest.skip("the memory store commits nothing")
    yield from h.schedulers(store_spec)


def task(task_id: str, priority: int = 0, args: str = ARGS) -> NewTask:
    return NewTask(task_id, 1e9, priority, "note", args)


def watch(store: Any) -> list[tuple[threading.Thread, list[Any]]]:
    """The thread and the writes of each transaction the store commits from now on."""
    seen: list[tuple[threading.Thread, list[Any]]] = []
    apply, schedules = store._apply, store._commit_schedules

    def watched_apply(db: Any, ops: Any) -> Any:
        seen.append((threading.current_thread(), list(ops)))
        return apply(db, ops)

    def watched_schedules(ops: Any) -> Any:
        seen.append((threading.current_thread(), list(ops)))
        return schedules(ops)

    store._apply, store._commit_schedules = watched_apply, watched_schedules
    return seen


class Held:
    """Holds the store's next group until ``release()``; records the ops of every
    transaction since."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.seen = watch(store)
        commit = store._commit_group

        def held(group: Any) -> Any:
            if not self.entered.is_set():
                self.entered.set()
                assert self.gate.wait(30)
            return commit(group)

        store._group._commit = held

    @property
    def groups(self) -> list[list[str]]:
        return [[op.task_id or op.tasks[0].task_id for op in ops] for _, ops in self.seen]

    def queued(self) -> int:
        return len(self.store._group._queue)

    def release(self) -> None:
        self.gate.set()


def run_together(store: Any, calls: list[Callable[[], Any]]) -> tuple[Held, list[Any]]:
    """Each call in a thread of its own, all queued behind one held transaction, then
    released; each call's result or the exception it raised, in order."""
    held = Held(store)
    first = threading.Thread(target=store.schedule, args=([task("holder")],))
    first.start()
    assert held.entered.wait(30)
    results: list[Any] = [None] * len(calls)

    def call(i: int) -> None:
        try:
            results[i] = calls[i]()
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    h.wait_for(lambda: held.queued() == len(calls), what="every call queued")
    held.release()
    for thread in [first, *threads]:
        thread.join(30)
    return held, results


def test_a_bad_item_raises_alone_and_the_rest_of_its_group_commits(sql_store: Any) -> None:
    store = sql_store
    store.schedule([task("to-cancel")])
    calls: list[Callable[[], Any]] = [
        *(lambda i=i: store.schedule([task(f"good-{i}")]) for i in range(6)),
        lambda: store.schedule([task("bad", priority=TOO_BIG)]),
        lambda: store.cancel("to-cancel"),
        lambda: store.retry("never-failed"),
        lambda: store.schedule([task("good-6"), task("good-7")]),
    ]
    held, results = run_together(store, calls)
    # The held one, then one transaction of all ten, failed; then each on its own.
    assert len(held.groups[1]) == len(calls)
    assert len(held.groups) == 2 + len(calls)
    assert results[:6] == [[1]] * 6
    assert isinstance(results[6], Exception)
    assert results[7:] == [2, None, [1, 1]]
    assert store.get("bad") is None
    for i in range(8):
        assert store.get(f"good-{i}")["state"] == "pending"
    assert store.get("to-cancel")["state"] == "cancelled"


def test_a_group_commits_in_one_transaction_in_arrival_order(sql_store: Any) -> None:
    store = sql_store
    calls: list[Callable[[], Any]] = [
        lambda: store.schedule([task("a"), task("b")]),
        lambda: store.cancel("a"),
        lambda: store.schedule([task("a", args='{"args":[2],"kwargs":{}}')]),
        lambda: store.schedule([task("b"), task("b")]),
    ]
    held = Held(store)
    first = threading.Thread(target=store.schedule, args=([task("holder")],))
    first.start()
    assert held.entered.wait(30)
    results: list[Any] = []
    threads = []
    for k, call in enumerate(calls):  # one at a time, so they queue in this order
        thread = threading.Thread(target=lambda call=call: results.append(call()))
        thread.start()
        threads.append(thread)
        h.wait_for(lambda k=k: held.queued() == k + 1, what="the call queued")
    held.release()
    for thread in [first, *threads]:
        thread.join(30)
    assert held.groups[1:] == [["a", "a", "a", "b"]]
    assert sorted(map(str, results)) == sorted(map(str, [[1, 1], 2, [3], [2, 3]]))
    assert store.get("a")["version"] == 3
    assert store.get("a")["args"] == '{"args":[2],"kwargs":{}}'
    assert store.get("b")["version"] == 3
    # Scheduling order follows arrival: a's newest version after b's first.
    assert store.get("a")["seq"] < store.get("b")["seq"]


def test_a_lone_call_commits_on_its_own_thread_at_once(sql_store: Any) -> None:
    store = sql_store
    seen = watch(store)
    assert store.schedule([task("alone")]) == [1]
    assert store.cancel("alone") == 2
    assert [thread for thread, _ in seen] == [threading.current_thread()] * 2


def test_a_connection_error_fails_the_whole_group_without_writing_again(
        sql_store: Any, store_spec: dict[str, Any]) -> None:
    """An error of the database, not of an item, may have committed: nothing is retried."""
    store = sql_store
    if store_spec["kind"] == "sqlite":
        import sqlite3
        error: Exception = sqlite3.OperationalError("disk I/O error")
    else:
        import psycopg
        error = psycopg.OperationalError("the connection is lost")
    writes = []
    write = store._write
    # Every group by _write (a group of schedules on PostgreSQL would be one statement).
    store._commit_schedules = lambda ops: store._write(lambda db: store._apply(db, ops))

    def failing(work: Any) -> Any:
        writes.append(work)
        if len(writes) == 2:
            raise error
        return write(work)

    store._write = failing
    held, results = run_together(store, [lambda i=i: store.schedule([task(f"x{i}")])
                                         for i in range(4)])
    assert len(writes) == 2  # the held one and the failed group: none again
    assert all(result is error for result in results)


def test_a_task_id_scheduled_from_many_threads_gets_one_version_each(make: Any) -> None:
    """Replacement holds under concurrency: distinct versions, the newest one's call
    wrote the row, and only its Future stays pending."""
    s: DurableScheduler = make(max_workers=0)
    n = 16
    start = threading.Barrier(n)
    futures: list[Any] = [None] * n

    def call(i: int) -> None:
        start.wait()
        futures[i] = s.schedule("same", s.clock() + 3600, 0, h.note, args=[i])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(f.version for f in futures) == list(range(1, n + 1))
    newest = max(futures, key=lambda f: f.version)
    row = s.store.get("same")
    assert row["version"] == n
    assert row["args"] == f'{{"args":[{futures.index(newest)}],"kwargs":{{}}}}'
    assert [f for f in futures if not f.cancelled()] == [newest]


@pytest.mark.parametrize("repeat", [False, True])
def test_a_bulk_schedule_keeps_order_and_replacement(sql_store: Any, repeat: bool) -> None:
    store = sql_store
    n = 2500  # past the bulk threshold: COPY on PostgreSQL, multi-row on SQLite
    store.schedule([task("t3")])
    ids = [f"t{i}" for i in range(n)]
    if repeat:
        ids[n // 2] = "t3"  # a repeat within the batch, and of an existing row
    versions = store.schedule([task(i) for i in ids])
    expected = [1] * n
    expected[3] = 2
    if repeat:
        expected[n // 2] = 3
    assert versions == expected
    seqs = [store.get(i)["seq"] for i in ids if i != "t3"]
    assert seqs == sorted(seqs)
    assert store.counts() == {"pending": n - (1 if repeat else 0)}


def test_an_interrupted_leader_fails_its_group_and_hands_the_lead_on() -> None:
    from pysched.durable._group_commit import GroupCommit

    entered, gate = threading.Event(), threading.Event()
    groups: list[list[int]] = []

    def commit(group: Any) -> None:
        groups.append([w.op for w in group])
        if len(groups) == 1:
            entered.set()
            assert gate.wait(30)
        if 13 in [w.op for w in group]:
            raise KeyboardInterrupt
        for w in group:
            w.succeed(w.op * 2)

    committer: GroupCommit[int, int] = GroupCommit(commit)
    results: dict[int, Any] = {}

    def call(op: int) -> None:
        try:
            results[op] = committer.submit(op)
        except BaseException as exc:
            results[op] = exc

    first = threading.Thread(target=call, args=(1,))
    first.start()
    assert entered.wait(30)
    late = [threading.Thread(target=call, args=(op,)) for op in (13, 14)]
    for thread in late:
        thread.start()
    h.wait_for(lambda: len(committer._queue) == 2, what="two queued")
    gate.set()
    for thread in [first, *late]:
        thread.join(30)
    assert results[1] == 2
    assert isinstance(results[13], KeyboardInterrupt)
    assert isinstance(results[14], KeyboardInterrupt)
    assert committer.submit(5) == 10  # the lead was handed back
