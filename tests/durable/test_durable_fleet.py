"""Fleet operations on each store: routing by task name and queue, retries, wall-clock
scheduling, producers that only enqueue, retention of finished rows, old tables."""

from __future__ import annotations

import datetime
import threading
from typing import Any

import pytest

from pysched.durable import DurableScheduler, NewTask, Retry, TaskRegistry

import support.durable as h
from support.durable import open_spec

ARGS = '{"args":[],"kwargs":{}}'
FLAKY: dict[str, int] = {}  # task id -> failures still to raise
_flaky_lock = threading.Lock()


def flaky(task_id: str, kind: str = "value") -> str:
    with _flaky_lock:
        left = FLAKY.get(task_id, 0)
        FLAKY[task_id] = left - 1
    if left > 0:
        raise (ValueError if kind == "value" else KeyError)(f"{task_id} fails {left} more")
    return "ok"


def registry_with(*names: str, **options: Any) -> TaskRegistry:
    registry = TaskRegistry()
    for name in names:
        fn = {"note": h.note, "flaky": flaky}[name.split("@")[0]]
        registry.register(fn, name, **options)
    return registry


@pytest.fixture(autouse=True)
def no_flaky_failures_left() -> None:
    FLAKY.clear()



@pytest.fixture
def make(store_spec: dict[str, Any]) -> Any:
    yield from h.schedulers(store_spec)

def test_a_rolling_deploy_loses_nothing_to_error(make: Any) -> None:
    """An old worker that does not know a new task name leaves it for a new worker."""
    old = make(registry=registry_with("note"), resync_interval=0.1)
    new = make(registry=registry_with("note", "note@v2"), resync_interval=0.1)
    old.store.schedule([NewTask(f"new{i}", 0.0, 0, "note@v2", ARGS) for i in range(20)]
                       + [NewTask(f"old{i}", 0.0, 0, "note", ARGS) for i in range(20)])
    h.wait_for(lambda: old.store.counts() == {"completed": 40}, what="40 runs")
    assert old.stats()["errors"] == 0 and new.stats()["errors"] == 0
    assert new.stats()["claimed"] >= 20  # every new-name task, and maybe some old ones


def test_a_worker_claims_only_the_queues_it_serves(make: Any) -> None:
    registry = registry_with("note")
    registry.register(h.fail, "fail", queue="mail")
    producer = make(registry=registry, max_workers=0)
    mail = make(registry=registry, queues=["mail"], resync_interval=0.1, stale_after=0.01)
    a = producer.schedule("a", producer.clock(), 0, h.note, ["a"])  # the default queue
    b = producer.schedule("b", producer.clock(), 0, h.note, ["b"], queue="mail")
    c = producer.schedule("c", producer.clock(), 0, h.fail, ["c"])  # its registered queue
    assert b.result(30) is None  # a producer sees another process's completion as None
    with pytest.raises(Exception, match="failed"):
        c.result(30)
    assert producer.row("c")["queue"] == "mail" and producer.row("a")["queue"] == "default"
    h.wait_for(lambda: mail.stats()["unclaimed"] == 1, what="the unclaimed row in stats()")
    assert producer.row("a")["state"] == "pending" and not a.done()
    assert mail.stats()["oldest_unclaimed_run_at"] == producer.row("a")["run_at"]
    assert mail.stats()["queues"] == ["mail"]


def test_a_producer_claims_nothing_and_starts_no_worker(make: Any) -> None:
    producer = make(max_workers=0)
    f = producer.schedule("p", producer.clock(), 0, h.note, ["p"])
    assert [t for t in threading.enumerate() if t.name == "pysched-durable-claim"] == []
    assert producer.stats()["local_pending"] == 0
    worker = make(registry=registry_with("note"))
    assert f.result(30) is None
    assert worker.row("p")["state"] == "completed" and producer.stats()["claimed"] == 0
    with pytest.raises(ValueError, match="producer"):
        DurableScheduler(None, max_workers=0, prefetch=2)


def test_retries_with_backoff_then_success(make: Any) -> None:
    s = make(registry=registry_with("flaky", retry=Retry(3, backoff=0.01)))
    FLAKY["r"] = 2
    f = s.schedule("r", s.clock(), 0, flaky, ["r"])
    assert f.result(30) == "ok"
    row = s.row("r")
    assert (row["state"], row["attempts"], row["version"]) == ("completed", 3, 1)
    assert s.stats()["retried"] == 2 and s.stats()["failed"] == 0


