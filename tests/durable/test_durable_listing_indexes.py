"""The listing's indexes on SQLite and PostgreSQL: a table workers made and used has only
the stores' own; its first page, retrying page or count builds them (a one-row read does
not); a reader that may not build them lists every row all the same, by a scan, and says
so in one log line."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from pysched.durable import NewTask, Outcome, open_store
from pysched.durable.listing import Listing
from pysched.durable.reading import connect

from support.durable import drop_postgres_table, postgres_url, unique_table

ARGS = '{"args":[],"kwargs":{}}'
READER = "pysched_listing_reader"  # a PostgreSQL role that may only read


class Worked:
    """A table made by a store and used as workers use it; its indexes read by an admin."""

    def __init__(self, kind: str, target: str, table: str) -> None:
        self.kind, self.target, self.table = kind, target, table
        store = open_store(target, table=table)
        try:
            now = time.time()
            store.schedule([NewTask(f"t{i:02d}", now - 60 + i, 0, ("x", "y")[i % 2], ARGS,
                                    ("a", "b", "c")[i % 3]) for i in range(30)])
            claims = store.claim(now, 12, "worker-1", 30.0)
            store.finish([Outcome(c.token, c.task_id, c.version,
                                  ("completed", "failed")[k % 2], "ValueError: boom")
                          for k, c in enumerate(claims[:8])])
            store.finish([Outcome(claims[8].token, claims[8].task_id, claims[8].version,
                                  "pending", "ValueError: again", now + 60)])  # a retry
        finally:
            store.close()

    def indexes(self) -> set[str]:
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as db:
                return {r[0] for r in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?",
                    (self.table,))}
        import psycopg

        with psycopg.connect(self.target, autocommit=True) as db:
            return {r[0] for r in db.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = %s", (self.table,))}


@pytest.fixture(params=["sqlite", "postgres"])
def worked(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Worked]:
    if request.param == "sqlite":
        yield Worked("sqlite", str(tmp_path / "s.db"), "pysched_tasks")
        return
    url = postgres_url()
    made = Worked("postgres", url, unique_table())
    yield made
    drop_postgres_table(url, made.table)


def listing_names(worked: Worked) -> set[str]:
    reads = Listing(connect(worked.target), worked.table)
    names = set(reads.sql.listing_indexes)
    reads.db.close()
    return names


def test_a_worked_table_has_only_the_stores_indexes(worked: Worked) -> None:
    found = worked.indexes()
    names = listing_names(worked)
    assert len(names) == 4 and not names & found, found
    # Retention's index of finished rows is the stores' own: there from the start.
    assert f"{worked.table}_finished" in found


FIRST_READS: dict[str, Callable[[Listing], Any]] = {
    "tasks": lambda r: r.tasks(limit=5),
    "failed": lambda r: r.failed(limit=5),
    "retrying": lambda r: r.retrying(limit=5),
    "counts": lambda r: r.counts(),
    "overview": lambda r: r.overview(),
}


@pytest.mark.parametrize("first", FIRST_READS)
def test_the_first_listing_builds_the_listing_indexes(worked: Worked, first: str) -> None:
    reads = Listing(connect(worked.target), worked.table)
    try:
        names = set(reads.sql.listing_indexes)
        # One row, or the series: no index of the listing's is read, none is built.
        assert reads.task("t00") is not None and reads.series() == ([], None)
        assert not names & worked.indexes()
        FIRST_READS[first](reads)
        assert names <= worked.indexes()
        assert reads.ensure_indexes() == []
        # On a table that has them, a new reader finds them and builds nothing.
        again = Listing(connect(worked.target), worked.table)
        assert again.ensure_indexes() == []
        again.db.close()
    finally:
        reads.db.close()


@contextmanager
def unwritable(worked: Worked) -> Iterator[str]:
    """The target as a reader that may not write the table sees it: a PostgreSQL role
    with SELECT only; a SQLite file its user may not write (immutable for root, whom
    no file mode stops)."""
    if worked.kind == "postgres":
        import psycopg

        with psycopg.connect(worked.target, autocommit=True) as admin:
            if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                             (READER,)).fetchone() is None:
                admin.execute(f"CREATE ROLE {READER} LOGIN")
            admin.execute(f"GRANT USAGE ON SCHEMA public TO {READER}")
            admin.execute(f'GRANT SELECT ON "{worked.table}" TO {READER}')
        scheme, rest = worked.target.split("://", 1)
        yield f"{scheme}://{READER}@{rest.split('@', 1)[-1]}"
        return
    if getattr(os, "geteuid", lambda: 1)() == 0:
        if subprocess.run(["chattr", "+i", worked.target], capture_output=True).returncode:
            pytest.skip("as root, a SQLite file is made unwritable by chattr +i, refused here")
        try:
            yield worked.target
        finally:
            subprocess.run(["chattr", "-i", worked.target], check=True)
        return
    os.chmod(worked.target, 0o444)
    try:
        yield worked.target
    finally:
        os.chmod(worked.target, 0o644)


def test_a_reader_that_may_not_build_them_lists_by_a_scan_and_says_so_once(
        worked: Worked, caplog: pytest.LogCaptureFixture) -> None:
    names = listing_names(worked)
    with unwritable(worked) as target, \
            caplog.at_level(logging.WARNING, logger="pysched.durable"):
        reads = Listing(connect(target), worked.table)
        try:
            everything = []
            page = reads.tasks(limit=7)
            while True:
                everything += page.tasks
                if page.next is None:
                    break
                page = reads.tasks(limit=7, after=page.next)
            assert sorted(t.task_id for t in everything) == [f"t{i:02d}" for i in range(30)]
            assert [t.task_id for t in reads.retrying().tasks] == ["t08"]
            counts, queues, _ = reads.counts()
            assert sum(c.value for c in counts.values()) == 30 and set(queues) == {"a", "b", "c"}
            assert set(reads.ensure_indexes()) == names
        finally:
            reads.db.close()
    said = [r.getMessage() for r in caplog.records if "listing's indexes" in r.getMessage()]
    assert len(said) == 1, said
    assert worked.table in said[0] and "CREATE INDEX" in said[0], said[0]
    assert not names & worked.indexes()
