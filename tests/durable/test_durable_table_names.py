"""A table may have any name the name check allows, SQL keywords too: every statement quotes it.

``order`` and ``select`` are reserved words in SQLite and PostgreSQL, and ``user``
in PostgreSQL; each passed the check and then failed at the first statement.
(``my-table`` is refused by the check, naming the table, before anything is opened.)
Each store runs every statement of the protocol on such a table, and a scheduler,
its recurring series and ``pysched status`` work on it end to end.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pysched import Every
from pysched.cli.status import read_status
from pysched.durable import DurableScheduler, NewTask, Outcome, open_store
from pysched.durable.store import batch_prefix

import support.durable as h

NAMES = ["order", "select", "user"]
ARGS = '{"args":["x"],"kwargs":{}}'


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    """Where to open stores: a SQLite file, or a PostgreSQL schema of this test's own
    (so that its fixed table names meet no other test's)."""
    if request.param == "sqlite":
        yield str(tmp_path / "names.db")
        return
    import psycopg

    url = h.postgres_url()
    schema = "s_" + uuid.uuid4().hex[:16]
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(url, autocommit=True) as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.parametrize("name", NAMES)
def test_every_statement_of_a_store_runs_on_a_table_named_by_a_keyword(
        target: str, name: str) -> None:
    store = open_store(target, table=name)
    try:
        assert store.schedule([NewTask(i, 0.0, 0, "note", ARGS) for i in "abcdef"]) == [1] * 6
        assert sorted(r.task_id for r in store.rows()) == list("abcdef")
        assert [r.task_id for r in store.rows(["a", "zz"])] == ["a"]
        assert store.cancel("f") == 2
        assert store.mark_error("e", 1, "refused") and store.get("e")["state"] == "error"
        assert store.retry("e") == 2
        batch = batch_prefix("w")
        claims = store.claim(1e12, 3, "w", 30.0, batch=batch)
        assert sorted(c.task_id for c in claims) == ["a", "b", "c"]
        assert sorted(store.heartbeat("w", 30.0, [c.token for c in claims])) == \
            sorted(c.token for c in claims)
        assert len(store.heartbeat("w", 30.0)) == 3
        assert sorted(store.held_by("w")) == ["a", "b", "c"]
        first, second, third = claims
        assert store.finish([Outcome(first.token, first.task_id, first.version, "completed",
                                     None)]) == [True]
        assert sorted(store.release_batch("w", batch)) == [second.task_id, third.task_id]
        assert store.held_by("w") == []
        assert store.release_owner("w") == [] and store.release_owner("w", 10.0) == []
        assert store.requeue_expired() == [] and store.repair_leases(86_400.0) == []
        assert store.unknown_states() == []
        assert store.pending_stats(1e12)[0] == 4  # b, c handed back; d; e retried
        assert store.counts() == {"pending": 4, "completed": 1, "cancelled": 1}
        assert store.prune(1e12, 10) == 2 and store.get("a") is None
        assert store.wall_high_water(100.0) == 100.0 and store.wall_high_water(50.0) == 100.0
        assert store.now() > 0
        store.changed()
        series = store.series_table()
        generation = series.put("s", "{}", "note", ARGS, 0, "default", 0.0)
        claim = series.claim("s", generation, 1.0, "w", 30.0)
        assert claim is not None and series.finish(claim, failed=False)
        assert [row.series_id for row in series.rows()] == ["s"]
        assert series.prune(0.0) == 1
    finally:
        store.close()


def test_a_table_name_the_check_refuses_is_named_in_the_error(target: str) -> None:
    with pytest.raises(ValueError, match="my-table"):
        open_store(target, table="my-table")


@pytest.mark.parametrize("name", NAMES)
def test_a_scheduler_its_series_and_the_status_command_work_on_such_a_table(
        target: str, name: str) -> None:
    h.reset()
    with DurableScheduler(target, table=name, max_workers=2, poll_interval=0.05) as sched:
        assert sched.schedule_in("once", 0, 0, h.note, ["once"]).result(30) == "once"
        start = datetime.datetime.now(datetime.timezone.utc)
        handle = sched.schedule_recurring("every", Every(0.05, start=start), 0, h.note,
                                          args=["tick"])
        h.wait_for(lambda: ("every", "tick") in h.CALLS, what="a fire time run")
        assert handle.cancel()
        status = read_status(target, name, 5)
        assert status["counts"] == {"completed": 1}
