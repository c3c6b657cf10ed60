"""PostgreSQL only: surviving the database (terminated sessions, an outage) and a NOTIFY flood.

The outage is made on the private test server without restarting it: the
worker connects as its own role, whose sessions are terminated while the
role's connection limit is 0, so every reconnection fails until the limit is
lifted, as during a restart.
"""

from __future__ import annotations

from typing import Any

import pytest

from pysched.durable import DurableScheduler, NewTask, Outcome, PostgresStore

import support.durable as h
from support.durable import ROLE, terminate_worker_sessions

ARGS = '{"args":[],"kwargs":{}}'
def test_a_worker_survives_its_sessions_being_terminated(pg: dict[str, Any]) -> None:
    """pg_terminate_backend on every session of the worker, twice: it reconnects,
    listens again, and runs what is scheduled afterwards, by itself and by others."""
    s = DurableScheduler(PostgresStore(pg["worker_url"], table=pg["table"]),
                         poll_interval=0.05, resync_interval=3600)
    client = PostgresStore(pg["url"], table=pg["table"])
    try:
        assert s.schedule("before", s.clock(), 0, h.note, ["before"]).result(30) == "before"
        for round_ in range(2):
            h.wait_for(lambda: s.store._listener is not None, what="the listener")
            assert terminate_worker_sessions(pg["admin"]) >= 2
            # The first call after the loss works: the dead session is noticed unused.
            f = s.schedule(f"own{round_}", s.clock(), 0, h.note, [round_])
            assert f.result(30) == round_
            # Another process's write reaches it through the new LISTEN.
            client.schedule([NewTask(f"other{round_}", 0.0, 0, "note", ARGS)])
            h.wait_for(lambda r=round_: s.row(f"other{r}")["state"] == "completed",
                       what="the other process's task")
    finally:
        s.close(timeout=30)
        s.store.close()
        client.close()


def test_a_worker_survives_an_outage_and_stores_the_outcomes_it_held(
        pg: dict[str, Any]) -> None:
    """The database refuses the worker while a task runs: its outcome is stored once
    the database is back, and schedule() fails during the outage and works after it."""
    import psycopg

    s = DurableScheduler(PostgresStore(pg["worker_url"], table=pg["table"]),
                         poll_interval=0.05, resync_interval=3600, lease=60.0)
    try:
        running = s.schedule("long", s.clock(), 0, h.hold, args=["o-started", "o-release"])
        assert h.event("o-started").wait(30)
        pg["admin"].execute(f"ALTER ROLE {ROLE} CONNECTION LIMIT 0")
        terminate_worker_sessions(pg["admin"])
        with pytest.raises(psycopg.OperationalError):
            s.schedule("during", s.clock(), 0, h.note)
        h.event("o-release").set()  # its outcome cannot be stored yet
        h.wait_for(lambda: ("long", "end", None) in h.CALLS, what="the run's end")
        h.wait_for(lambda: s.stats()["store_errors"] >= 3, what="failed attempts")
        assert not running.done()  # a Future resolves once its outcome is stored
        pg["admin"].execute(f"ALTER ROLE {ROLE} CONNECTION LIMIT -1")
        assert running.result(30) is False
        h.wait_for(lambda: s.stats()["completed"] == 1, what="the held outcome to be stored")
        assert s.row("long")["state"] == "completed" and s.row("long")["attempts"] == 1
        assert s.schedule("after", s.clock(), 0, h.note, ["after"]).result(30) == "after"
    finally:
        pg["admin"].execute(f"ALTER ROLE {ROLE} CONNECTION LIMIT -1")
        h.event("o-release").set()
        s.close(timeout=30)
        s.store.close()


