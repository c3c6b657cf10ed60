"""SQLiteStore: a durable schedule in one SQLite file (WAL), for one machine.

Several processes on the machine may open the same file: every write is a
``BEGIN IMMEDIATE`` transaction (one writer at a time, others wait up to
``busy_timeout``), so a claim, which is one conditional UPDATE on (task_id,
version, state = pending), cannot interleave with another. They see each
other's writes by polling ``changed()``: a counter in the meta table that
each write others must act on (schedule, cancel, lease release) bumps.

``synchronous=NORMAL`` in WAL mode: a committed transaction survives a crash
of the process (what the crash tests kill), and may be lost only on a power
failure or OS crash; pass ``synchronous="FULL"`` to survive those too.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ._sql import ThreadConnections
from ._sql_store import SQLStore
from ._task_sql import SQLiteTaskSQL
from .records import Claim, NewTask, Outcome, Serves
from .series_table import SQLSeriesTable
from .store import ROW_FORMAT, batch_prefix, claimed

__all__ = ["SQLiteStore", "decode_text"]

log = logging.getLogger("pysched.durable")

W = TypeVar("W")

# The error of a row refused because its task_id is not text (see SQLiteStore._keyed).
_NOT_A_KEY = "refused: its task_id is not valid UTF-8 text"


class SQLiteStore(SQLStore):
    """A Store in the SQLite file at ``path`` (created with its tables if absent).

    ``clock`` gives wall seconds for leases (injectable for tests).
    """

    sql: SQLiteTaskSQL

    def __init__(self, path: str | os.PathLike[str], *, table: str = "pysched_tasks",
                 synchronous: str = "NORMAL", busy_timeout: float = 30.0,
                 clock: Callable[[], float] = time.time) -> None:
        if synchronous not in ("NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL, FULL or EXTRA, got {synchronous!r}")
        self.path = os.fspath(path)
        self.sql = sql = SQLiteTaskSQL(table)
        self.table = sql.table
        self._clock = clock
        self._timeout = busy_timeout
        self._synchronous = synchronous
        self._conns: ThreadConnections[sqlite3.Connection] = ThreadConnections(
            self._connect, sqlite3.Connection.close)
        self._seen_changes: float | None = None
        self._start_group_commit()
        self._series = SQLSeriesTable(sql.table, self._run_series, now=":now", pyformat=False,
                                      raw_id="CAST(s.series_id AS BLOB)")
        with self._transaction() as db:
            self._create(db, lambda column: column not in {
                r[1] for r in db.execute(sql.table_info).fetchall()})

    def _connect(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None,
                                 check_same_thread=False)
            db.text_factory = decode_text
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self._synchronous}")
        except sqlite3.Error as exc:  # SQLite's own message does not say which file
            if db is not None:
                db.close()
            raise type(exc)(_open_error(self.path, exc)) from exc
        return db

    def _run_series(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self._transaction() as db:
            return db.execute(sql, {**params, "now": self._clock()}).fetchall()

    # -- SQLStore's hooks: one writer at a time, a counter others poll --------------------

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conns.get())

    def _read(self, statement: str, params: dict[str, Any]) -> list[Any]:
        return self._conns.get().execute(statement, params).fetchall()

    def _write(self, work: Callable[[sqlite3.Connection], W]) -> W:
        with self._transaction() as db:
            return work(db)

    def _announce(self, db: sqlite3.Connection, task_ids: Sequence[str]) -> None:
        db.execute(self.sql.bump_changes)

    def _with_clock(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**params, "now": self._clock()}

    def _took_seq(self, db: sqlite3.Connection) -> None:
        db.execute(self.sql.bump_seq)

    # -- what only SQLite does so --------------------------------------------------------------

    def _schedule_group(self, tasks: Sequence[NewTask]) -> list[int]:
        # The order numbers and the announcement in one statement.
        return self._write(lambda db: self._schedule_rows(db, tasks, announce=True))

    def _schedule_rows(self, db: sqlite3.Connection, tasks: Sequence[NewTask],
                       announce: bool = False) -> list[int]:
        """Store ``tasks``; with ``announce``, bump the changes counter too."""
        sql = self.sql
        if announce:
            taken = dict(db.execute(sql.take_seq_announce, {"count": len(tasks)}).fetchall())
            last = taken["seq"]
        else:
            (last,) = db.execute(sql.take_seq, {"count": len(tasks)}).fetchone()
        first = int(last) - len(tasks) + 1
        versions: dict[int, int] = {}
        for start in range(0, len(tasks), sql.SCHEDULE_ROWS):
            chunk = tasks[start:start + sql.SCHEDULE_ROWS]
            params: list[Any] = []
            for n, task in enumerate(chunk, first + start):
                params += (task.task_id, task.run_at, task.priority, task.ref, task.args, n,
                           ROW_FORMAT, task.queue)
            versions.update(db.execute(sql.schedule(len(chunk)), params).fetchall())
        return [versions[first + i] for i in range(len(tasks))]

    def _group_error(self, exc: Exception) -> bool:
        # Locked, busy, a disk error: the database's, not an item's.
        return not isinstance(exc, sqlite3.OperationalError)

    def claim(self, threshold: float, limit: int, owner: str, lease: float,
              serves: Serves | None = None, batch: str | None = None) -> list[Claim]:
        now = self._clock()
        params = {"owner": owner, "batch": batch or batch_prefix(owner), "now": now,
                  "lease": lease, "threshold": threshold, "limit": limit,
                  **self.sql.serves_params(serves)}
        with self._transaction() as db:
            # One statement under the write lock: the rows it chose cannot change
            # before its update applies to them.
            found = db.execute(self.sql.claim, params).fetchall()
            keep = [r[:10] for r in found if self._keyed(db, r[10], r[11], now)]
        return claimed(keep)

    def _keyed(self, db: sqlite3.Connection, rowid: int, raw_id: Any, now: float) -> bool:
        """Whether a claimed row's task_id is text a str names; else it is ended in error.

        Nothing can address such a row by its id (the store's own writes always
        are UTF-8), so it would run and then be unable to record its outcome,
        run again at every lease's end. It is refused here, in the claim's own
        transaction, by its rowid.
        """
        try:
            raw_id.decode("utf-8")
        except (AttributeError, UnicodeDecodeError):
            db.execute(self.sql.refuse_unkeyed, {"error": _NOT_A_KEY, "now": now,
                                                 "rowid": rowid})
            log.warning("refused a row whose task_id is not UTF-8 text (%r): ended in error",
                        raw_id)
            return False
        return True

    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        sql = self.sql
        results = []
        with self._transaction() as db:
            now = self._clock()  # one transaction, one instant
            for o in outcomes:
                unrun = o.state == "pending" and o.retry_at is None
                recorded = db.execute(sql.record, (
                    o.state, unrun, o.error, o.retry_at, now, o.task_id, o.token,
                    o.version)).rowcount == 1
                if recorded and o.state == "pending":
                    self._announce(db, [o.task_id])  # claimable again: others must look
                if not recorded and db.execute(sql.release_token,
                                               (o.task_id, o.token)).rowcount:
                    self._announce(db, [o.task_id])  # a newer version may wait for this lease
                results.append(recorded)
        return results

    def now(self) -> float:
        return self._clock()

    def changed(self) -> bool:
        [(value,)] = self._read(self.sql.read_changes, {})
        changed = bool(value != self._seen_changes)
        self._seen_changes = value
        return changed

    def close(self) -> None:
        self._conns.close_all()


def decode_text(value: bytes) -> str:
    """Every TEXT value the store reads, decoded with invalid UTF-8 replaced.

    SQLite keeps whatever bytes a writer put in a TEXT column, and the default
    decoding raises on one row of invalid UTF-8, failing the whole statement: a
    single corrupt or hostile row would stall every claim (it rolls back) and
    every re-read. Decoded here, such a row reads like any other; a claim then
    refuses it (its args are not JSON, its ref names no task, its task_id is
    not text: see SQLiteStore._keyed).
    """
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("utf-8", "replace")


class _Transaction:
    """``with`` block of one ``BEGIN IMMEDIATE`` transaction: commit, or roll back on error."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _open_error(path: str, exc: sqlite3.Error) -> str:
    """The message of a failed open of the database file at ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    missing = "" if os.path.isdir(directory) else f" (the directory {directory!r} does not exist)"
    return f"cannot open the SQLite database {path!r}: {exc}{missing}"
