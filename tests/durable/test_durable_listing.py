"""The read layer (pysched.durable.listing) on SQLite and PostgreSQL: keyset pages that
list every row once, in order, under any filter, whatever the rows hold; the overview; the
series; the steering actions; and the indexes the pages scan."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysched import Every
from pysched.durable import BadRow, NewTask, Outcome, Store, open_store
from pysched.durable._series_spec import Policies, encode_spec
from pysched.durable.listing import Listing, decode_cursor, encode_cursor
from pysched.durable.moments import jsonable, lease_text, span, when
from pysched.durable.reading import connect
from pysched.durable.steering import Steering

from support.durable import drop_postgres_table, postgres_url, unique_table

ARGS = '{"args":[],"kwargs":{}}'
POLICIES = Policies(1.0, "latest", "skip", "continue", 100)


class Opened:
    """A store, a read-only Listing and a Steering over one fresh table."""

    def __init__(self, kind: str, target: str, table: str) -> None:
        self.kind, self.target, self.table = kind, target, table
        self.store: Store = open_store(target, table=table)
        self.db = connect(target)
        self.listing = Listing(self.db, table)
        self.writer = connect(target, writable=True)
        self.steering = Steering(self.store, self.writer, Listing(self.writer, table))

    def raw(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        """Write as a hostile or corrupt database would, bypassing every check."""
        if self.kind == "sqlite":
            sql = sql.replace("%s", "?")
        self.store._conns.get().execute(sql, params)  # type: ignore[attr-defined]

    def close(self) -> None:
        self.writer.close()
        self.db.close()
        self.store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def opened(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Opened]:
    if request.param == "sqlite":
        o = Opened("sqlite", str(tmp_path / "s.db"), "pysched_tasks")
        yield o
        o.close()
        return
    url = postgres_url()
    o = Opened("postgres", url, unique_table())
    yield o
    o.close()
    drop_postgres_table(url, o.table)
    o.writer = connect(url, writable=True)
    o.writer.execute([(f"DROP TABLE IF EXISTS {o.table}_series_notes", {})])
    o.writer.close()


def new(task_id: str, run_at: float, queue: str = "default", ref: str = "job") -> NewTask:
    return NewTask(task_id, run_at, 0, ref, ARGS, queue)


def every_page(listing: Listing, limit: int, **filters: Any) -> list[Any]:
    """Every row the pages give, following ``next`` to the end."""
    found: list[Any] = []
    after = None
    for _ in range(10_000):
        page = listing.tasks(after=after, limit=limit, **filters)
        found += page.tasks
        if page.next is None:
            return found
        after = page.next
    raise AssertionError("the pages never ended")


def key(line: Any) -> tuple[Any, str]:
    return (line.run_at, line.task_id)


def test_pages_list_every_row_once_in_due_order(opened: Opened) -> None:
    now = time.time()
    # Equal due times too: the task id breaks the tie, so no row falls between two pages.
    opened.store.schedule([new(f"t{i:03d}", now + i // 3, queue=("a", "b")[i % 2],
                               ref=("x", "y", "z")[i % 3]) for i in range(120)])
    claims = opened.store.claim(now + 10, 20, "w", 30.0)
    opened.store.finish([Outcome(c.token, c.task_id, c.version, "completed", None)
                         for c in claims[:10]])
    rows = {r.task_id: r for r in every_page(opened.listing, 7)}
    assert len(rows) == 120
    for filters in ({}, {"states": ["pending"]}, {"states": ["completed", "running"]},
                    {"queue": "a"}, {"name": "y"}, {"queue": "b", "name": "z"},
                    {"queue": "a", "states": ["pending"]}, {"newest_first": True},
                    {"states": ["pending"], "name": "x", "newest_first": True}):
        got = every_page(opened.listing, 9, **filters)
        states = filters.get("states")
        expected = sorted((r for r in rows.values()
                           if (not states or r.state in states)
                           and filters.get("queue") in (None, r.queue)
                           and filters.get("name") in (None, r.ref)),
                          key=key, reverse=bool(filters.get("newest_first")))
        assert [key(r) for r in got] == [key(r) for r in expected], filters


def test_hostile_times_page_and_format_without_raising(opened: Opened) -> None:
    now = time.time()
    opened.store.schedule([new("normal", now), new("huge", 1e300), new("inf", float("inf")),
                           new("ninf", float("-inf")), new("zero", 0.0)])
    if opened.kind == "sqlite":  # SQLite keeps any value: text and bytes where a REAL goes
        opened.raw(f"UPDATE {opened.table} SET run_at = 'soon' WHERE task_id = 'zero'")
        opened.store.schedule([new("blob", 1.0)])
        opened.raw(f"UPDATE {opened.table} SET run_at = x'00ff' WHERE task_id = 'blob'")
    else:
        opened.raw(f"UPDATE {opened.table} SET run_at = 'NaN' WHERE task_id = 'zero'")
    for limit in (1, 2, 50):
        got = every_page(opened.listing, limit)
        assert sorted(r.task_id for r in got) == sorted(
            ["normal", "huge", "inf", "ninf", "zero"] + (["blob"] if opened.kind == "sqlite"
                                                         else []))
        for line in got:
            assert when(line.run_at, now) and jsonable(line._asdict()) is not None
    detail = opened.listing.task("huge")
    assert detail is not None and "no date" in when(detail.row["run_at"], now)


def test_cursor_round_trips_and_a_bad_one_is_refused_by_name(opened: Opened) -> None:
    for run_at in (1.5, float("nan"), float("inf"), 10**20, "text", b"\x00\xff"):
        back, task_id = decode_cursor(encode_cursor(run_at, "id\u00e9"))
        assert task_id == "id\u00e9"
        assert repr(back) == repr(run_at if not isinstance(run_at, int) else int(run_at))
    for bad in ("", "garbage", encode_cursor(1.0, "x")[:-3], "WyJxIiwiMSIsIngiXQ"):
        with pytest.raises(ValueError, match="^after: "):
            opened.listing.tasks(after=bad)
    with pytest.raises(ValueError, match="limit"):
        opened.listing.tasks(limit=0)


def test_task_detail_decodes_args_and_keeps_what_does_not_decode(opened: Opened) -> None:
    opened.store.schedule([NewTask("a", 1.0, 3, "job", '{"args":[1],"kwargs":{"k":"v"}}')])
    opened.store.schedule([new("b", 1.0)])
    opened.raw(f"UPDATE {opened.table} SET args = 'not json' WHERE task_id = 'b'")
    a = opened.listing.task("a")
    assert a is not None and (a.args, a.kwargs, a.row["priority"]) == ([1], {"k": "v"}, 3)
    b = opened.listing.task("b")
    assert b is not None and b.args is None and "not valid JSON" in (b.args_error or "")
    assert opened.listing.task("missing") is None


def test_overview_counts_workers_and_the_last_hour(opened: Opened) -> None:
    now = time.time()
    opened.store.schedule([new(f"t{i}", now - 100 + i, queue="q1" if i < 4 else "q2")
                           for i in range(10)])
    claims = opened.store.claim(now, 6, "worker-1", 30.0)
    opened.store.finish([Outcome(c.token, c.task_id, c.version, "failed" if i else "completed",
                                 "E: x" if i else None) for i, c in enumerate(claims[:3])])
    overview = opened.listing.overview()
    assert {s: c.value for s, c in overview.counts.items()} == opened.store.counts()
    assert all(c.kind == "exact" for c in overview.counts.values())
    assert str(overview.total) == "10"
    assert sum(c.value for by in overview.queues.values() for c in by.values()) == 10
    assert {s: c.value for s, c in overview.queues["q1"].items()} == {
        "completed": 1, "failed": 2, "running": 1}
    [worker] = overview.workers
    assert (worker.owner, worker.tasks, worker.fires) == ("worker-1", 3, 0)
    assert "expires in" in lease_text(worker.lease_until, overview.now)
    assert overview.finished["completed"][0] == 1 and overview.finished["failed"][0] == 2
    assert sum(overview.per_5min) == 3 and overview.per_5min[-1] == 3
    mean = overview.finished["failed"][1]
    assert 90 < mean < 110 and span(mean).endswith(" s")


def test_overview_counts_stop_at_their_cap(opened: Opened,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond its cap a count reads no further: an estimate (PostgreSQL, once analysed)
    or "at least" stands in, so the overview costs the same on any table."""
    from pysched.durable import listing

    monkeypatch.setattr(listing, "STATE_CAP", 5)
    monkeypatch.setattr(listing, "QUEUE_CAP", 3)
    monkeypatch.setattr(listing, "MAX_QUEUES", 2)
    opened.store.schedule([new(f"t{i}", 1.0 + i, queue=f"q{i % 3}") for i in range(30)])
    overview = opened.listing.overview()
    assert overview.more_queues and sorted(overview.queues) == ["q0", "q1"]
    assert overview.queues["q0"]["pending"] == listing.Count(3, "at least")
    assert str(overview.queues["q0"]["pending"]) == "3+"
    if opened.kind == "sqlite":
        assert overview.counts == {"pending": listing.Count(5, "at least")}
    else:
        opened.raw(f"ANALYZE {opened.table}")
        counts = opened.listing.overview().counts
        assert counts == {"pending": listing.Count(30, "about")} and str(counts["pending"]) \
            == "~30"


