"""Workers record the task names they serve beside their heartbeat; a due row that no live
worker serves is logged once per name and listed by ``pysched status``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from pysched.cli import main
from pysched.durable import DurableScheduler, TaskRegistry
from pysched.durable.listing_sql import SQLITE
from pysched.durable.reading import connect
from pysched.durable.records import Serves
from pysched.durable.roster import CHECK_EVERY, LIVE_FOR, REPEAT_AFTER, Roster, unserved

import support.durable as h


@pytest.fixture(params=["sqlite", "postgres"])
def sql_spec(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[dict[str, Any]]:
    if request.param == "sqlite":
        yield {"kind": "sqlite", "target": str(tmp_path / "s.db"), "table": "pysched_tasks"}
        return
    url, table = h.postgres_url(), h.unique_table()
    yield {"kind": "postgres", "target": url, "table": table}
    h.drop_postgres_table(url, table)


def unserved_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "pysched.durable" and "no live worker serves" in r.getMessage()]


def test_a_worker_logs_due_rows_no_live_worker_serves(sql_spec: dict[str, Any],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pysched.durable")
    store = h.open_spec(sql_spec)
    h.put_raw(store, sql_spec, task_id="ghost-1", ref="ghost", queue="default")
    h.put_raw(store, sql_spec, task_id="ghost-2", ref="ghost", queue="default")
    registry = TaskRegistry()
    registry.register(h.note, "note")
    sched = DurableScheduler(store, max_workers=1, registry=registry, lease=1.5,
                             poll_interval=0.05)
    try:
        h.wait_for(lambda: unserved_lines(caplog), what="the unserved rows logged")
        [line] = unserved_lines(caplog)
        assert "'ghost'" in line and "'default'" in line
        db = connect(sql_spec["target"])
        try:
            assert unserved(db, sql_spec["table"], store.now()) == [("ghost", "default")]
        finally:
            db.close()
    finally:
        sched.close(timeout=30)
        store.close()


def test_status_names_rows_no_live_worker_serves(sql_spec: dict[str, Any],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    store = h.open_spec(sql_spec)
    try:
        h.put_raw(store, sql_spec, task_id="ghost-1", ref="ghost", queue="default")
        h.put_raw(store, sql_spec, task_id="served", ref="note", queue="default")
        clock = [store.now()]
        db = connect(sql_spec["target"], writable=True)
        roster = Roster(db, sql_spec["table"], "w1", lambda: Serves(("note",), ()),
                        lambda: clock[0])
        roster.beat()
        assert main(["status", "--store", sql_spec["target"], "--table",
                     sql_spec["table"]]) == 0
        out = capsys.readouterr().out
        assert "not served by any live worker" in out and "ghost" in out
        section = out.split("not served by any live worker", 1)[1]
        assert "note" not in section
        roster.leave()  # no live worker: every due row is unserved
        reads = connect(sql_spec["target"])
        try:
            assert unserved(reads, sql_spec["table"], clock[0]) == [
                ("ghost", "default"), ("note", "default")]
        finally:
            reads.close()
    finally:
        store.close()


def test_each_name_is_logged_once_per_period(sql_spec: dict[str, Any],
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pysched.durable")
    store = h.open_spec(sql_spec)
    try:
        h.put_raw(store, sql_spec, task_id="ghost-1", ref="ghost", queue="default")
        h.put_raw(store, sql_spec, task_id="odd", ref="note", queue="reports")
        clock = [store.now()]
        roster = Roster(connect(sql_spec["target"], writable=True), sql_spec["table"], "w1",
                        lambda: Serves(("note",), (), ("default",)), lambda: clock[0])
        for _ in range(5):
            roster.beat()
            clock[0] += CHECK_EVERY
        assert len(unserved_lines(caplog)) == 2  # ghost anywhere; note on reports
        clock[0] += REPEAT_AFTER
        roster.beat()
        assert len(unserved_lines(caplog)) == 4
        roster.leave()
    finally:
        store.close()


def test_a_stale_or_hostile_roster_row_serves_nothing(sql_spec: dict[str, Any]) -> None:
    store = h.open_spec(sql_spec)
    try:
        h.put_raw(store, sql_spec, task_id="a", ref="note", queue="default")
        now = store.now()
        h.put_raw(store, sql_spec, task_id="fresh", ref="new-name", run_at=now)  # not waiting
        db = connect(sql_spec["target"], writable=True)
        old = Roster(db, sql_spec["table"], "old", lambda: Serves(("note",), ()),
                     lambda: now - LIVE_FOR - 1)
        old.beat()  # its beat is too old: not live
        table = f'"{sql_spec["table"]}_workers"'
        db.execute([(db.dialect.render(
            f"INSERT INTO {table} (owner, names, prefixes, queues, beat) VALUES"
            " ('bad', '{\"not\": \"a list\"}', '[]', NULL, :beat)"), {"beat": now})])
        assert unserved(db, sql_spec["table"], now) == [("note", "default")]
        db.close()
    finally:
        store.close()


class BrokenDatabase:
    dialect = SQLITE

    def execute(self, statements: Any) -> None:
        raise PermissionError("permission denied to create a table")

    def query(self, sql: str, params: Any = None) -> list[Any]:
        raise AssertionError("not reached")

    def close(self) -> None:
        return None


def test_a_roster_that_cannot_be_written_is_logged_once_and_tried_again(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pysched.durable")
    clock = [1000.0]
    roster = Roster(BrokenDatabase(), "pysched_tasks", "w1",  # type: ignore[arg-type]
                    lambda: Serves((), ()), lambda: clock[0])
    for _ in range(3):
        roster.beat()  # never raises into the heartbeat
        clock[0] += CHECK_EVERY
    clock[0] += REPEAT_AFTER
    roster.beat()
    lines = [r.getMessage() for r in caplog.records if "roster" in r.getMessage()]
    assert len(lines) == 2 and "permission denied" in lines[0]
