"""The task table's SQL, one dialect object per database: every statement named once.

``TaskSQL`` writes each statement on a task table ``t`` (and its ``t_meta``)
once, where SQLite and PostgreSQL agree, in a common form: named parameters
(``:name``, rewritten to ``%(name)s`` for psycopg), ``NOW`` for the store's
clock, ``CAST(x AS type)`` (never ``::``), and every identifier quoted, so a
table may be called ``order`` or ``select``. A subclass per database spells
the few things they do not agree on (``now``, list parameters, prefix
matching, the lock a claim takes) and adds the statements only that database
runs: ``SQLiteTaskSQL`` and ``PostgresTaskSQL``.

To add a statement: give it a name in ``TaskSQL.__init__`` (or in the one
dialect that runs it), written once with ``self._sql(...)``; the stores run it
by that name with a dict of its parameters.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from ._sql import check_table, quote
from .listing_sql import FINISHED, FINISHED_AT, RETIRED_INDEXES, store_index_statements
from .records import ATTEMPTS_LIMIT, Serves
from .store import KNOWN_STATES

__all__ = ["COLUMNS", "ROW_COLUMNS", "PostgresTaskSQL", "SQLiteTaskSQL", "TaskSQL"]

# Every column of a task row, in the order ``Store.get`` reports them.
COLUMNS = ("task_id", "version", "state", "run_at", "priority", "ref", "args", "attempts", "seq",
           "fmt", "error", "lease_owner", "lease_token", "lease_expires", "queue", "updated_at")

# What a re-read needs of a row (``records.Row``): blocked is "pending under a live lease".
ROW_COLUMNS = ("task_id, version, state, run_at, priority, state = 'pending' AND"
               " lease_expires IS NOT NULL AND lease_expires >= NOW, ref, queue")

# Columns added after the first release: (name, type and default), added to old tables.
ADDED_COLUMNS = (("queue", "text NOT NULL DEFAULT 'default'"),
                 ("updated_at", "double precision"))

_NAMED = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")
_NOW = re.compile(r"\bNOW\b")


class TaskSQL(ABC):
    """The statements on the task table ``table`` for one database (see the module)."""

    now: str  # the store's clock as SQL, in seconds since the epoch
    pyformat = False  # psycopg's %(name)s placeholders instead of :name
    lock_due = ""  # what a claim's choice of rows appends to lock them
    add_if_missing = ""  # what ADD COLUMN takes to skip a column the table has

    def __init__(self, table: str) -> None:
        self.table = check_table(table)
        t = self.t = quote(table)
        meta = self.meta = quote(f"{table}_meta")
        sql = self._sql
        known = ", ".join(f"'{s}'" for s in sorted(KNOWN_STATES))

        # -- the schema ------------------------------------------------------------------
        self.create_table = sql(
            f"CREATE TABLE IF NOT EXISTS {t} (task_id text PRIMARY KEY,"
            " version bigint NOT NULL, state text NOT NULL, run_at double precision NOT NULL,"
            " priority bigint NOT NULL, ref text NOT NULL, args text NOT NULL,"
            " attempts integer NOT NULL DEFAULT 0, seq bigint NOT NULL,"
            " fmt integer NOT NULL DEFAULT 1, error text, lease_owner text, lease_token text,"
            " lease_expires double precision)")
        # Partial indexes hold only the rows each scan wants, so finished history
        # costs the claim, the lease expiry scan and the heartbeat nothing.
        self.create_indexes = [sql(s) for s in (
            f"CREATE INDEX IF NOT EXISTS {quote(f'{table}_due')} ON {t}"
            " (run_at, priority DESC, seq) WHERE state = 'pending'",  # the claim, in order
            f"CREATE INDEX IF NOT EXISTS {quote(f'{table}_lease')} ON {t} (lease_expires)"
            " WHERE lease_expires IS NOT NULL",
            f"CREATE INDEX IF NOT EXISTS {quote(f'{table}_owner')} ON {t} (lease_owner)"
            " WHERE lease_owner IS NOT NULL",
            # Retention's; the listing's own indexes are built by the read layer when it
            # first lists the table (listing.py), so that workers' writes do not pay them.
            *store_index_statements(table),
            *(f"DROP INDEX IF EXISTS {quote(table + suffix)}" for suffix in RETIRED_INDEXES))]
        self.create_meta = sql(f"CREATE TABLE IF NOT EXISTS {meta} (key text PRIMARY KEY,"
                               " value double precision)")
        # For tables made by an older pysched (SQLite cannot say IF NOT EXISTS here: its
        # store adds only the columns the table lacks).
        self.add_columns = {name: sql(f"ALTER TABLE {t} ADD COLUMN{self.add_if_missing}"
                                      f" {name} {ddl}") for name, ddl in ADDED_COLUMNS}
        # After the table and its columns: the rest of the schema, this database's too.
        self.create_rest = [*self.create_indexes, self.create_meta]

        # -- reads ---------------------------------------------------------------------------
        self.rows_pending = sql(f"SELECT {ROW_COLUMNS} FROM {t} WHERE state = 'pending'")
        self.rows_of = sql(f"SELECT {ROW_COLUMNS} FROM {t}"
                           f" WHERE {self.in_list('task_id', ':ids')}")
        # The finished rows' index (listing_sql), from ``:since`` on.
        self.rows_finished_since = sql(f"SELECT {ROW_COLUMNS} FROM {t}"
                                       f" WHERE {FINISHED} AND {FINISHED_AT} >= :since")
        self.get = sql(f"SELECT {', '.join(COLUMNS)} FROM {t} WHERE task_id = :id")
        self.counts = sql(f"SELECT state, count(*) FROM {t} GROUP BY state")
        self.pending_stats = sql(f"SELECT count(*), min(run_at) FROM {t}"
                                 " WHERE state = 'pending' AND run_at < :before")
        self.held_by = sql(f"SELECT task_id FROM {t} WHERE lease_owner = :owner")
        self.unknown_states = sql(f"SELECT task_id, state FROM {t}"
                                  f" WHERE state NOT IN ({known}) OR state IS NULL LIMIT :limit")
        self.read_wall_mark = sql(f"SELECT value FROM {meta} WHERE key = 'wall'")

        # -- writes --------------------------------------------------------------------------
        # A new version of each id: later items replace earlier ones (the conflict).
        self._upsert = (" ON CONFLICT (task_id) DO UPDATE SET version = t.version + 1,"
                       " state = 'pending', run_at = excluded.run_at,"
                       " priority = excluded.priority, ref = excluded.ref, args = excluded.args,"
                       " attempts = 0, error = NULL, seq = excluded.seq, fmt = excluded.fmt,"
                       " queue = excluded.queue, updated_at = NULL")
        self.cancel = sql(
            f"UPDATE {t} SET version = version + 1, state = 'cancelled', updated_at = NOW"
            " WHERE task_id = :id AND (state = 'pending' OR state = 'running'"
            " AND CAST(:version AS bigint) IS NULL)"
            " AND version = coalesce(CAST(:version AS bigint), version) RETURNING version")
        self.retry = sql(
            f"UPDATE {t} SET version = version + 1, state = 'pending', run_at = NOW,"
            f" attempts = 0, error = NULL, seq = {self.next_seq()}, updated_at = NOW"
            " WHERE task_id = :id AND state IN ('failed', 'error') RETURNING version")
        # The due rows, lease-free, served here, in claim order; then one update of exactly
        # those still pending, so two claimers never take one row.
        self.claim = sql(
            "WITH due AS (SELECT task_id AS due_id, version AS due_version"
            f" FROM {t} WHERE state = 'pending' AND run_at <= :threshold"
            " AND (lease_expires IS NULL OR lease_expires < NOW)"
            f" AND ({self.no_list(':names')} OR {self.in_list('ref', ':names')}"
            f"  OR {self.starts_with_any('ref', ':prefixes')})"
            f" AND ({self.no_list(':queues')} OR {self.in_list('queue', ':queues')})"
            f" ORDER BY run_at, priority DESC, seq LIMIT :limit{self.lock_due})"
            f" UPDATE {t} AS t SET state = 'running', attempts = {self.next_attempt()},"
            " lease_owner = :owner, lease_expires = NOW + :lease,"
            f" lease_token = :batch || ':' || t.version || ':' || {self.next_attempt()} || ':'"
            " || t.task_id FROM due"
            " WHERE t.task_id = due.due_id AND t.version = due.due_version"
            " AND t.state = 'pending' RETURNING task_id, version, run_at, priority, ref, args,"
            f" attempts, lease_token, fmt, seq, {self.raw_key()}")
        self.heartbeat_all = sql(f"UPDATE {t} SET lease_expires = NOW + :lease"
                                 f" WHERE {self._HEARTBEAT_ALL} RETURNING lease_token")
        self.heartbeat_tokens = sql(f"UPDATE {t} SET lease_expires = NOW + :lease"
                                    f" WHERE {self._heartbeat_tokens_where()}"
                                    " RETURNING lease_token")
        self.release = {name: sql(self._release(where, give_back=name == "batch"))
                        for name, where in self._release_where().items()}
        # A range of the finished rows' index (listing_sql), ``:limit`` rows at most.
        self.prune = sql(f"DELETE FROM {t} WHERE task_id IN (SELECT task_id FROM {t}"
                         f" WHERE {FINISHED} AND {FINISHED_AT} < :before LIMIT :limit)")
        # A NULL version too: SQLite keeps one where no writer of ours would.
        self.mark_error = sql(
            f"UPDATE {t} SET state = 'error', error = :message, updated_at = NOW"
            " WHERE task_id = :id AND (version = :version OR version IS NULL"
            " AND :version IS NULL) AND state = 'pending'")
        # Lock statements run before writes of several rows, by the write's name (none
        # here: see PostgresTaskSQL).
        self.lock_rows: dict[str, str] = {}
        self.raise_wall_mark = sql(
            f"INSERT INTO {meta} VALUES ('wall', :wall) ON CONFLICT (key) DO UPDATE SET"
            f" value = CASE WHEN {meta}.value IS NULL OR excluded.value > {meta}.value"
            f" THEN excluded.value ELSE {meta}.value END")

    _HEARTBEAT_ALL = "lease_owner = :owner"

    def _heartbeat_tokens_where(self) -> str:
        return f"lease_owner = :owner AND {self.in_list('lease_token', ':tokens')}"

    def _release_where(self) -> dict[str, str]:
        """Which leases each release statement releases, by its name."""
        return {
            "batch": f"lease_owner = :owner AND {self.starts_with('lease_token', ':prefix')}",
            "expired": "lease_expires < NOW",
            # Rows running with no lease, or pending or running under one no live worker
            # sets: expiring past the horizon, or not a time at all.
            "unusable": "state = 'running' AND lease_expires IS NULL OR state IN"
                        " ('pending', 'running') AND lease_expires IS NOT NULL AND"
                        f" ({self.not_a_time('lease_expires')}"
                        " OR lease_expires > NOW + :horizon)",
            "owner": "lease_owner = :owner",
            "owner_expiring": "lease_owner = :owner AND lease_expires < NOW + :within",
        }

    def _release(self, where: str, give_back: bool) -> str:
        """Release the leases ``where`` says; a running row is pending again, with its
        attempt given back if ``give_back`` (its claim never started)."""
        attempts = (" attempts = attempts - CASE state WHEN 'running' THEN 1 ELSE 0 END,"
                    if give_back else "")
        return (f"UPDATE {self.t} SET state = CASE state WHEN 'running' THEN 'pending'"
                f" ELSE state END,{attempts} lease_owner = NULL, lease_token = NULL,"
                f" lease_expires = NULL WHERE {where} RETURNING task_id")

    # -- what each database spells its own way --------------------------------------------

    @abstractmethod
    def in_list(self, column: str, param: str) -> str:
        """SQL: ``column`` is one of the list parameter ``param`` (see ``list_param``)."""
        raise NotImplementedError

    @abstractmethod
    def list_param(self, values: Sequence[str]) -> Any:
        """A list of strings as ``in_list`` reads it."""
        raise NotImplementedError

    def no_list(self, param: str) -> str:
        """SQL: the list parameter ``param`` is None (no filter)."""
        return f"{param} IS NULL"

    @abstractmethod
    def starts_with(self, column: str, param: str) -> str:
        """SQL: ``column`` starts with the text parameter ``param``."""
        raise NotImplementedError

    @abstractmethod
    def starts_with_any(self, column: str, param: str) -> str:
        """SQL: ``column`` starts with one of the list parameter ``param``."""
        raise NotImplementedError

    def not_a_time(self, column: str) -> str:
        """SQL: ``column`` holds something that is not a number (only SQLite can)."""
        return "false"

    @abstractmethod
    def next_attempt(self) -> str:
        """SQL: the attempts count of the row ``t`` once claimed again."""
        raise NotImplementedError

    @abstractmethod
    def next_seq(self) -> str:
        """SQL for the next scheduling order number."""
        raise NotImplementedError

    def raw_key(self) -> str:
        """SQL, in a claim's RETURNING: the claimed row's rowid and key as stored bytes,
        where the database may keep a key that is not text (SQLite); else NULLs."""
        return "NULL, NULL"

    def serves_params(self, serves: Serves | None) -> dict[str, Any]:
        """The claim's filter parameters: lists, or None for "every row"."""
        if serves is None:
            return {"names": None, "prefixes": None, "queues": None}
        return {"names": self.list_param(serves.names),
                "prefixes": self.list_param(serves.prefixes),
                "queues": None if serves.queues is None else self.list_param(serves.queues)}

    def _sql(self, text: str) -> str:
        """``text`` in this database's form: its clock for NOW, its placeholders."""
        text = _NOW.sub(self.now, text)
        return _NAMED.sub(r"%(\1)s", text) if self.pyformat else text