def test_series_next_fire_times_recent_runs_and_counts(opened: Opened) -> None:
    now = time.time()
    table = opened.store.series_table()
    table.put("s", encode_spec(Every(60), POLICIES, now - 600), "job", ARGS, 0, "default",
              now - 600)
    table.put("bad", '{"kind": "never", "fmt": 1}', "job", ARGS, 0, "default", now)
    for k in range(1, 4):
        claim = table.claim("s", 1, now - 600 + 60 * k, "w", 30.0)
        assert claim is not None
        table.finish(claim, failed=k == 2)
    lines, more = opened.listing.series(limit=1)
    assert more == "bad" and [line.series_id for line in lines] == ["bad"]
    assert lines[0].trigger is None and "never" in (lines[0].problem or "")
    [line], more = opened.listing.series(after="bad")
    assert more is None and line.series_id == "s"
    assert len(line.next_fires) == 5 and line.next_fires[0] > now
    gaps = [b - a for a, b in zip(line.next_fires, line.next_fires[1:], strict=False)]
    assert gaps == pytest.approx([60.0] * 4)
    assert (line.last_fire, line.last_state) == (now - 600 + 180, "done")
    detail = opened.listing.one_series("s")
    assert detail is not None
    assert [f.state for f in detail.fires] == ["done", "failed", "done"]
    assert detail.fire_counts == {"done": 2, "failed": 1}
    assert opened.listing.series_counts() == {"active": 2}


