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

import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._sql import ThreadConnections, check_table, count_states, index_statements, read_row, rows_of
from .records import Claim, NewTask, Outcome, Row, Serves
from .series_table import SQLSeriesTable
from .store import KNOWN_STATES, ROW_FORMAT, Store, batch_prefix, check_key, check_tasks, claimed

__all__ = ["SQLiteStore"]

log = logging.getLogger("pysched.durable")

# The error of a row refused because its task_id is not text (see SQLiteStore._keyed).
_NOT_A_KEY = "refused: its task_id is not valid UTF-8 text"

# Columns added after the first release: (name, type and default), added to old tables.
ADDED_COLUMNS = [("queue", "TEXT NOT NULL DEFAULT 'default'"), ("updated_at", "REAL")]


class SQLiteStore(Store):
    """A Store in the SQLite file at ``path`` (created with its tables if absent).

    ``clock`` gives wall seconds for leases (injectable for tests).
    """

    def __init__(self, path: str | os.PathLike[str], *, table: str = "pysched_tasks",
                 synchronous: str = "NORMAL", busy_timeout: float = 30.0,
                 clock: Callable[[], float] = time.time) -> None:
        if synchronous not in ("NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL, FULL or EXTRA, got {synchronous!r}")
        self.path = os.fspath(path)
        self.table = t = check_table(table)
        self._clock = clock
        self._timeout = busy_timeout
        self._synchronous = synchronous
        self._conns: ThreadConnections[sqlite3.Connection] = ThreadConnections(
            self._connect, sqlite3.Connection.close)
        self._seen_changes: float | None = None
        self._series = SQLSeriesTable(t, self._run_series, now=":now", pyformat=False,
                                      raw_id="CAST(s.series_id AS BLOB)")
        with self._write() as db:
            db.execute(f"CREATE TABLE IF NOT EXISTS {t} ("
                       "task_id TEXT PRIMARY KEY, version INTEGER NOT NULL, state TEXT NOT NULL,"
                       " run_at REAL NOT NULL, priority INTEGER NOT NULL, ref TEXT NOT NULL,"
                       " args TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,"
                       " seq INTEGER NOT NULL, fmt INTEGER NOT NULL DEFAULT 1, error TEXT,"
                       " lease_owner TEXT, lease_token TEXT, lease_expires REAL)")
            have = {r[1] for r in db.execute(f"PRAGMA table_info({t})").fetchall()}
            for column, ddl in ADDED_COLUMNS:  # tables made by an older pysched
                if column not in have:
                    db.execute(f"ALTER TABLE {t} ADD COLUMN {column} {ddl}")
            for statement in index_statements(t):
                db.execute(statement)
            db.execute(f"CREATE TABLE IF NOT EXISTS {t}_meta (key TEXT PRIMARY KEY, value REAL)")
            db.execute(f"INSERT OR IGNORE INTO {t}_meta VALUES ('seq', 0), ('changes', 0)")
            for statement in self._series.create_statements():
                db.execute(statement)

    def _connect(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None,
                                 check_same_thread=False)
            db.text_factory = _text
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self._synchronous}")
        except sqlite3.Error as exc:  # SQLite's own message does not say which file
            if db is not None:
                db.close()
            raise type(exc)(_open_error(self.path, exc)) from exc
        return db

    def series_table(self) -> SQLSeriesTable:
        return self._series

    def _run_series(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        with self._write() as db:
            return db.execute(sql, {**params, "now": self._clock()}).fetchall()

    def _write(self) -> _Transaction:
        return _Transaction(self._conns.get())

    def _bump_changes(self, db: sqlite3.Connection) -> None:
        db.execute(f"UPDATE {self.table}_meta SET value = value + 1 WHERE key = 'changes'")

    def schedule(self, tasks: Sequence[NewTask]) -> list[int]:
        check_tasks(tasks)
        t = self.table
        versions = []
        with self._write() as db:
            (seq,) = db.execute(f"SELECT value FROM {t}_meta WHERE key = 'seq'").fetchone()
            seq = int(seq)
            for task in tasks:
                seq += 1
                (version,) = db.execute(
                    f"INSERT INTO {t} (task_id, version, state, run_at, priority, ref, args,"
                    " attempts, seq, fmt, queue) VALUES (?, 1, 'pending', ?, ?, ?, ?, 0, ?, ?, ?)"
                    " ON CONFLICT (task_id) DO UPDATE SET version = version + 1,"
                    " state = 'pending', run_at = excluded.run_at, priority = excluded.priority,"
                    " ref = excluded.ref, args = excluded.args, attempts = 0, error = NULL,"
                    " seq = excluded.seq, fmt = excluded.fmt, queue = excluded.queue,"
                    " updated_at = NULL RETURNING version",
                    (task.task_id, task.run_at, task.priority, task.ref, task.args, seq,
                     ROW_FORMAT, task.queue)).fetchone()
                versions.append(version)
            db.execute(f"UPDATE {t}_meta SET value = ? WHERE key = 'seq'", (seq,))
            self._bump_changes(db)
        return versions

    def cancel(self, task_id: str, version: int | None = None) -> int | None:
        check_key(task_id, "task_id")
        with self._write() as db:
            row = db.execute(f"UPDATE {self.table} SET version = version + 1,"
                             " state = 'cancelled', updated_at = :now WHERE task_id = :id"
                             " AND (state = 'pending' OR state = 'running'"
                             " AND :v IS NULL) AND version = coalesce(:v, version)"
                             " RETURNING version",
                             {"id": task_id, "v": version, "now": self._clock()}).fetchone()
            if row is not None:
                self._bump_changes(db)
        return None if row is None else int(row[0])

    def rows(self, task_ids: Sequence[str] | None = None) -> list[Row]:
        db = self._conns.get()
        cols = ("task_id, version, state, run_at, priority, state = 'pending' AND"
                " lease_expires IS NOT NULL AND lease_expires >= ?, ref, queue")
        now = self._clock()
        if task_ids is None:
            found = db.execute(f"SELECT {cols} FROM {self.table} WHERE state = 'pending'",
                               (now,)).fetchall()
        else:
            found = []
            ids = list(dict.fromkeys(task_ids))
            for i in range(0, len(ids), 500):  # SQLite caps bound parameters per statement
                chunk = ids[i:i + 500]
                found += db.execute(f"SELECT {cols} FROM {self.table} WHERE task_id IN"
                                    f" ({','.join('?' * len(chunk))})", (now, *chunk)).fetchall()
        return rows_of(found)

    def claim(self, threshold: float, limit: int, owner: str, lease: float,
              serves: Serves | None = None, batch: str | None = None) -> list[Claim]:
        t = self.table
        now = self._clock()
        with self._write() as db:
            # One statement under the write lock: the subquery's (task_id,
            # version) cannot change before the UPDATE applies to it.
            found = db.execute(
                f"UPDATE {t} SET state = 'running', attempts = attempts + 1,"
                " lease_owner = :owner, lease_expires = :now + :lease,"
                " lease_token = :batch || ':' || version || ':' || (attempts + 1) || ':' || task_id"
                f" WHERE (task_id, version) IN (SELECT task_id, version FROM {t}"
                "  WHERE state = 'pending' AND run_at <= :threshold"
                "  AND (lease_expires IS NULL OR lease_expires < :now)"
                "  AND (:names IS NULL OR ref IN (SELECT value FROM json_each(:names))"
                "   OR EXISTS (SELECT 1 FROM json_each(:prefixes)"
                "    WHERE substr(ref, 1, length(value)) = value))"
                "  AND (:queues IS NULL OR queue IN (SELECT value FROM json_each(:queues)))"
                "  ORDER BY run_at, priority DESC, seq LIMIT :limit) AND state = 'pending'"
                " RETURNING task_id, version, run_at, priority, ref, args, attempts,"
                " lease_token, fmt, seq, rowid, CAST(task_id AS BLOB)",
                {"owner": owner, "batch": batch or batch_prefix(owner), "now": now, "lease": lease,
                 "threshold": threshold, "limit": limit, **_serves_params(serves)}).fetchall()
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
            db.execute(f"UPDATE {self.table} SET state = 'error', error = ?, updated_at = ?,"
                       " lease_owner = NULL, lease_token = NULL, lease_expires = NULL"
                       " WHERE rowid = ?", (_NOT_A_KEY, now, rowid))
            log.warning("refused a row whose task_id is not UTF-8 text (%r): ended in error",
                        raw_id)
            return False
        return True

    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        t = self.table
        results = []
        with self._write() as db:
            for o in outcomes:
                # A hand-back unrun keeps the error of an earlier try and gives its attempt back.
                unrun = o.state == "pending" and o.retry_at is None
                recorded = db.execute(
                    f"UPDATE {t} SET state = ?, error = CASE WHEN ? THEN error ELSE ? END,"
                    " attempts = attempts - CASE WHEN ? THEN 1 ELSE 0 END,"
                    " run_at = coalesce(?, run_at), updated_at = ?, lease_owner = NULL,"
                    " lease_token = NULL, lease_expires = NULL WHERE task_id = ?"
                    " AND lease_token = ? AND version = ? AND state = 'running'",
                    (o.state, unrun, o.error, unrun, o.retry_at, self._clock(), o.task_id,
                     o.token, o.version)).rowcount == 1
                if recorded and o.state == "pending":
                    self._bump_changes(db)  # claimable again: others must look
                if not recorded and db.execute(
                        f"UPDATE {t} SET lease_owner = NULL, lease_token = NULL,"
                        " lease_expires = NULL WHERE task_id = ? AND lease_token = ?",
                        (o.task_id, o.token)).rowcount:
                    self._bump_changes(db)  # a newer version may be waiting for this lease
                results.append(recorded)
        return results

    def retry(self, task_id: str) -> int | None:
        check_key(task_id, "task_id")
        t = self.table
        with self._write() as db:
            (seq,) = db.execute(f"SELECT value FROM {t}_meta WHERE key = 'seq'").fetchone()
            now = self._clock()
            row = db.execute(f"UPDATE {t} SET version = version + 1, state = 'pending',"
                             " run_at = ?, attempts = 0, error = NULL, seq = ?, updated_at = ?"
                             " WHERE task_id = ? AND state IN ('failed', 'error')"
                             " RETURNING version", (now, int(seq) + 1, now, task_id)).fetchone()
            if row is not None:
                db.execute(f"UPDATE {t}_meta SET value = ? WHERE key = 'seq'", (int(seq) + 1,))
                self._bump_changes(db)
        return None if row is None else int(row[0])

    def prune(self, before: float, limit: int) -> int:
        t = self.table
        with self._write() as db:
            return db.execute(f"DELETE FROM {t} WHERE task_id IN (SELECT task_id FROM {t}"
                              " WHERE state IN ('completed', 'failed', 'cancelled', 'error')"
                              " AND coalesce(updated_at, run_at) < ? LIMIT ?)",
                              (before, limit)).rowcount

    def pending_stats(self, before: float) -> tuple[int, float | None]:
        count, oldest = self._conns.get().execute(
            f"SELECT count(*), min(run_at) FROM {self.table} WHERE state = 'pending'"
            " AND run_at < ?", (before,)).fetchone()
        return int(count), oldest

    def heartbeat(self, owner: str, lease: float, tokens: Sequence[str] | None = None
                  ) -> list[str]:
        expires = self._clock() + lease
        update = f"UPDATE {self.table} SET lease_expires = ? WHERE lease_owner = ?"
        with self._write() as db:
            if tokens is None:
                return [r[0] for r in db.execute(f"{update} RETURNING lease_token",
                                                 (expires, owner)).fetchall()]
            renewed = []
            wanted = list(dict.fromkeys(tokens))
            for i in range(0, len(wanted), 500):  # SQLite caps bound parameters per statement
                chunk = wanted[i:i + 500]
                renewed += [r[0] for r in db.execute(
                    f"{update} AND lease_token IN ({','.join('?' * len(chunk))})"
                    " RETURNING lease_token", (expires, owner, *chunk)).fetchall()]
            return renewed

    def release_batch(self, owner: str, batch: str) -> list[str]:
        prefix = batch + ":"
        return self._release("lease_owner = ? AND substr(lease_token, 1, ?) = ?", owner,
                             len(prefix), prefix, give_back=True)

    def requeue_expired(self) -> list[str]:
        return self._release("lease_expires < ?", self._clock())

    def repair_leases(self, horizon: float) -> list[str]:
        # typeof() catches a lease that is not a number at all (a hostile write).
        return self._release("state = 'running' AND lease_expires IS NULL OR state IN"
                             " ('pending', 'running') AND lease_expires IS NOT NULL AND"
                             " (typeof(lease_expires) NOT IN ('real', 'integer')"
                             " OR lease_expires > ?)", self._clock() + horizon)

    def unknown_states(self, limit: int = 10) -> list[tuple[str, str]]:
        known = ", ".join(f"'{s}'" for s in sorted(KNOWN_STATES))
        return [(r[0], r[1]) for r in self._conns.get().execute(
            f"SELECT task_id, state FROM {self.table} WHERE state NOT IN ({known})"
            " OR state IS NULL LIMIT ?", (limit,)).fetchall()]

    def now(self) -> float:
        return self._clock()

    def release_owner(self, owner: str, expiring_within: float | None = None) -> list[str]:
        if expiring_within is None:
            return self._release("lease_owner = ?", owner)
        return self._release("lease_owner = ? AND lease_expires < ?", owner,
                             self._clock() + expiring_within)

    def _release(self, where: str, *args: Any, give_back: bool = False) -> list[str]:
        # give_back: the claims never started, so a running row's attempt is given back.
        with self._write() as db:
            ids = [r[0] for r in db.execute(
                f"UPDATE {self.table} SET state = CASE state WHEN 'running' THEN 'pending'"
                f" ELSE state END, attempts = attempts - {int(give_back)} * (state = 'running'),"
                " lease_owner = NULL, lease_token = NULL, lease_expires = NULL"
                f" WHERE {where} RETURNING task_id", args).fetchall()]
            if ids:
                self._bump_changes(db)
        return ids

    def held_by(self, owner: str) -> list[str]:
        return [r[0] for r in self._conns.get().execute(
            f"SELECT task_id FROM {self.table} WHERE lease_owner = ?", (owner,)).fetchall()]

    def mark_error(self, task_id: str, version: int, message: str) -> bool:
        with self._write() as db:
            return db.execute(f"UPDATE {self.table} SET state = 'error', error = ?,"
                              " updated_at = ? WHERE task_id = ? AND version IS ?"
                              " AND state = 'pending'",
                              (message, self._clock(), task_id, version)).rowcount == 1

    def get(self, task_id: str) -> dict[str, Any] | None:
        return read_row(self._conns.get(), self.table, check_key(task_id, "task_id"), "?")

    def counts(self) -> dict[str, int]:
        return count_states(self._conns.get(), self.table)

    def wall_high_water(self, wall: float | None = None) -> float | None:
        with self._write() as db:
            if wall is not None:
                db.execute(f"INSERT INTO {self.table}_meta VALUES ('wall', ?) ON CONFLICT (key)"
                           " DO UPDATE SET value = max(value, excluded.value)", (wall,))
            row = db.execute(f"SELECT value FROM {self.table}_meta WHERE key = 'wall'").fetchone()
        return None if row is None else float(row[0])

    def changed(self) -> bool:
        (value,) = self._conns.get().execute(
            f"SELECT value FROM {self.table}_meta WHERE key = 'changes'").fetchone()
        changed = bool(value != self._seen_changes)
        self._seen_changes = value
        return changed

    def close(self) -> None:
        self._conns.close_all()


def _text(value: bytes) -> str:
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


def _serves_params(serves: Serves | None) -> dict[str, str | None]:
    """The claim's filter parameters: JSON arrays, or None for "every row"."""
    if serves is None:
        return {"names": None, "prefixes": None, "queues": None}
    return {"names": json.dumps(serves.names), "prefixes": json.dumps(serves.prefixes),
            "queues": None if serves.queues is None else json.dumps(serves.queues)}


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
