"""Retention in bounded batches: every eligible row goes, over several transactions of at
most ``retention_batch`` rows, and nothing else; between two of them a claim gets the
write lock that one large delete would have held to its end."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import pytest

from pysched.durable import DurableScheduler, open_store

import support.durable as h
from support.durable import open_spec, put_raw

OLD, RECENT = 23, 4  # finished rows written long ago, and in the last minute


def fill(store: Any, spec: dict[str, Any]) -> None:
    """``OLD`` finished rows two hours old, ``RECENT`` finished a minute ago, and rows
    in no final state (pending, running; of a task no worker here serves): only the
    first are eligible for a retention of an hour."""
    now = store.now()
    states = ("completed", "failed", "cancelled", "error")
    for i in range(OLD):
        put_raw(store, spec, task_id=f"old{i}", state=states[i % 4], updated_at=now - 7200,
                ref="elsewhere")
    for i in range(RECENT):
        put_raw(store, spec, task_id=f"recent{i}", state="completed", updated_at=now - 60,
                ref="elsewhere")
    # Due long ago and never written since: pending rows are kept whatever their age.
    put_raw(store, spec, task_id="waiting", state="pending", run_at=now - 7200,
            ref="elsewhere")
    put_raw(store, spec, task_id="busy", state="running", run_at=now - 7200,
            ref="elsewhere", lease_owner="other", lease_token="x", lease_expires=now + 3600)


def prune_all(store: Any, hook: Any) -> None:
    """Run a worker with a retention of an hour, 5 rows a batch, its store's ``prune``
    replaced by ``hook(prune, before, limit)``, until every old row is gone."""
    prune = store.prune
    store.prune = lambda before, limit: hook(prune, before, limit)
    sched = DurableScheduler(store, max_workers=1, retention=3600.0, retention_batch=5,
                             resync_interval=0.05, poll_interval=0.05)
    try:
        h.wait_for(lambda: sched.stats()["pruned"] == OLD, what="the old rows pruned")
    finally:
        sched.close(timeout=30)


def test_retention_deletes_every_eligible_row_in_batches_and_nothing_else(
        store_spec: dict[str, Any]) -> None:
    store = open_spec(store_spec)
    fill(store, store_spec)
    deletes: list[tuple[int, int]] = []  # (limit, rows deleted) of each transaction

    def recording(prune: Any, before: float, limit: int) -> int:
        deleted = prune(before, limit)
        deletes.append((limit, deleted))
        return int(deleted)

    try:
        prune_all(store, recording)
        left = store.counts()
    finally:
        if store_spec["kind"] != "memory":
            store.close()
    assert left == {"completed": RECENT, "pending": 1, "running": 1}
    assert {limit for limit, _ in deletes} == {5}
    assert [n for _, n in deletes if n] == [5, 5, 5, 5, 3]  # five transactions, in turn
    assert sum(n for _, n in deletes) == OLD


def test_a_claim_takes_the_write_lock_between_two_batches(tmp_path: Any) -> None:
    """On SQLite a write holds the database's one write lock to its commit. A claimer
    that will not wait (busy_timeout 0) claims in the middle of a retention pass, while
    old rows are left: the pass let go of the lock between two batches. With the whole
    backlog in one delete there is no such moment (the hook runs after it, with nothing
    left), and this fails."""
    path = str(tmp_path / "s.db")
    spec = {"kind": "sqlite", "target": path, "table": "pysched_tasks"}
    store = open_spec(spec)
    fill(store, spec)
    impatient = open_store(path)
    impatient_db = impatient._conns.get()  # type: ignore[attr-defined]
    impatient_db.execute("PRAGMA busy_timeout = 0")
    seen: list[tuple[int, list[str]]] = []  # (old rows left, what the claim took)

    def claiming_between(prune: Any, before: float, limit: int) -> int:
        deleted = prune(before, limit)
        left = impatient_db.execute(
            "SELECT count(*) FROM pysched_tasks WHERE task_id LIKE 'old%'").fetchone()[0]
        if left and not seen:
            try:
                claims = impatient.claim(time.time(), 5, "impatient", 60.0)
            except sqlite3.OperationalError as exc:  # "database is locked"
                pytest.fail(f"the claim could not take the write lock: {exc}")
            seen.append((left, [c.task_id for c in claims]))
        return int(deleted)

    try:
        prune_all(store, claiming_between)
    finally:
        store.close()
        impatient.close()
    assert seen == [(OLD - 5, ["waiting"])]


def test_retention_batch_is_checked() -> None:
    for bad, error in [(0, ValueError), (-1, ValueError), (1.5, TypeError), ("9", TypeError)]:
        with pytest.raises(error, match="retention_batch"):
            DurableScheduler(None, retention_batch=bad)