def test_steering_changes_the_store(opened: Opened) -> None:
    now = time.time()
    opened.store.schedule([new("p", now + 60), new("f", now - 1)])
    [claim] = opened.store.claim(now, 1, "w", 30.0)
    opened.store.finish([Outcome(claim.token, "f", claim.version, "failed", "E: boom")])
    assert opened.steering.cancel("p").changed
    assert opened.store.get("p")["state"] == "cancelled"  # type: ignore[index]
    assert not opened.steering.cancel("p").changed
    assert not opened.steering.retry("p").changed
    done = opened.steering.retry("f")
    assert done.changed and opened.store.get("f")["state"] == "pending"  # type: ignore[index]
    table = opened.store.series_table()
    table.put("s", encode_spec(Every(60), POLICIES, now), "job", '{"args":[7],"kwargs":{}}', 5,
              "reports", now)
    assert opened.steering.pause("s", "deploy <b>freeze</b>").changed
    detail = opened.listing.one_series("s")
    assert detail is not None and detail.series.state == "paused"
    assert detail.series.note == "deploy <b>freeze</b>"
    assert opened.steering.resume("s").changed
    detail = opened.listing.one_series("s")
    assert detail is not None and (detail.series.state, detail.series.note) == ("active", None)
    triggered = opened.steering.trigger("s")
    assert triggered.changed and triggered.task_id is not None
    assert triggered.task_id.startswith("s@")
    run = opened.store.get(triggered.task_id)
    assert run is not None and (run["state"], run["ref"], run["queue"], run["priority"]) == (
        "pending", "job", "reports", 5)
    assert abs(run["run_at"] - time.time()) < 60
    # A note belongs to the generation it was written for: a replaced series has none.
    assert opened.steering.pause("s", "old").changed
    table.put("s", encode_spec(Every(60), POLICIES, now), "job", ARGS, 0, "default", now)
    assert opened.listing.one_series("s").series.note is None  # type: ignore[union-attr]
    assert opened.steering.cancel("s").changed
    assert not opened.steering.pause("s").changed
    assert not opened.steering.trigger("s").changed


