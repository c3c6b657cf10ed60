"""Every statement the claims, ``status``, the listing pages, retention and the dashboard
send reads the task table through an index, never a sequential scan of it.

The statements are captured from the code as it runs (a trace on each SQLite
connection, a recording cursor on each psycopg one), not typed again here; each
is then explained (EXPLAIN QUERY PLAN, EXPLAIN (FORMAT JSON)) with the very
parameters it was sent with. The table holds 40,000 rows shaped as a busy
schedule's (half pending, mostly due later; half finished over two days, a few
running, failing or waiting for a retry; four queues, several task names),
and the planner knows it (ANALYZE; on SQLite also without, as most files are
never analysed). No planner setting is changed: what is shown is the plan
each database picks by itself. The claims and retention are explained on
the table as workers leave it (the stores' indexes only); ``status``, the
listing and the dashboard on the table once listed, which builds the
listing's indexes. The million-row figures are in
benchmarks/bench_durable_scale.py.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pysched.cli.status import read_status
from pysched.durable import Serves, open_store
from pysched.durable.listing import Listing
from pysched.durable.reading import connect

from support.durable import drop_postgres_table, postgres_url, unique_table

ROWS = 40_000
NOW = time.time()

# Rows by i in 1..ROWS, the same in both databases: every second one pending, due from
# an hour ago to a day ahead, 1 in 50 of them waiting for a retry; the others finished
# (cancelled, failed, 1 in 1,000 in error), written over the last two days, newest last;
# 1 in 1,000 running under a lease.
FILL = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
INSERT INTO {table} (task_id, version, state, run_at, priority, ref, args, attempts, seq, fmt,
                     error, lease_owner, lease_token, lease_expires, queue, updated_at)
SELECT 'task-' || CAST(i AS text), 1,
       CASE WHEN i % 1000 = 1 THEN 'running' WHEN i % 2 = 0 THEN 'pending'
            WHEN i % 1000 = 999 THEN 'error' WHEN i % 20 = 17 THEN 'failed'
            WHEN i % 20 = 19 THEN 'cancelled' ELSE 'completed' END,
       {now} - 3600 + i * 2.0, i % 3, 'jobs.send_' || CAST(i % 7 AS text),
       '{{"args":[],"kwargs":{{}}}}', i % 2, i, 1,
       CASE WHEN i % 100 = 0 OR i % 2 = 1 AND (i % 20 = 17 OR i % 1000 = 999)
            THEN 'ValueError: boom' END,
       CASE WHEN i % 1000 = 1 THEN 'node-1' END, CASE WHEN i % 1000 = 1 THEN 'b:1' END,
       CASE WHEN i % 1000 = 1 THEN {now} + 30 END,
       CASE (i / 2) % 4 WHEN 1 THEN 'mail' WHEN 2 THEN 'reports' ELSE 'default' END,
       CASE WHEN i % 2 = 1 AND i % 1000 <> 1 THEN {now} - ({rows} - i) * 4.0 END
FROM n
"""


class Recorder:
    """The statements sent on the task table, with their parameters, in order."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.sent: list[tuple[str, Any]] = []

    def add(self, sql: str, params: Any = None) -> None:
        text = sql.lstrip().upper()
        if f'"{self.table}"'.upper() in sql.upper() and text.startswith(
                ("SELECT", "WITH", "UPDATE", "DELETE")):
            self.sent.append((sql, params))

    def take(self) -> list[tuple[str, Any]]:
        sent, self.sent = self.sent, []
        return sent


class Explained:
    """One database: fill a table, record what the code sends, explain it."""

    kind: str
    target: str
    table: str
    recorder: Recorder

    def worked(self) -> None:
        """The table as the stores make it: without the listing's indexes."""
        names = Listing(connect(self.target), self.table).sql.listing_indexes
        self.run(*(f'DROP INDEX IF EXISTS "{name}"' for name in names))

    def listed(self) -> None:
        """The table once listed: with the listing's indexes, the planner told of them."""
        reads = Listing(connect(self.target), self.table)
        try:
            assert reads.ensure_indexes() == []
        finally:
            reads.db.close()
        self.run(*(['ANALYZE "' + self.table + '"'] if self.analyzed else []))

    analyzed = True

    def run(self, *statements: str) -> None:
        raise NotImplementedError

    def seq_scans(self, sql: str, params: Any) -> list[str]:
        """The plan's lines (or nodes) that read the task table by a sequential scan."""
        raise NotImplementedError

    def plan(self, sql: str, params: Any) -> str:
        raise NotImplementedError


