"""PostgresStore: one durable schedule shared by many processes on PostgreSQL (psycopg 3).

Claims are batches: a ``SELECT ... FOR UPDATE SKIP LOCKED`` of the due,
lease-free pending rows in claim order, then an UPDATE of exactly those
(task_id, version) pairs that are still pending, in one statement. Two
processes claiming at once therefore take disjoint rows without waiting on
each other's locks. Leases and their expiry use the server's clock
(``clock_timestamp()``), so clock skew between nodes does not shorten or
lengthen a lease; ``run_at`` is the scheduling node's wall clock.

Wake-ups: each write other processes must act on (schedule, cancel, lease
release) sends ``NOTIFY <table>`` in its transaction, with the written task
ids as JSON, or ``*`` when they do not fit in a notification; notifications
are delivered only on commit, in commit order. ``wait_changes`` listens on a
connection of its own. Every other connection is per thread, in autocommit
mode, with explicit transactions for multi-statement writes.
"""

from __future__ import annotations

import json
import select
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

try:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("PostgresStore needs psycopg 3: pip install 'pysched[postgres]'") from exc

from ._sql import ThreadConnections, check_table, count_states, index_statements, read_row, rows_of
from .records import ATTEMPTS_LIMIT, Changes, Claim, NewTask, Outcome, Row, Serves
from .series_table import SQLSeriesTable
from .store import (
    KNOWN_STATES,
    ROW_FORMAT,
    Store,
    batch_prefix,
    check_key,
    check_tasks,
    claimed,
    parse_json,
)

__all__ = ["PostgresStore", "connect"]

NOW = "extract(epoch from clock_timestamp())"
_WRITE_ATTEMPTS = 3  # a write aborted to break a lock cycle is tried this often in all
W = TypeVar("W")
_NEXT_ATTEMPT = f"(least(t.attempts, {ATTEMPTS_LIMIT - 1}) + 1)"  # a claim's count
_NOTIFY_MAX = 7000  # bytes; the server refuses payloads of 8000 or more
# Columns added after the first release: (name, type and default), added to old tables.
ADDED_COLUMNS = [("queue", "text NOT NULL DEFAULT 'default'"),
                 ("updated_at", "double precision")]