def test_the_last_failure_is_final_with_its_traceback(
        make: Any, caplog: pytest.LogCaptureFixture) -> None:
    s = make(registry=registry_with("flaky", retry=Retry(2, backoff=0.0, on=ValueError)))
    FLAKY["x"], FLAKY["k"] = 5, 5
    with caplog.at_level("ERROR", logger="pysched.durable"):
        fx = s.schedule("x", s.clock(), 0, flaky, ["x"])
        fk = s.schedule("k", s.clock(), 0, flaky, ["k", "key"])
        with pytest.raises(ValueError, match="fails 4 more"):
            fx.result(30)
        with pytest.raises(KeyError):
            fk.result(30)
    h.wait_for(lambda: s.row("k")["state"] == "failed", what="k's failure stored")
    h.wait_for(lambda: s.row("x")["state"] == "failed", what="x's failure stored")
    assert s.row("x")["attempts"] == 2 and s.row("k")["attempts"] == 1  # KeyError: no retry
    assert "Traceback" in s.row("x")["error"] and "in flaky" in s.row("x")["error"]
    assert any(r.exc_info and "'x'" in r.getMessage() for r in caplog.records)


def test_retry_puts_a_failed_task_back(make: Any) -> None:
    s = make(registry=registry_with("flaky"))
    FLAKY["once"] = 1
    with pytest.raises(ValueError):
        s.schedule("once", s.clock(), 0, flaky, ["once"]).result(30)
    h.wait_for(lambda: s.row("once")["state"] == "failed", what="the failure stored")
    again = s.retry("once")
    assert again is not None and again.version == 2
    assert again.result(30) == "ok"
    assert s.retry("once") is None  # completed: nothing to retry
    assert s.retry("never-scheduled") is None
    with pytest.raises(ValueError, match="task_id"):
        s.retry("bad\x00id")


def test_schedule_at_an_aware_datetime(make: Any) -> None:
    s = make()
    now = datetime.datetime.now(datetime.timezone(datetime.timedelta(hours=5)))
    soon = s.schedule_at("soon", now - datetime.timedelta(seconds=1), 0, h.note, ["soon"])
    later = s.schedule_at("later", now + datetime.timedelta(hours=2), 0, h.note)
    assert soon.result(30) == "soon"
    assert later.version == 1 and not later.done()
    assert abs(s.row("later")["run_at"] - (now.timestamp() + 7200)) < 1e-3
    with pytest.raises(ValueError, match="aware"):
        s.schedule_at("naive", datetime.datetime.now(), 0, h.note)
    with pytest.raises(TypeError, match="datetime"):
        s.schedule_at("number", 5.0, 0, h.note)  # type: ignore[arg-type]
    assert s.row("naive") is None


def test_retention_prunes_finished_rows_in_batches(store_spec: dict[str, Any]) -> None:
    store = open_spec(store_spec)
    store.schedule([NewTask(f"t{i}", 0.0, 0, "note", ARGS) for i in range(25)]
                   + [NewTask("waiting", 0.0, 0, "note", ARGS)])
    claims = [c for c in store.claim(1e9, 30, "w", 3600.0) if c.task_id != "waiting"]
    store.finish([h.outcome(c) for c in claims if c.task_id != "waiting"])
    store.schedule([NewTask("waiting", 0.0, 0, "note", ARGS)])  # pending again: kept
    cutoff = store.now() + 1
    assert store.prune(store.now() - 3600, 10) == 0  # none is an hour old
    assert [store.prune(cutoff, 10) for _ in range(4)] == [10, 10, 5, 0]
    assert store.counts() == {"pending": 1}
    assert store.schedule([NewTask("t0", 0.0, 0, "note", ARGS)]) == [1]  # starts again
    if store_spec["kind"] != "memory":
        store.close()