class SQLiteExplained(Explained):
    kind = "sqlite"

    def __init__(self, path: str, monkeypatch: pytest.MonkeyPatch, analyze: bool) -> None:
        self.target, self.table = path, "pysched_tasks"
        open_store(path).close()  # the schema, as the store makes it
        with sqlite3.connect(path) as db:
            db.execute(FILL.format(rows=ROWS, table=self.table, now=NOW))
            if analyze:
                db.execute("ANALYZE")
        self.analyzed = analyze
        self.recorder = Recorder(self.table)
        real = sqlite3.connect

        def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = real(*args, **kwargs)
            # The trace gives the text as run, its parameters bound in it.
            conn.set_trace_callback(self.recorder.add)
            return conn

        monkeypatch.setattr(sqlite3, "connect", traced)
        self._explain = real(path)

    def run(self, *statements: str) -> None:
        for statement in statements:
            self._explain.execute(statement)
        self._explain.commit()
        # EXPLAIN QUERY PLAN plans with the schema this connection read last, and never
        # reads it again by itself: a read does, to see the indexes other connections made.
        self._explain.execute("SELECT count(*) FROM sqlite_master").fetchall()

    def _details(self, sql: str) -> list[str]:
        return [r[3] for r in self._explain.execute("EXPLAIN QUERY PLAN " + sql).fetchall()]

    def seq_scans(self, sql: str, params: Any) -> list[str]:
        # "SCAN t" reads every row of t; "SCAN t USING [COVERING] INDEX i" walks i in its
        # order, every entry unless a LIMIT stops it with no sort between (the oldest
        # rows of a state, say). SEARCH is a range of an index. The alias ``t`` of the
        # claim's update is the task table too.
        details = self._details(sql)
        walk_stops = (sql.rstrip().split()[-2].upper() == "LIMIT"
                      and not any("TEMP B-TREE" in d for d in details))
        return [d for d in details
                if d.startswith("SCAN ") and d.split()[1] in (self.table, "t")
                and not (walk_stops and " USING " in d)]

    def plan(self, sql: str, params: Any) -> str:
        return "\n".join(self._details(sql))

    def close(self) -> None:
        self._explain.close()