class PostgresStore(Store):
    """A Store in table ``table`` of the PostgreSQL database at ``url`` (created if absent)."""

    notifies = True
    reference_clock = True

    def __init__(self, url: str, *, table: str = "pysched_tasks",
                 connect_timeout: float = 10.0) -> None:
        self.url = url
        self.table = t = check_table(table)
        self._timeout = connect_timeout
        self._conns: ThreadConnections[psycopg.Connection[Any]] = ThreadConnections(
            self._connect, self._disconnect, _usable)
        self._listener: psycopg.Connection[Any] | None = None
        self.subscriptions = 0  # LISTENs made: each one must be followed by a full re-read
        # Server processes of our own connections: their notifications are
        # of writes this process has already applied, so the listener skips them.
        self._own_pids: set[int] = set()
        self._pid_of: dict[int, int] = {}  # id(connection) -> its server process id
        self._series = SQLSeriesTable(t, self._run_series, now=NOW, pyformat=True)
        db = self._conns.get()
        with db.transaction():
            # Creating the same table from several processes at once races in
            # the catalog even with IF NOT EXISTS: serialise on a lock keyed by the name.
            db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (t,))
            db.execute(f"CREATE TABLE IF NOT EXISTS {t} ("
                       "task_id text PRIMARY KEY, version bigint NOT NULL, state text NOT NULL,"
                       " run_at double precision NOT NULL, priority bigint NOT NULL,"
                       " ref text NOT NULL, args text NOT NULL, attempts integer NOT NULL"
                       " DEFAULT 0, seq bigint NOT NULL, fmt integer NOT NULL DEFAULT 1,"
                       " error text, lease_owner text, lease_token text,"
                       " lease_expires double precision)")
            for column, ddl in ADDED_COLUMNS:  # tables made by an older pysched
                db.execute(f"ALTER TABLE {t} ADD COLUMN IF NOT EXISTS {column} {ddl}")
            for statement in index_statements(t):
                db.execute(statement)
            db.execute(f"CREATE SEQUENCE IF NOT EXISTS {t}_seq")
            db.execute(f"CREATE TABLE IF NOT EXISTS {t}_meta (key text PRIMARY KEY,"
                       " value double precision)")
            for statement in self._series.create_statements():
                db.execute(statement)

    def _connect(self) -> psycopg.Connection[Any]:
        db = connect(self.url, connect_timeout=self._timeout)
        self._pid_of[id(db)] = db.info.backend_pid
        self._own_pids.add(db.info.backend_pid)
        return db

    def _disconnect(self, db: psycopg.Connection[Any]) -> None:
        # A server process id is reused after a restart: another client's
        # notifications must not be skipped as ours.
        self._own_pids.discard(self._pid_of.pop(id(db), -1))
        db.close()

    def _notify(self, db: psycopg.Connection[Any], task_ids: Iterable[str]) -> None:
        """Notify the ids in payloads that fit, never ``*``: a listener treats a full
        re-read as suspect (any role may send one) and debounces it."""
        payloads: list[list[str]] = []
        chunk: list[str] = []
        size = 2
        for task_id in task_ids:
            item = len(json.dumps(task_id).encode()) + 1
            if chunk and size + item > _NOTIFY_MAX:
                payloads.append(chunk)
                chunk, size = [], 2
            chunk.append(task_id)
            size += item
        if chunk:
            payloads.append(chunk)
        for ids in payloads:
            db.execute("SELECT pg_notify(%s, %s)",
                       (self.table, json.dumps(ids, separators=(",", ":"))))

    def schedule(self, tasks: Sequence[NewTask]) -> list[int]:
        check_tasks(tasks)
        if not tasks:
            return []
        t = self.table
        versions: list[int] = []
        db = self._conns.get()
        with db.transaction():
            # unnest() sends a batch in one statement; ON CONFLICT may touch a
            # row once per statement, so a batch naming an id twice is split.
            for batch in _runs_without_repeats(tasks):
                cur = db.execute(
                    f"INSERT INTO {t} AS t (task_id, version, state, run_at, priority, ref, args,"
                    " attempts, seq, fmt, queue) SELECT i, 1, 'pending', r, p, f, a, 0,"
                    f" nextval('{t}_seq'), %s, q FROM unnest(%s::text[], %s::float8[],"
                    " %s::bigint[], %s::text[], %s::text[], %s::text[])"
                    " WITH ORDINALITY AS u(i, r, p, f, a, q, n)"
                    " ORDER BY n ON CONFLICT (task_id) DO UPDATE SET version = t.version + 1,"
                    " state = 'pending', run_at = excluded.run_at, priority = excluded.priority,"
                    " ref = excluded.ref, args = excluded.args, attempts = 0, error = NULL,"
                    " seq = excluded.seq, fmt = excluded.fmt, queue = excluded.queue,"
                    " updated_at = NULL RETURNING task_id, version",
                    (ROW_FORMAT, [x.task_id for x in batch], [x.run_at for x in batch],
                     [x.priority for x in batch], [x.ref for x in batch],
                     [x.args for x in batch], [x.queue for x in batch]))
                got = dict(cur.fetchall())
                versions += [got[x.task_id] for x in batch]
            self._notify(db, (x.task_id for x in tasks))
        return versions

    def cancel(self, task_id: str, version: int | None = None) -> int | None:
        check_key(task_id, "task_id")
        db = self._conns.get()
        with db.transaction():
            row = db.execute(f"UPDATE {self.table} SET version = version + 1,"
                             f" state = 'cancelled', updated_at = {NOW} WHERE task_id = %s"
                             " AND (state = 'pending' OR state = 'running'"
                             " AND %s::bigint IS NULL) AND version = coalesce(%s, version)"
                             " RETURNING version", (task_id, version, version)).fetchone()
            if row is not None:
                self._notify(db, [task_id])
        return None if row is None else int(row[0])

    def rows(self, task_ids: Sequence[str] | None = None) -> list[Row]:
        db = self._conns.get()
        cols = ("task_id, version, state, run_at, priority, state = 'pending' AND"
                f" lease_expires IS NOT NULL AND lease_expires >= {NOW}, ref, queue")
        if task_ids is None:
            found = db.execute(f"SELECT {cols} FROM {self.table} WHERE state = 'pending'")
        else:
            found = db.execute(f"SELECT {cols} FROM {self.table} WHERE task_id = ANY(%s)",
                               (list(task_ids),))
        return rows_of(found.fetchall())

    def claim(self, threshold: float, limit: int, owner: str, lease: float,
              serves: Serves | None = None, batch: str | None = None) -> list[Claim]:
        t = self.table
        found = self._conns.get().execute(
            f"WITH due AS (SELECT task_id, version FROM {t}"
            " WHERE state = 'pending' AND run_at <= %(threshold)s"
            f" AND (lease_expires IS NULL OR lease_expires < {NOW})"
            " AND (%(names)s::text[] IS NULL OR ref = ANY(%(names)s::text[])"
            "  OR EXISTS (SELECT 1 FROM unnest(%(prefixes)s::text[]) AS p(x)"
            "   WHERE starts_with(ref, p.x)))"
            " AND (%(queues)s::text[] IS NULL OR queue = ANY(%(queues)s::text[]))"
            " ORDER BY run_at, priority DESC, seq LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
            # A count at the integer column's limit (a hostile write) must not fail the
            # whole batch by overflowing: it is claimed at the limit, then refused.
            f" UPDATE {t} AS t SET state = 'running', attempts = {_NEXT_ATTEMPT},"
            f" lease_owner = %(owner)s, lease_expires = {NOW} + %(lease)s,"
            f" lease_token = %(batch)s || ':' || t.version || ':' || {_NEXT_ATTEMPT} || ':'"
            " || t.task_id"
            " FROM due WHERE t.task_id = due.task_id AND t.version = due.version"
            " AND t.state = 'pending' RETURNING t.task_id, t.version, t.run_at, t.priority,"
            " t.ref, t.args, t.attempts, t.lease_token, t.fmt, t.seq",
            {"threshold": threshold, "limit": limit, "owner": owner, "lease": lease,
             "batch": batch or batch_prefix(owner),
             "names": None if serves is None else list(serves.names),
             "prefixes": None if serves is None else list(serves.prefixes),
             "queues": None if serves is None or serves.queues is None
             else list(serves.queues)}).fetchall()
        return claimed(found)

    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        if not outcomes:
            return []
        t = self.table

        def write(db: psycopg.Connection[Any]) -> set[str]:
            self._lock_in_order(db, "task_id = ANY(%s)", ([o.task_id for o in outcomes],))
            # Record where the claim still holds its version; release the
            # lease wherever the token still holds it.
            # A hand-back unrun (pending, no retry_at) keeps the error of an earlier try
            # and gives its attempt back.
            found = db.execute(
                f"UPDATE {t} AS t SET state = u.s, error = CASE WHEN u.s = 'pending' AND"
                " u.r IS NULL THEN t.error ELSE u.e END, run_at = coalesce(u.r, t.run_at),"
                " attempts = t.attempts - CASE WHEN u.s = 'pending' AND u.r IS NULL THEN 1"
                " ELSE 0 END,"
                f" updated_at = {NOW}, lease_owner = NULL,"
                " lease_token = NULL, lease_expires = NULL FROM unnest(%s::text[], %s::text[],"
                " %s::bigint[], %s::text[], %s::text[], %s::float8[]) AS u(i, k, v, s, e, r)"
                " WHERE t.task_id = u.i AND t.lease_token = u.k AND t.version = u.v"
                " AND t.state = 'running' RETURNING u.k, u.i, u.s",
                ([o.task_id for o in outcomes], [o.token for o in outcomes],
                 [o.version for o in outcomes], [o.state for o in outcomes],
                 [o.error for o in outcomes], [o.retry_at for o in outcomes])).fetchall()
            recorded = {r[0] for r in found}
            again = [r[1] for r in found if r[2] == "pending"]
            if again:
                self._notify(db, again)  # claimable again: others must look
            rest = [o for o in outcomes if o.token not in recorded]
            if rest:
                released = [r[0] for r in db.execute(
                    f"UPDATE {t} AS t SET lease_owner = NULL, lease_token = NULL,"
                    " lease_expires = NULL FROM unnest(%s::text[], %s::text[]) AS u(i, k)"
                    " WHERE t.task_id = u.i AND t.lease_token = u.k RETURNING t.task_id",
                    ([o.task_id for o in rest], [o.token for o in rest])).fetchall()]
                if released:
                    self._notify(db, released)  # newer versions may wait for these leases
            return recorded

        recorded = self._write(write)
        return [o.token in recorded for o in outcomes]

    def retry(self, task_id: str) -> int | None:
        check_key(task_id, "task_id")
        db = self._conns.get()
        with db.transaction():
            row = db.execute(f"UPDATE {self.table} SET version = version + 1, state = 'pending',"
                             f" run_at = {NOW}, attempts = 0, error = NULL,"
                             f" seq = nextval('{self.table}_seq'), updated_at = {NOW}"
                             " WHERE task_id = %s AND state IN ('failed', 'error')"
                             " RETURNING version", (task_id,)).fetchone()
            if row is not None:
                self._notify(db, [task_id])
        return None if row is None else int(row[0])

    def prune(self, before: float, limit: int) -> int:
        t = self.table
        return self._conns.get().execute(
            f"DELETE FROM {t} WHERE task_id IN (SELECT task_id FROM {t}"
            " WHERE state IN ('completed', 'failed', 'cancelled', 'error')"
            " AND coalesce(updated_at, run_at) < %s LIMIT %s)", (before, limit)).rowcount

    def pending_stats(self, before: float) -> tuple[int, float | None]:
        count, oldest = self._conns.get().execute(  # type: ignore[misc]
            f"SELECT count(*), min(run_at) FROM {self.table} WHERE state = 'pending'"
            " AND run_at < %s", (before,)).fetchone()
        return int(count), oldest

    def heartbeat(self, owner: str, lease: float, tokens: Sequence[str] | None = None
                  ) -> list[str]:
        args: list[Any] = [owner]
        where = "lease_owner = %s"
        if tokens is not None:
            where, args = "lease_owner = %s AND lease_token = ANY(%s)", [owner, list(tokens)]

        def write(db: psycopg.Connection[Any]) -> list[str]:
            self._lock_in_order(db, where, args)
            return [r[0] for r in db.execute(
                f"UPDATE {self.table} SET lease_expires = {NOW} + %s WHERE {where}"
                " RETURNING lease_token", (lease, *args)).fetchall()]

        return self._write(write)

    def release_batch(self, owner: str, batch: str) -> list[str]:
        return self._release("lease_owner = %s AND starts_with(lease_token, %s)",
                             (owner, batch + ":"), give_back=True)

    def _write(self, work: Callable[[psycopg.Connection[Any]], W]) -> W:
        """``work(db)`` in one transaction, run again if PostgreSQL broke a lock cycle
        or a serialization conflict by aborting it, as its documentation advises."""
        db = self._conns.get()
        for attempt in range(_WRITE_ATTEMPTS):
            try:
                with db.transaction():
                    return work(db)
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
                if attempt == _WRITE_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _lock_in_order(self, db: Any, where: str, args: Sequence[Any]) -> None:
        # Every statement that writes several rows (finish, heartbeat, the releases)
        # first locks them in task_id order, so two of them can never wait for each
        # other in a cycle (PostgreSQL broke such cycles as deadlocks, failing one).
        db.execute(f"SELECT 1 FROM {self.table} WHERE {where} ORDER BY task_id FOR UPDATE",
                   args)

    def repair_leases(self, horizon: float) -> list[str]:
        # NaN sorts above every number in PostgreSQL: '>' finds it too.
        return self._release("state = 'running' AND lease_expires IS NULL OR state IN"
                             f" ('pending', 'running') AND lease_expires > {NOW} + %s",
                             (horizon,))

    def unknown_states(self, limit: int = 10) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self._conns.get().execute(
            f"SELECT task_id, state FROM {self.table} WHERE NOT (state = ANY(%s)) LIMIT %s",
            (sorted(KNOWN_STATES), limit)).fetchall()]

    def series_table(self) -> SQLSeriesTable:
        return self._series

    def _run_series(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        db = self._conns.get()
        with db.transaction():
            cursor = db.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def now(self) -> float:
        (now,) = self._conns.get().execute(f"SELECT {NOW}").fetchone()  # type: ignore[misc]
        return float(now)

    def requeue_expired(self) -> list[str]:
        return self._release(f"lease_expires < {NOW}", ())

    def release_owner(self, owner: str, expiring_within: float | None = None) -> list[str]:
        if expiring_within is None:
            return self._release("lease_owner = %s", (owner,))
        return self._release(f"lease_owner = %s AND lease_expires < {NOW} + %s",
                             (owner, expiring_within))

    def _release(self, where: str, args: tuple[Any, ...], give_back: bool = False
                 ) -> list[str]:
        # give_back: the claims never started, so a running row's attempt is given back.

        def write(db: psycopg.Connection[Any]) -> list[str]:
            self._lock_in_order(db, where, args)
            ids = [r[0] for r in db.execute(
                f"UPDATE {self.table} SET state = CASE state WHEN 'running' THEN 'pending'"
                " ELSE state END, attempts = attempts - CASE WHEN %s AND state = 'running'"
                " THEN 1 ELSE 0 END, lease_owner = NULL, lease_token = NULL,"
                f" lease_expires = NULL WHERE {where} RETURNING task_id",
                (give_back, *args)).fetchall()]
            if ids:
                self._notify(db, ids)
            return ids

        return self._write(write)

    def held_by(self, owner: str) -> list[str]:
        return [r[0] for r in self._conns.get().execute(
            f"SELECT task_id FROM {self.table} WHERE lease_owner = %s", (owner,)).fetchall()]

    def mark_error(self, task_id: str, version: int, message: str) -> bool:
        return self._conns.get().execute(
            f"UPDATE {self.table} SET state = 'error', error = %s, updated_at = {NOW}"
            " WHERE task_id = %s AND version = %s AND state = 'pending'",
            (message, task_id, version)).rowcount == 1

    def get(self, task_id: str) -> dict[str, Any] | None:
        return read_row(self._conns.get(), self.table, check_key(task_id, "task_id"), "%s")

    def counts(self) -> dict[str, int]:
        return count_states(self._conns.get(), self.table)

    def wall_high_water(self, wall: float | None = None) -> float | None:
        db = self._conns.get()
        if wall is not None:
            db.execute(f"INSERT INTO {self.table}_meta VALUES ('wall', %s) ON CONFLICT (key)"
                       f" DO UPDATE SET value = greatest({self.table}_meta.value, excluded.value)",
                       (wall,))
        row = db.execute(f"SELECT value FROM {self.table}_meta WHERE key = 'wall'").fetchone()
        return None if row is None else float(row[0])

    def wait_changes(self, timeout: float) -> set[str] | None:
        try:
            return self._wait_changes(timeout)
        except psycopg.Error:
            # The listening connection is gone (server restart, terminated backend):
            # the next call subscribes on a new one, and says so by an empty set.
            listener, self._listener = self._listener, None
            if listener is not None:
                self._disconnect(listener)
            raise

    def _wait_changes(self, timeout: float) -> Changes | None:
        if self._listener is None:
            listener = self._connect()
            try:
                listener.execute(f"LISTEN {self.table}")
                if self._conns.closed:  # closed meanwhile: close() saw no listener to close
                    raise RuntimeError("the store is closed")
            except BaseException:
                self._disconnect(listener)
                raise
            self._listener = listener
            self.subscriptions += 1
            changes = Changes()
            changes.everything = True  # writes before LISTEN are unseen: re-read everything
            return changes
        changed = Changes()
        seen = False
        # The first notification ends the wait; the rest already queued are drained.
        # Every one is read to the end: a generator left early drops the rest of its
        # packet, and ids beside a request for everything must not be lost with it.
        for wait in (timeout, 0.0):
            for note in self._listener.notifies(timeout=wait, stop_after=1 if wait else None):
                if note.pid not in self._own_pids:
                    seen = True
                    _merge(changed, note.payload)
            if not seen:
                return None
        return changed

    def close(self) -> None:
        self._conns.close_all()
        if self._listener is not None:
            self._disconnect(self._listener)


def connect(url: str, *, connect_timeout: float) -> psycopg.Connection[Any]:
    """An autocommit connection to ``url``; its failure, of psycopg's class, says which
    server, database and user it tried and never repeats the password: psycopg's own
    message names the server only, and repeats the part of a malformed URL it could not
    read, which may be the password (the error is raised ``from None`` for that reason)."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=int(connect_timeout))
    except psycopg.Error as exc:
        raise type(exc)(_connect_error(url, exc)) from None


def _connect_error(url: str, exc: psycopg.Error) -> str:
    """The message of a failed connection to ``url``: which server, database and user
    (never the password), and psycopg's reason with every form of the password hidden."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error:
        where, params = "at a URL that psycopg cannot read", {}
    else:
        named = {k: params[k] for k in ("host", "hostaddr", "port", "dbname", "user")
                 if params.get(k)}
        where = f"({make_conninfo('', **named)})" if named else "(libpq's defaults)"
    try:
        raw = urlsplit(url).password
    except ValueError:
        raw = None
    reason = str(exc).strip()
    # Longest first: the raw password may contain the decoded one.
    secrets = {params.get("password"), raw, None if raw is None else unquote(raw)}
    for secret in sorted((str(s) for s in secrets if s), key=len, reverse=True):
        reason = reason.replace(secret, "***")
    return f"cannot connect to PostgreSQL {where}: {reason}"


def _usable(db: psycopg.Connection[Any]) -> bool:
    """False for a connection that is closed, broken, or that the server ended while it was
    idle (a restart, pg_terminate_backend, an idle timeout).

    An idle connection has nothing to read unless the server sent its farewell
    (an error and end of stream), so a readable socket means the session is gone:
    found without a round trip, before a statement is sent on it. Only a statement
    that was never sent can be retried safely, which is why this is checked first.
    """
    if db.closed or db.broken:
        return False
    try:
        readable, _, _ = select.select([db.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    return not readable


def _merge(changed: Changes, payload: str) -> None:
    """Add one notification's ids; ``*`` or a garbled payload asks for everything."""
    try:
        ids = parse_json(payload)
    except ValueError:
        ids = None
    if isinstance(ids, list) and all(_is_key(i) for i in ids):
        changed.update(ids)
    else:
        changed.everything = True


def _is_key(value: Any) -> bool:
    """Whether a notified id is one a task can have: others (a NUL, a lone surrogate: a
    hostile payload) would make the re-read of the ids fail with the real ones."""
    try:
        check_key(value, "task_id")
    except (TypeError, ValueError):
        return False
    return True


def _runs_without_repeats(tasks: Sequence[NewTask]) -> list[list[NewTask]]:
    """Split ``tasks`` into consecutive runs in which no task id repeats."""
    runs: list[list[NewTask]] = [[]]
    seen: set[str] = set()
    for task in tasks:
        if task.task_id in seen:
            runs.append([])
            seen.clear()
        runs[-1].append(task)
        seen.add(task.task_id)
    return [run for run in runs if run]