def test_trigger_refuses_a_hostile_series_row_and_writes_nothing(opened: Opened) -> None:
    now = time.time()
    opened.store.series_table().put("h", encode_spec(Every(60), POLICIES, now), "job",
                                    "not json", 0, "default", now)
    with pytest.raises(BadRow, match="cannot run"):
        opened.steering.trigger("h")
    assert opened.listing.tasks().tasks == []
    for bad in ("nul\x00", 5):
        with pytest.raises((TypeError, ValueError), match="series_id"):
            opened.steering.pause(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="note"):
        opened.steering.pause("h", "x" * 2001)


def test_every_page_is_an_index_range_scan(opened: Opened) -> None:
    assert opened.listing.tasks().tasks == []  # the first page builds the listing's indexes
    sql = opened.listing.sql
    cases = [(sql.tasks_page([], 1, True, False), {"state0": "pending"}, "_list_state"),
             (sql.tasks_page(["queue"], 1, True, True), {"state0": "failed", "queue": "q"},
              "_list_queue"),
             (sql.tasks_page(["ref"], 1, False, False), {"state0": "pending", "ref": "r"},
              "_list_ref"),
             (sql.retrying_page(True), {}, "_list_retrying")]
    params = {"run_at": 1.0, "task_id": "x", "limit": 50}
    for statement, extra, index in cases:
        if opened.kind == "sqlite":
            plan = " ".join(str(r[-1]) for r in opened.db.query(
                "EXPLAIN QUERY PLAN " + statement, {**params, **extra}))
            # Without statistics SQLite may read the few retrying rows through the state
            # index (pending ones, in order) rather than the partial index: a scan either way.
            assert f"USING INDEX {opened.table}{index}" in plan or (
                index == "_list_retrying" and "_list_state" in plan), plan
            assert "TEMP B-TREE" not in plan, plan  # no sort: the index gives the order
        else:
            db = opened.store._conns.get()  # type: ignore[attr-defined]
            # An empty table costs a sequential scan nothing: forbid it to see the index.
            with db.transaction():
                db.execute("SET LOCAL enable_seqscan = off")
                db.execute("SET LOCAL enable_bitmapscan = off")
                plan = " ".join(r[0] for r in db.execute("EXPLAIN " + statement,
                                                         {**params, **extra}).fetchall())
            assert f"{opened.table}{index}" in plan and "Sort" not in plan, plan


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 5),
                               st.sampled_from(["q", "r"]), st.sampled_from(["x", "y"])),
                     max_size=40),
       limit=st.integers(1, 7), state=st.sampled_from([None, "pending", "completed"]),
       queue=st.sampled_from([None, "q"]), newest=st.booleans())
def test_pages_match_a_sort_of_the_rows(tmp_path_factory: Any, rows: list[Any], limit: int,
                                        state: str | None, queue: str | None,
                                        newest: bool) -> None:
    """Any rows (ids and due times repeat), any filter, any page size: the pages joined are
    the filtered rows sorted by (run_at, task_id)."""
    o = Opened("sqlite", str(tmp_path_factory.mktemp("p") / "s.db"), "pysched_tasks")
    try:
        o.store.schedule([NewTask(f"{p}{i}", float(t), 0, ref, ARGS, q)
                          for i, (p, t, q, ref) in enumerate(rows)])
        done = [c for c in o.store.claim(2.5, 100, "w", 30.0)]
        o.store.finish([Outcome(c.token, c.task_id, c.version, "completed", None)
                        for c in done])
        all_rows = every_page(o.listing, 50)
        expected = sorted((r for r in all_rows if state in (None, r.state)
                           and queue in (None, r.queue)), key=key, reverse=newest)
        got = every_page(o.listing, limit, states=[state] if state else [], queue=queue,
                         newest_first=newest)
        assert [key(r) for r in got] == [key(r) for r in expected]
    finally:
        o.close()


def test_sqlite_text_that_is_not_utf8_is_listed_not_fatal(tmp_path: Any) -> None:
    """SQLite keeps any bytes in a TEXT column: such a row is read with the bytes replaced,
    as the store reads it, and the rest of the page is unharmed."""
    o = Opened("sqlite", str(tmp_path / "s.db"), "pysched_tasks")
    try:
        o.store.schedule([new("fine", 1.0), new("odd", 2.0)])
        o.raw("UPDATE pysched_tasks SET task_id = CAST(x'6f64ff64' AS TEXT),"
              " error = CAST(x'ff' AS TEXT) WHERE task_id = 'odd'")
        ids = [line.task_id for line in every_page(o.listing, 1)]
        assert ids == ["fine", "od\ufffdd"]
        assert o.listing.overview().counts["pending"].value == 2
    finally:
        o.close()