def test_a_notify_flood_does_not_force_a_full_read_per_notification(
        pg: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    """Any role can NOTIFY the channel: 200 '*' and garbled payloads cost at most one
    full re-read per resync_interval, and real writes are still seen at once."""
    s = DurableScheduler(PostgresStore(pg["url"], table=pg["table"]), poll_interval=0.05,
                         resync_interval=3600)
    client = PostgresStore(pg["url"], table=pg["table"])
    try:
        h.wait_for(lambda: s.stats()["resyncs"] >= 2, what="the first LISTEN's re-read")
        before = s.stats()["resyncs"]
        with caplog.at_level("WARNING", logger="pysched.durable"):
            for i in range(200):
                pg["admin"].execute("SELECT pg_notify(%s, %s)",
                                    (pg["table"], "*" if i % 2 else "{garbled"))
            client.schedule([NewTask("marker", 0.0, 0, "note", ARGS)])
            h.wait_for(lambda: s.row("marker")["state"] == "completed", what="the marker task")
        assert s.stats()["resyncs"] == before
        assert s.stats()["resyncs_skipped"] >= 1
        refusals = [r for r in caplog.records if "full re-read" in r.getMessage()]
        assert len(refusals) == 1  # logged once, not once per notification
    finally:
        s.close(timeout=30)
        s.store.close()
        client.close()


def test_a_large_batch_is_announced_by_ids_not_by_a_full_read(pg: dict[str, Any]) -> None:
    """Ids that do not fit one notification go in several, so another process sees a
    big batch at once although full re-reads are debounced."""
    s = DurableScheduler(PostgresStore(pg["url"], table=pg["table"]), poll_interval=0.05,
                         resync_interval=3600)
    client = PostgresStore(pg["url"], table=pg["table"])
    try:
        h.wait_for(lambda: s.stats()["resyncs"] >= 2, what="the first LISTEN's re-read")
        client.schedule([NewTask(f"task-with-a-longish-id-{i:05d}", 0.0, 0, "note", ARGS)
                         for i in range(2000)])
        h.wait_for(lambda: client.counts() == {"completed": 2000}, what="2000 runs")
        assert s.stats()["resyncs_skipped"] == 0
    finally:
        s.close(timeout=30)
        s.store.close()
        client.close()


def test_ids_beside_a_request_for_everything_are_not_lost(pg: dict[str, Any]) -> None:
    """A '*' and a list of ids committed together arrive in one packet: the ids must
    come back with ``everything`` set, not be swallowed by it (it may be debounced)."""
    listener = PostgresStore(pg["url"], table=pg["table"])
    try:
        first = listener.wait_changes(1.0)
        assert first is not None and not first and first.everything  # the subscription
        with pg["admin"].transaction():
            pg["admin"].execute("SELECT pg_notify(%s, '*')", (pg["table"],))
            pg["admin"].execute("SELECT pg_notify(%s, %s)", (pg["table"], '["a", "b"]'))
            pg["admin"].execute("SELECT pg_notify(%s, '{garbled')", (pg["table"],))
        seen: set[str] = set()
        everything = False
        while (changed := listener.wait_changes(1.0)) is not None:
            seen |= changed
            everything |= changed.everything
        assert seen == {"a", "b"} and everything
    finally:
        listener.close()


@pytest.mark.parametrize("errors", [1, 2])
def test_a_write_aborted_to_break_a_lock_cycle_is_tried_again(
        pg: dict[str, Any], errors: int) -> None:
    """PostgreSQL aborts one transaction of a lock cycle (deadlock_detected) and says to
    retry it: finish, heartbeat and the releases do, rather than failing the worker."""
    import psycopg

    store = PostgresStore(pg["url"], table=pg["table"])
    lock_rows = store._lock_rows
    aborted: list[str] = []

    def aborting(db: Any, name: str, params: Any) -> None:
        lock_rows(db, name, params)  # the transaction holds locks when it is aborted
        if len(aborted) < errors:
            aborted.append(name)
            raise psycopg.errors.DeadlockDetected("deadlock detected")

    try:
        store.schedule([NewTask(i, 100.0, 0, "note", ARGS) for i in ("a", "b")])
        claims = store.claim(1e9, 2, "w", 3600.0)
        store._lock_rows = aborting  # type: ignore[method-assign]
        assert sorted(store.heartbeat("w", 3600.0, [c.token for c in claims])) == \
            sorted(c.token for c in claims)
        del aborted[:]
        assert store.finish([Outcome(claims[0].token, claims[0].task_id, claims[0].version,
                                     "completed", None)]) == [True]
        del aborted[:]
        assert store.release_owner("w") == [claims[1].task_id]
        assert store.get("a")["state"] == "completed"  # type: ignore[index]
        assert store.get("b")["state"] == "pending"  # type: ignore[index]
    finally:
        store.close()


def test_a_write_aborted_every_time_raises(pg: dict[str, Any]) -> None:
    import psycopg

    store = PostgresStore(pg["url"], table=pg["table"])

    def aborting(db: Any, name: str, params: Any) -> None:
        raise psycopg.errors.DeadlockDetected("deadlock detected")

    try:
        store._lock_rows = aborting  # type: ignore[method-assign]
        with pytest.raises(psycopg.errors.DeadlockDetected):
            store.heartbeat("w", 3600.0)
    finally:
        store.close()