def test_a_table_made_by_an_older_version_gains_the_new_columns(
        store_spec: dict[str, Any]) -> None:
    if store_spec["kind"] == "memory":
        pytest.skip("a memory store has no table to migrate")
    old = ("task_id TEXT PRIMARY KEY, version INTEGER NOT NULL, state TEXT NOT NULL,"
           " run_at REAL NOT NULL, priority INTEGER NOT NULL, ref TEXT NOT NULL,"
           " args TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL,"
           " fmt INTEGER NOT NULL DEFAULT 1, error TEXT, lease_owner TEXT, lease_token TEXT,"
           " lease_expires REAL")
    table = store_spec["table"]
    insert = (f"INSERT INTO {table} (task_id, version, state, run_at, priority, ref, args, seq)"
              " VALUES ('kept', 1, 'pending', 0, 0, 'note', '{\"args\":[],\"kwargs\":{}}', 1)")
    if store_spec["kind"] == "sqlite":
        import sqlite3

        with sqlite3.connect(store_spec["target"]) as db:
            db.execute(f"CREATE TABLE {table} ({old})")
            db.execute(insert)
    else:
        import psycopg

        with psycopg.connect(store_spec["target"], autocommit=True) as db:
            db.execute(f"CREATE TABLE {table} ({old.replace('REAL', 'double precision')})")
            db.execute(insert)
    store = open_spec(store_spec)
    assert store.get("kept")["queue"] == "default" and store.get("kept")["updated_at"] is None
    (claim,) = store.claim(1e9, 5, "w", 60.0, registry_with("note").serves(["default"]))
    assert claim.task_id == "kept"
    store.close()


def test_a_worker_prunes_what_it_finished_after_the_retention(make: Any) -> None:
    s = make(retention=0.001, resync_interval=0.05)
    for f in s.schedule_many([(f"p{i}", s.clock(), 0, h.note, [i]) for i in range(30)]):
        f.result(30)
    s.schedule("later", s.clock() + 3600, 0, h.note)
    h.wait_for(lambda: s.stats()["pruned"] == 30, what="30 rows pruned")
    assert s.store.counts() == {"pending": 1}


def test_retry_policies_and_fleet_arguments_are_checked() -> None:
    assert Retry(5, backoff=2.0, jitter=False).delay(3) == 8.0
    assert Retry(5, backoff=2.0, max_backoff=5.0, jitter=False).delay(9) == 5.0
    assert 0.5 <= Retry(backoff=1.0).delay(1) <= 1.0
    assert Retry(2, on=KeyError).retries(KeyError("k"), 1)
    assert not Retry(2, on=KeyError).retries(ValueError("v"), 1)
    assert not Retry(2).retries(ValueError("v"), 2)  # the last try
    for bad, match in [({"attempts": 0}, "attempts"), ({"attempts": 1.5}, "attempts"),
                       ({"backoff": -1.0}, "backoff"), ({"max_backoff": float("inf")},
                                                         "max_backoff")]:
        with pytest.raises(ValueError, match=match):
            Retry(**bad)
    with pytest.raises(TypeError, match="on must be exception classes"):
        Retry(on=[int])
    with pytest.raises(TypeError, match="retry must be a Retry"):
        TaskRegistry().register(h.note, "n", retry=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="queue"):
        TaskRegistry().register(h.note, "n", queue="a\x00b")
    for options, error, match in [
            ({"queues": "mail"}, TypeError, "queues must be an iterable"),
            ({"queues": []}, ValueError, "at least one queue"),
            ({"queues": ["ok", 3]}, TypeError, "queue must be a str"),
            ({"retention": 0}, ValueError, "retention must be > 0"),
            ({"stale_after": -1}, ValueError, "stale_after"),
            ({"max_clock_skew": 0}, ValueError, "max_clock_skew")]:
        with pytest.raises(error, match=match):
            DurableScheduler(None, **options)


def test_a_retry_of_a_task_scheduled_elsewhere_runs_without_waiting_for_a_resync(
        make: Any, store_spec: dict[str, Any]) -> None:
    """No Future here watches it, and a store does not notify a writer of its own
    writes: the worker must put its retry back on its heap itself."""
    if store_spec["kind"] == "memory":
        pytest.skip("a memory store is one process's: nothing is scheduled elsewhere")
    s = make(registry=registry_with("flaky", retry=Retry(3, backoff=0.01)),
             resync_interval=3600)
    FLAKY["elsewhere"] = 2
    elsewhere = open_spec(store_spec)  # another process's connection
    elsewhere.schedule([NewTask("elsewhere", 0.0, 0, "flaky",
                                '{"args":["elsewhere"],"kwargs":{}}')])
    elsewhere.close()
    h.wait_for(lambda: s.row("elsewhere")["state"] == "completed", what="the retried task")
    assert s.row("elsewhere")["attempts"] == 3
