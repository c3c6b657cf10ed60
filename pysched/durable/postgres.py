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

from ._sql import ThreadConnections
from ._sql_store import SQLStore
from ._task_sql import PostgresTaskSQL
from .records import Changes, Claim, NewTask, Outcome, Serves
from .series_table import SQLSeriesTable
from .store import ROW_FORMAT, batch_prefix, check_key, claimed, parse_json

__all__ = ["PostgresStore", "connect", "usable"]

_WRITE_ATTEMPTS = 3  # a write aborted to break a lock cycle is tried this often in all
W = TypeVar("W")
_NOTIFY_MAX = 7000  # bytes; the server refuses payloads of 8000 or more


class PostgresStore(SQLStore):
    """A Store in table ``table`` of the PostgreSQL database at ``url`` (created if absent)."""

    notifies = True
    reference_clock = True
    sql: PostgresTaskSQL

    def __init__(self, url: str, *, table: str = "pysched_tasks",
                 connect_timeout: float = 10.0) -> None:
        self.url = url
        self.sql = sql = PostgresTaskSQL(table)
        self.table = sql.table
        self._timeout = connect_timeout
        self._conns: ThreadConnections[psycopg.Connection[Any]] = ThreadConnections(
            self._connect, self._disconnect, usable)
        self._listener: psycopg.Connection[Any] | None = None
        self.subscriptions = 0  # LISTENs made: each one must be followed by a full re-read
        # Server processes of our own connections: their notifications are
        # of writes this process has already applied, so the listener skips them.
        self._own_pids: set[int] = set()
        self._pid_of: dict[int, int] = {}  # id(connection) -> its server process id
        self._series = SQLSeriesTable(sql.table, self._run_series, now=sql.now, pyformat=True)
        self._start_group_commit()
        db = self._conns.get()
        with db.transaction():
            db.execute(sql.lock_schema, {"table": sql.table})
            self._create(db, lambda column: True)  # ADD COLUMN IF NOT EXISTS

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

    # -- SQLStore's hooks: autocommit reads, retried write transactions, NOTIFY -------------

    def _read(self, statement: str, params: dict[str, Any]) -> list[Any]:
        return self._conns.get().execute(statement, params).fetchall()

    def _write(self, work: Callable[[psycopg.Connection[Any]], W]) -> W:
        """``work(db)`` in one transaction, run again if PostgreSQL broke a lock cycle
        or a serialization conflict by aborting it, as its documentation advises."""
        db = self._conns.get()

        def transaction() -> W:
            with db.transaction():
                return work(db)

        return _retried(transaction)

    def _announce(self, db: psycopg.Connection[Any], task_ids: Iterable[str]) -> None:
        for payload in self._payloads(task_ids):
            db.execute(self.sql.notify, {"channel": self.table, "payload": payload})

    def _payloads(self, task_ids: Iterable[str]) -> list[str]:
        """The ids in notification payloads that fit, never ``*``: a listener treats a full
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
        return [json.dumps(ids, separators=(",", ":")) for ids in payloads]

    def _schedule_group(self, tasks: Sequence[NewTask]) -> list[int]:
        """Tasks of distinct ids notified in one payload: one statement with its
        notification, in autocommit (one round trip, no BEGIN and COMMIT); a lone task's
        parameters as scalars, cheaper to send than arrays. Else by ``_schedule_rows``."""
        ids = [x.task_id for x in tasks]
        payloads = self._payloads(ids)
        if len(payloads) != 1 or len(set(ids)) != len(ids):
            return super()._schedule_group(tasks)
        sql = self.sql
        note = {"fmt": ROW_FORMAT, "channel": self.table, "payload": payloads[0]}
        if len(tasks) == 1:
            [x] = tasks
            statement, params = sql.schedule_one_notify, {
                "id": x.task_id, "run_at": x.run_at, "priority": x.priority, "ref": x.ref,
                "args": x.args, "queue": x.queue, **note}
        else:
            statement, params = sql.schedule_notify, {
                "ids": ids, "run_ats": [x.run_at for x in tasks],
                "priorities": [x.priority for x in tasks], "refs": [x.ref for x in tasks],
                "args": [x.args for x in tasks], "queues": [x.queue for x in tasks], **note}
        db = self._conns.get()
        got = dict(_retried(lambda: db.execute(statement, params).fetchall()))
        return [got[task_id] for task_id in ids]

    # -- what only PostgreSQL does so ------------------------------------------------------------

    def _schedule_rows(self, db: psycopg.Connection[Any], tasks: Sequence[NewTask]
                       ) -> list[int]:
        versions: list[int] = []
        # One statement per run of distinct ids (see PostgresTaskSQL.schedule).
        for batch in _runs_without_repeats(tasks):
            got = dict(db.execute(self.sql.schedule, {
                "fmt": ROW_FORMAT, "ids": [x.task_id for x in batch],
                "run_ats": [x.run_at for x in batch],
                "priorities": [x.priority for x in batch], "refs": [x.ref for x in batch],
                "args": [x.args for x in batch],
                "queues": [x.queue for x in batch]}).fetchall())
            versions += [got[x.task_id] for x in batch]
        return versions

    def _schedule_bulk(self, tasks: Sequence[NewTask]) -> list[int]:
        """COPY into a staging table of the transaction, then one INSERT from it per run
        of distinct ids (see PostgresTaskSQL.stage)."""
        sql = self.sql
        runs = _runs_without_repeats(tasks)

        def write(db: psycopg.Connection[Any]) -> list[int]:
            db.execute(sql.create_stage)
            with db.cursor() as cursor, cursor.copy(sql.copy_stage) as copy:
                copy.set_types(sql.STAGE_TYPES)
                for run, batch in enumerate(runs):
                    for n, x in enumerate(batch):
                        copy.write_row((run, n, x.task_id, x.run_at, x.priority, x.ref, x.args,
                                        x.queue))
            versions: list[int] = []
            for run, batch in enumerate(runs):
                got = dict(db.execute(sql.schedule_staged, {"fmt": ROW_FORMAT, "run": run}
                                      ).fetchall())
                versions += [got[x.task_id] for x in batch]
            self._announce(db, [x.task_id for x in tasks])
            return versions

        return self._write(write)

    def _group_error(self, exc: Exception) -> bool:
        # A lost connection or a conflict tried enough: the commit's fate is the server's.
        return not isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))

    def claim(self, threshold: float, limit: int, owner: str, lease: float,
              serves: Serves | None = None, batch: str | None = None) -> list[Claim]:
        # One statement, on its own: SKIP LOCKED keeps two claimers off each other's rows.
        found = self._read(self.sql.claim, {
            "threshold": threshold, "limit": limit, "owner": owner, "lease": lease,
            "batch": batch or batch_prefix(owner), **self.sql.serves_params(serves)})
        return claimed([r[:10] for r in found])

    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        if not outcomes:
            return []
        sql = self.sql

        def write(db: psycopg.Connection[Any]) -> set[str]:
            self._lock_rows(db, "outcomes", {"ids": [o.task_id for o in outcomes]})
            found = db.execute(sql.record, {
                "ids": [o.task_id for o in outcomes], "tokens": [o.token for o in outcomes],
                "versions": [o.version for o in outcomes],
                "states": [o.state for o in outcomes], "errors": [o.error for o in outcomes],
                "retry_ats": [o.retry_at for o in outcomes]}).fetchall()
            recorded = {r[0] for r in found}
            again = [r[1] for r in found if r[2] == "pending"]
            if again:
                self._announce(db, again)  # claimable again: others must look
            rest = [o for o in outcomes if o.token not in recorded]
            if rest:
                released = [r[0] for r in db.execute(sql.release_tokens, {
                    "ids": [o.task_id for o in rest],
                    "tokens": [o.token for o in rest]}).fetchall()]
                if released:
                    self._announce(db, released)  # newer versions may wait for these leases
            return recorded

        recorded = self._write(write)
        return [o.token in recorded for o in outcomes]

    def _run_series(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        db = self._conns.get()
        with db.transaction():
            cursor = db.execute(sql, params)
            return cursor.fetchall() if cursor.description else []

    def now(self) -> float:
        [(now,)] = self._read(self.sql.now_query, {})
        return float(now)

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
                listener.execute(self.sql.listen)
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
    read, which may be the password (the error is raised ``from None`` for that reason).

    Its statements are never prepared on the server (``prepare_threshold=None``): each
    is planned with its parameters, never by a generic plan that guesses an array's
    length and a state's share. From such guesses a claim's outcomes or a heartbeat's
    tokens, thousands at once, were matched row by row against the whole array, a
    cost quadratic in the batch (measured: minutes for 16,000 outcomes)."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=int(connect_timeout),
                               prepare_threshold=None)
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


def usable(db: psycopg.Connection[Any]) -> bool:
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


def _retried(attempt: Callable[[], W]) -> W:
    """``attempt()``, made again if PostgreSQL aborted it to break a lock cycle or a
    serialization conflict (nothing of it committed)."""
    for tries in range(_WRITE_ATTEMPTS):
        try:
            return attempt()
        except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
            if tries == _WRITE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


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