class SQLiteTaskSQL(TaskSQL):
    """SQLite's statements. Its clock is the caller's (``:now``, bound per statement),
    list parameters are JSON arrays, and a meta row counts both the scheduling order
    and the writes other processes must look at (polled: SQLite cannot notify)."""

    now = ":now"

    def __init__(self, table: str) -> None:
        super().__init__(table)
        meta = self.meta
        sql = self._sql
        self.table_info = f"PRAGMA table_info({self.t})"
        self.seed_meta = sql(f"INSERT INTO {meta} VALUES ('seq', 0), ('changes', 0)"
                             " ON CONFLICT (key) DO NOTHING")
        self.create_rest.append(self.seed_meta)
        # Takes ``count`` scheduling order numbers at once: the last one taken.
        self.take_seq = sql(f"UPDATE {meta} SET value = value + :count WHERE key = 'seq'"
                            " RETURNING value")
        # The same, and the bump of ``changes`` for others to see them: one statement.
        self.take_seq_announce = sql(
            f"UPDATE {meta} SET value = value + CASE key WHEN 'seq' THEN :count ELSE 1 END"
            " WHERE key IN ('seq', 'changes') RETURNING key, value")
        self.bump_seq = sql(f"UPDATE {meta} SET value = value + 1 WHERE key = 'seq'")
        self.bump_changes = sql(f"UPDATE {meta} SET value = value + 1 WHERE key = 'changes'")
        self.read_changes = sql(f"SELECT value FROM {meta} WHERE key = 'changes'")
        # The statements run once per row take their parameters by position (?N, in the
        # order the comment gives): sqlite3 then binds a tuple instead of looking each
        # name up in a dict, a few microseconds per row.
        # Several rows in one statement (SQLite has no arrays): each row's conflict is
        # resolved in order, so a batch naming an id twice gives each item its own
        # version. RETURNING's order is not promised: each row's seq names it. Each
        # row: (id, run_at, priority, ref, args, seq, fmt, queue).
        self._schedule_head = (
            f"INSERT INTO {self.t} AS t (task_id, version, state, run_at, priority, ref, args,"
            " attempts, seq, fmt, queue) VALUES ")
        self._schedule_tail = f"{self._upsert} RETURNING seq, version"
        self._schedule_rows: dict[int, str] = {}
        # An outcome where its claim still holds the row; a hand-back unrun (pending, no
        # retry_at) keeps the error of an earlier try and gives its attempt back.
        # (state, unrun, error, retry_at, now, id, token, version)
        self.record = (
            f"UPDATE {self.t} SET state = ?1, error = CASE WHEN ?2 THEN error ELSE ?3 END,"
            " attempts = attempts - CASE WHEN ?2 THEN 1 ELSE 0 END,"
            " run_at = coalesce(?4, run_at), updated_at = ?5, lease_owner = NULL,"
            " lease_token = NULL, lease_expires = NULL WHERE task_id = ?6"
            " AND lease_token = ?7 AND version = ?8 AND state = 'running'")
        # (id, token)
        self.release_token = (f"UPDATE {self.t} SET lease_owner = NULL, lease_token = NULL,"
                              " lease_expires = NULL WHERE task_id = ?1 AND lease_token = ?2")
        # A claimed row whose id is no text: ended in error by its rowid (no id names it).
        self.refuse_unkeyed = sql(
            f"UPDATE {self.t} SET state = 'error', error = :error, updated_at = NOW,"
            " lease_owner = NULL, lease_token = NULL, lease_expires = NULL"
            " WHERE rowid = :rowid")

    # Rows per schedule statement: 8 parameters each, well under SQLite's limit (32766).
    SCHEDULE_ROWS = 256

    def schedule(self, rows: int) -> str:
        """The statement that schedules ``rows`` rows (1 to SCHEDULE_ROWS) of 8 parameters
        each, by position; it returns (seq, version) per row."""
        statement = self._schedule_rows.get(rows)
        if statement is None:
            values = ", ".join(["(?, 1, 'pending', ?, ?, ?, ?, 0, ?, ?, ?)"] * rows)
            statement = self._schedule_rows[rows] = (
                self._schedule_head + values + self._schedule_tail)
        return statement

    def in_list(self, column: str, param: str) -> str:
        return f"{column} IN (SELECT value FROM json_each({param}))"

    def list_param(self, values: Sequence[str]) -> Any:
        return json.dumps(list(values), ensure_ascii=False)

    def starts_with(self, column: str, param: str) -> str:
        return f"substr({column}, 1, length({param})) = {param}"

    def starts_with_any(self, column: str, param: str) -> str:
        return (f"EXISTS (SELECT 1 FROM json_each({param})"
                f" WHERE {self.starts_with(column, 'value')})")

    def not_a_time(self, column: str) -> str:
        # SQLite keeps whatever a writer put in a column: a text or blob lease.
        return f"typeof({column}) NOT IN ('real', 'integer')"

    def next_seq(self) -> str:
        return f"(SELECT CAST(value AS INTEGER) + 1 FROM {self.meta} WHERE key = 'seq')"

    def next_attempt(self) -> str:
        # A hostile count that is no integer is counted afresh (text + 1 is 1), one at
        # the 64-bit limit turns into a float: either way the claim's check sees it.
        return "(t.attempts + 1)"

    def raw_key(self) -> str:
        return "rowid, CAST(task_id AS BLOB)"