class PostgresExplained(Explained):
    kind = "postgres"

    def __init__(self, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
        import psycopg

        self.target, self.table = url, unique_table()
        open_store(url, table=self.table).close()
        self._admin = psycopg.connect(url, autocommit=True)
        self._admin.execute(FILL.format(rows=ROWS, table=f'"{self.table}"', now=NOW))
        self._admin.execute(f'ANALYZE "{self.table}"')
        self.recorder = recorder = Recorder(self.table)

        class Recording(psycopg.Cursor[Any]):
            def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
                recorder.add(str(query), params)
                return super().execute(query, params, **kwargs)

        real = psycopg.connect

        def recording(*args: Any, **kwargs: Any) -> Any:
            return real(*args, cursor_factory=Recording, **kwargs)

        monkeypatch.setattr(psycopg, "connect", recording)

    def run(self, *statements: str) -> None:
        for statement in statements:
            self._admin.execute(statement)

    def _plan(self, sql: str, params: Any) -> Any:
        [(found,)] = self._admin.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchall()
        return found[0]["Plan"]

    def seq_scans(self, sql: str, params: Any) -> list[str]:
        found = []
        stack = [self._plan(sql, params)]
        while stack:
            node = stack.pop()
            if node["Node Type"] == "Seq Scan" and node.get("Relation Name") == self.table:
                found.append(f"Seq Scan on {self.table}")
            stack += node.get("Plans", [])
        return found

    def plan(self, sql: str, params: Any) -> str:
        return json.dumps(self._plan(sql, params), indent=1)

    def close(self) -> None:
        self._admin.close()
        drop_postgres_table(self.target, self.table)


@pytest.fixture(scope="module", params=["sqlite", "sqlite-analyzed", "postgres"])
def db(request: pytest.FixtureRequest,
       tmp_path_factory: pytest.TempPathFactory) -> Iterator[Explained]:
    """One filled table per database, shared by the tests (each changes a few rows)."""
    made: Any
    with pytest.MonkeyPatch.context() as monkeypatch:
        if request.param == "postgres":
            made = PostgresExplained(postgres_url(), monkeypatch)
        else:
            made = SQLiteExplained(str(tmp_path_factory.mktemp("explain") / "s.db"),
                                   monkeypatch, analyze=request.param == "sqlite-analyzed")
        yield made
        made.close()


def claims(db: Explained) -> None:
    store = open_store(db.target, table=db.table)
    try:
        assert store.claim(NOW, 16, "node-2", 30.0)
        assert store.claim(NOW, 16, "node-2", 30.0,
                           serves=Serves(("jobs.send_1", "jobs.send_2"), ("jobs.",), ("mail",)))
        store.pending_stats(NOW - 300)  # the unclaimed rows' count in stats()
    finally:
        store.close()


def retention(db: Explained) -> None:
    store = open_store(db.target, table=db.table)
    try:
        assert store.prune(NOW - 86_400, 100) == 100
    finally:
        store.close()


def status(db: Explained) -> None:
    found = read_status(db.target, db.table, 5)
    assert found["oldest_pending"] and found["counts"]


def listing(db: Explained) -> None:
    reads = Listing(connect(db.target), db.table)
    try:
        for kwargs in ({}, {"states": ["pending"]}, {"states": ["completed", "failed"]},
                       {"states": ["running"]}, {"states": ["running", "pending"]},
                       {"queue": "mail"}, {"name": "jobs.send_3"},
                       {"queue": "mail", "name": "jobs.send_3", "states": ["pending"]},
                       {"newest_first": True}):
            page = reads.tasks(limit=20, **kwargs)
            assert page.tasks and page.next
            assert reads.tasks(limit=20, after=page.next, **kwargs).tasks
        page = reads.failed(limit=20)
        assert page.tasks and reads.failed(after=page.next, limit=20).tasks
        page = reads.retrying(limit=20)
        assert page.tasks and reads.retrying(after=page.next, limit=20).tasks
        assert reads.task("task-20") is not None
    finally:
        reads.db.close()


def dashboard(db: Explained) -> None:
    reads = Listing(connect(db.target), db.table)
    try:
        overview = reads.overview()
        assert overview.counts["pending"].value > 0 and overview.finished
        assert overview.workers
    finally:
        reads.db.close()


@pytest.mark.parametrize("reads", [claims, retention, status, listing, dashboard],
                         ids=lambda f: f.__name__)
def test_no_sequential_scan_of_the_task_table(db: Explained, reads: Callable[[Explained], None]
                                              ) -> None:
    if reads in (claims, retention):
        db.worked()
    else:
        db.listed()
    db.recorder.take()
    reads(db)
    sent = db.recorder.take()
    assert sent, "nothing was recorded: the capture missed the statements"
    scans = []
    for sql, params in dict.fromkeys((s, json.dumps(p, sort_keys=True, default=str))
                                     for s, p in sent):
        found = db.seq_scans(sql, json.loads(params))
        if found:
            scans.append(f"{sql}\n  {found}\n{db.plan(sql, json.loads(params))}")
    assert not scans, "\n\n".join(scans)