class PostgresTaskSQL(TaskSQL):
    """PostgreSQL's statements. Its clock is the server's, list parameters are text
    arrays, a claim skips rows another claim has locked, and a sequence gives the
    scheduling order."""

    now = "extract(epoch from clock_timestamp())"
    pyformat = True
    STAGE_TYPES = ("int4", "int4", "text", "float8", "int8", "text", "text", "text")
    lock_due = " FOR UPDATE SKIP LOCKED"
    add_if_missing = " IF NOT EXISTS"

    def __init__(self, table: str) -> None:
        self.seq = quote(f"{table}_seq")
        super().__init__(table)
        t = self.t
        sql = self._sql
        # Creating the same table from several processes at once races in the catalog
        # even with IF NOT EXISTS: creation is serialised on a lock keyed by the name.
        self.lock_schema = sql("SELECT pg_advisory_xact_lock(hashtext(:table))")
        self.create_seq = f"CREATE SEQUENCE IF NOT EXISTS {self.seq}"
        self.create_rest.append(self.create_seq)
        self.now_query = sql("SELECT NOW")
        self.listen = f"LISTEN {t}"
        self.notify = sql("SELECT pg_notify(:channel, :payload)")
        # unnest() sends a batch in one statement; ON CONFLICT may touch a row once per
        # statement, so the store splits a batch that names an id twice.
        self.schedule = sql(
            f"INSERT INTO {t} AS t (task_id, version, state, run_at, priority, ref, args,"
            f" attempts, seq, fmt, queue) SELECT i, 1, 'pending', r, p, f, a, 0, {self.next_seq()},"
            " :fmt, q FROM unnest(CAST(:ids AS text[]), CAST(:run_ats AS float8[]),"
            " CAST(:priorities AS bigint[]), CAST(:refs AS text[]), CAST(:args AS text[]),"
            " CAST(:queues AS text[])) WITH ORDINALITY AS u(i, r, p, f, a, q, n) ORDER BY n"
            f"{self._upsert} RETURNING task_id, version")
        # The same with its notification, as one statement: a group of schedules commits in
        # one round trip, without BEGIN and COMMIT (autocommit makes it its own transaction).
        self.schedule_notify = self._with_notify(self.schedule)
        # One task, its parameters scalars: arrays cost the client more to send.
        self.schedule_one_notify = self._with_notify(sql(
            f"INSERT INTO {t} AS t (task_id, version, state, run_at, priority, ref, args,"
            f" attempts, seq, fmt, queue) VALUES (:id, 1, 'pending', :run_at, :priority, :ref,"
            f" :args, 0, {self.next_seq()}, :fmt, :queue){self._upsert}"
            " RETURNING task_id, version"))
        # The bulk path: rows COPYed (binary) into a table of the transaction, each with
        # its run of distinct ids and its place in the run, then inserted a run at a time.
        stage = "pg_temp." + quote(f"{table}_stage")
        self.create_stage = (f"CREATE TEMPORARY TABLE {stage} (g integer, n integer, i text,"
                             " r float8, p bigint, f text, a text, q text) ON COMMIT DROP")
        self.copy_stage = f"COPY {stage} FROM STDIN (FORMAT BINARY)"
        self.schedule_staged = sql(
            f"INSERT INTO {t} AS t (task_id, version, state, run_at, priority, ref, args,"
            f" attempts, seq, fmt, queue) SELECT i, 1, 'pending', r, p, f, a, 0, {self.next_seq()},"
            f" :fmt, q FROM {stage} WHERE g = :run ORDER BY n{self._upsert}"
            " RETURNING task_id, version")
        # The outcomes whose claims still hold their rows, in one statement; a hand-back
        # unrun (pending, no retry_at) keeps the error of an earlier try and gives its
        # attempt back. Then the leases the other tokens still hold are released.
        # The running test is written "IS TRUE" so the planner neither scans an index by
        # state nor takes "running" to be as rare as its statistics may say (taken when
        # few rows ran): from such an estimate it drove the join by the running rows and
        # read the whole unnest again for each, a join quadratic in the batch (thousands
        # of outcomes took minutes). The join goes by primary key, linear in the batch.
        self.record = sql(
            f"UPDATE {t} AS t SET state = u.s, error = CASE WHEN u.s = 'pending' AND"
            " u.r IS NULL THEN t.error ELSE u.e END, run_at = coalesce(u.r, t.run_at),"
            " attempts = t.attempts - CASE WHEN u.s = 'pending' AND u.r IS NULL THEN 1"
            " ELSE 0 END, updated_at = NOW, lease_owner = NULL, lease_token = NULL,"
            " lease_expires = NULL FROM unnest(CAST(:ids AS text[]), CAST(:tokens AS text[]),"
            " CAST(:versions AS bigint[]), CAST(:states AS text[]), CAST(:errors AS text[]),"
            " CAST(:retry_ats AS float8[])) AS u(i, k, v, s, e, r)"
            " WHERE t.task_id = u.i AND t.lease_token = u.k AND t.version = u.v"
            " AND (t.state = 'running') IS TRUE RETURNING u.k, u.i, u.s")
        self.release_tokens = sql(
            f"UPDATE {t} AS t SET lease_owner = NULL, lease_token = NULL, lease_expires = NULL"
            " FROM unnest(CAST(:ids AS text[]), CAST(:tokens AS text[])) AS u(i, k)"
            " WHERE t.task_id = u.i AND t.lease_token = u.k RETURNING t.task_id")
        # Every statement that writes several rows (finish, heartbeat, the releases) first
        # locks them in task_id order, so two of them never wait for each other in a cycle
        # (PostgreSQL would break it as a deadlock, failing one).
        self.lock_rows = {"outcomes": self._lock(self.in_list("task_id", ":ids")),
                          "heartbeat_all": self._lock(self._HEARTBEAT_ALL),
                          "heartbeat_tokens": self._lock(self._heartbeat_tokens_where()),
                          **{f"release.{name}": self._lock(where)
                             for name, where in self._release_where().items()}}

    def _with_notify(self, insert: str) -> str:
        """``insert`` (RETURNING task_id, version) and its notification, one statement."""
        return self._sql(f"WITH ins AS ({insert}), note AS (SELECT pg_notify(:channel,"
                         " :payload)) SELECT task_id, version FROM ins, note")

    def _lock(self, where: str) -> str:
        return self._sql(f"SELECT 1 FROM {self.t} WHERE {where} ORDER BY task_id FOR UPDATE")

    def in_list(self, column: str, param: str) -> str:
        return f"{column} = ANY(CAST({param} AS text[]))"

    def list_param(self, values: Sequence[str]) -> Any:
        return list(values)

    def no_list(self, param: str) -> str:
        return f"CAST({param} AS text[]) IS NULL"

    def starts_with(self, column: str, param: str) -> str:
        return f"starts_with({column}, CAST({param} AS text))"

    def starts_with_any(self, column: str, param: str) -> str:
        return (f"EXISTS (SELECT 1 FROM unnest(CAST({param} AS text[])) AS p(x)"
                f" WHERE starts_with({column}, p.x))")

    def next_seq(self) -> str:
        return f"nextval('{self.seq}')"

    def next_attempt(self) -> str:
        # A count at the integer column's limit (a hostile write) must not fail the whole
        # batch by overflowing: it is claimed at the limit, then refused.
        return f"(least(t.attempts, {ATTEMPTS_LIMIT - 1}) + 1)"
