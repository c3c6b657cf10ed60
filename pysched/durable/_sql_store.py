"""SQLStore: what the SQLite and PostgreSQL stores do alike, over their dialect object.

Each ``Store`` method that runs the same statements in the same way on both
databases is written here once, naming its statements on ``self.sql`` (a
``_task_sql.TaskSQL``). A subclass gives the rest, which truly differs:

- ``_read(statement, params)``: one statement on this thread's connection, its
  rows;
- ``_write(work)``: ``work(db)`` in one write transaction, its result;
- ``_announce(db, task_ids)``: inside a write, tell other processes that these
  rows changed (PostgreSQL notifies; SQLite bumps a counter they poll);
- ``_with_clock(params)``: the parameters, with the store's clock added where
  it is a parameter (SQLite's ``:now``);
- ``_schedule_rows(db, tasks)``: inside a write, store ``tasks`` (in order, a
  later item replacing an earlier one of its id), their versions;
- ``_schedule_group(tasks)``: a group of schedules only, with its announcement,
  in one transaction, the fastest way the database has (PostgreSQL: one
  statement; SQLite: one update of its counters and the insert);
- ``_schedule_bulk(tasks)``: a batch of more than ``BULK_ROWS`` tasks in one
  transaction of its own, the fastest way the database has (COPY, multi-row
  statements);
- ``_group_error(exc)``: whether a group's error may be an item's own (see below);
- ``claim``, ``finish``, ``now`` and the notification methods.

Group commit: ``schedule`` (of up to ``BULK_ROWS`` tasks), ``cancel`` and
``retry`` calls that arrive together from many threads share one transaction
(``GroupCommit``), run in the order they arrived: a run of schedules as one
statement, then one announcement for the whole group. Each call returns once
that transaction committed, with its own result. A bad item does not fail the
others: when the group's transaction fails with an error that may be one
item's (a value the database refuses, not a lost connection), it was rolled
back whole, and each write of the group is committed again on its own, so
that only the bad one raises. That costs one transaction per write, but only
when a group fails; a savepoint per item would cost every group a round trip
per item on PostgreSQL. An error of the connection or the database (lost,
locked) fails the whole group: its commit may or may not have happened, so
no write may be made again.

A write of several rows first runs the dialect's lock statement for it, if it
has one (``lock_rows``: PostgreSQL locks them in one order, so two such writes
never deadlock).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple, TypeVar

from ._group_commit import GroupCommit, Write
from ._sql import rows_of
from ._task_sql import COLUMNS, TaskSQL
from .records import NewTask, Row
from .series_table import SQLSeriesTable
from .store import Store, check_key, check_tasks

__all__ = ["BULK_ROWS", "SQLStore"]

W = TypeVar("W")

# A schedule of more rows commits on its own, by the bulk path: a group stays short, so
# the calls queued behind it wait for no big insert.
BULK_ROWS = 1000


class _Op(NamedTuple):
    """One call's write in a group: ``schedule`` (``tasks``), ``cancel`` (``task_id``,
    ``version``) or ``retry`` (``task_id``)."""

    kind: str
    tasks: Sequence[NewTask] = ()
    task_id: str = ""
    version: int | None = None


class SQLStore(Store):
    """A Store in a SQL table whose statements ``sql`` names (see the module)."""

    sql: TaskSQL
    _series: SQLSeriesTable
    _group: GroupCommit[_Op, Any]

    def _start_group_commit(self) -> None:
        """The subclass's __init__ calls this before any write."""
        self._group = GroupCommit(self._commit_group)

    # -- what a subclass gives ---------------------------------------------------------------

    @abstractmethod
    def _read(self, statement: str, params: dict[str, Any]) -> list[Any]:
        """The rows of one statement, run on its own."""

    @abstractmethod
    def _write(self, work: Callable[[Any], W]) -> W:
        """``work(db)`` in one write transaction."""

    @abstractmethod
    def _announce(self, db: Any, task_ids: Sequence[str]) -> None:
        """Inside a write: other processes must look at these rows again."""

    def _with_clock(self, params: dict[str, Any]) -> dict[str, Any]:
        return params

    @abstractmethod
    def _schedule_rows(self, db: Any, tasks: Sequence[NewTask]) -> list[int]:
        """Inside a write: store ``tasks`` in order; their versions."""

    def _schedule_group(self, tasks: Sequence[NewTask]) -> list[int]:
        """A group of schedules only (their tasks in order): stored with their announcement
        in one transaction, the fastest way this database has; their versions."""
        def write(db: Any) -> list[int]:
            versions = self._schedule_rows(db, tasks)
            self._announce(db, [task.task_id for task in tasks])
            return versions

        return self._write(write)

    def _schedule_bulk(self, tasks: Sequence[NewTask]) -> list[int]:
        """More than BULK_ROWS tasks in a transaction of their own; their versions."""
        return self._schedule_group(tasks)

    @abstractmethod
    def _group_error(self, exc: Exception) -> bool:
        """Whether ``exc``, failing a group's transaction, may be one item's fault and
        leaves the connection usable with nothing committed (see the module)."""

    # -- group commit ------------------------------------------------------------------------

    def _commit_group(self, group: Sequence[Write[_Op, Any]]) -> None:
        ops = [write.op for write in group]
        try:
            if all(op.kind == "schedule" for op in ops):  # the common case: its own path
                results = self._commit_schedules(ops)
            else:
                results = self._write(lambda db: self._apply(db, ops))
        except Exception as exc:
            if len(group) == 1 or not self._group_error(exc):
                for write in group:
                    write.fail(exc)
                return
            for write in group:  # each on its own: only a bad one fails
                try:
                    write.succeed(self._write(partial(self._apply, ops=[write.op]))[0])
                except Exception as own:
                    write.fail(own)
            return
        for write, result in zip(group, results, strict=True):
            write.succeed(result)

    def _commit_schedules(self, ops: Sequence[_Op]) -> list[Any]:
        """A group of schedules only, in one transaction (``_schedule_group``); the
        versions of each."""
        if len(ops) == 1:
            return [self._schedule_group(ops[0].tasks)]
        return _split(self._schedule_group([task for op in ops for task in op.tasks]), ops)

    def _apply(self, db: Any, ops: Sequence[_Op]) -> list[Any]:
        """Inside one write: each op in order, its result; then one announcement."""
        results: list[Any] = []
        changed: list[str] = []
        i = 0
        while i < len(ops):
            if ops[i].kind == "schedule":  # a run of schedules: one statement
                end = i
                while end < len(ops) and ops[end].kind == "schedule":
                    end += 1
                tasks = [task for op in ops[i:end] for task in op.tasks]
                results += _split(self._schedule_rows(db, tasks), ops[i:end])
                changed += [task.task_id for task in tasks]
                i = end
                continue
            op = ops[i]
            if op.kind == "cancel":
                params = {"id": op.task_id, "version": op.version}
                statement = self.sql.cancel
            else:
                params, statement = {"id": op.task_id}, self.sql.retry
            row = db.execute(statement, self._with_clock(params)).fetchone()
            if row is not None:
                if op.kind == "retry":
                    self._took_seq(db)
                changed.append(op.task_id)
            results.append(None if row is None else int(row[0]))
            i += 1
        if changed:
            self._announce(db, changed)
        return results

    # -- the methods both databases run alike ----------------------------------------------

    def _create(self, db: Any, lacks: Callable[[str], bool]) -> None:
        """In the store's first transaction: the table, the columns it ``lacks`` (added
        since the first release), the rest of the schema and the series tables, each
        made only where missing."""
        db.execute(self.sql.create_table)
        for column, statement in self.sql.add_columns.items():
            if lacks(column):
                db.execute(statement)
        for statement in (*self.sql.create_rest, *self._series.create_statements()):
            db.execute(statement)

    def series_table(self) -> SQLSeriesTable:
        return self._series

    def schedule(self, tasks: Sequence[NewTask]) -> list[int]:
        check_tasks(tasks)
        if not tasks:
            return []
        if len(tasks) > BULK_ROWS:
            return self._schedule_bulk(tasks)
        versions: list[int] = self._group.submit(_Op("schedule", tasks=list(tasks)))
        return versions

    def cancel(self, task_id: str, version: int | None = None) -> int | None:
        check_key(task_id, "task_id")
        result: int | None = self._group.submit(_Op("cancel", task_id=task_id, version=version))
        return result

    def rows(self, task_ids: Sequence[str] | None = None) -> list[Row]:
        if task_ids is None:
            return rows_of(self._read(self.sql.rows_pending, self._with_clock({})))
        ids = self.sql.list_param(list(dict.fromkeys(task_ids)))
        return rows_of(self._read(self.sql.rows_of, self._with_clock({"ids": ids})))

    def finished_since(self, since: float) -> list[Row]:
        return rows_of(self._read(self.sql.rows_finished_since,
                                  self._with_clock({"since": since})))

    def retry(self, task_id: str) -> int | None:
        check_key(task_id, "task_id")
        result: int | None = self._group.submit(_Op("retry", task_id=task_id))
        return result

    def _took_seq(self, db: Any) -> None:
        """A write used ``next_seq()`` once (SQLite counts it in its meta row)."""

    def prune(self, before: float, limit: int) -> int:
        params = {"before": before, "limit": limit}
        return int(self._write(lambda db: db.execute(self.sql.prune, params).rowcount))

    def pending_stats(self, before: float) -> tuple[int, float | None]:
        [(count, oldest)] = self._read(self.sql.pending_stats, {"before": before})
        return int(count), oldest

    def heartbeat(self, owner: str, lease: float, tokens: Sequence[str] | None = None
                  ) -> list[str]:
        if tokens is None:
            name, params = "heartbeat_all", {"owner": owner, "lease": lease}
        else:
            name = "heartbeat_tokens"
            params = {"owner": owner, "lease": lease,
                      "tokens": self.sql.list_param(list(dict.fromkeys(tokens)))}
        statement = getattr(self.sql, name)
        params = self._with_clock(params)

        def write(db: Any) -> list[str]:
            self._lock_rows(db, name, params)
            return [r[0] for r in db.execute(statement, params).fetchall()]

        return self._write(write)

    def release_batch(self, owner: str, batch: str) -> list[str]:
        return self._release("batch", owner=owner, prefix=batch + ":")

    def requeue_expired(self) -> list[str]:
        return self._release("expired")

    def repair_leases(self, horizon: float) -> list[str]:
        return self._release("unusable", horizon=horizon)

    def release_owner(self, owner: str, expiring_within: float | None = None) -> list[str]:
        if expiring_within is None:
            return self._release("owner", owner=owner)
        return self._release("owner_expiring", owner=owner, within=expiring_within)

    def _release(self, name: str, **params: Any) -> list[str]:
        """Run the release statement ``name`` (``TaskSQL._release_where``); the ids."""
        params = self._with_clock(params)

        def write(db: Any) -> list[str]:
            self._lock_rows(db, f"release.{name}", params)
            ids = [r[0] for r in db.execute(self.sql.release[name], params).fetchall()]
            if ids:
                self._announce(db, ids)
            return ids

        return self._write(write)

    def _lock_rows(self, db: Any, name: str, params: dict[str, Any]) -> None:
        statement = self.sql.lock_rows.get(name)
        if statement is not None:
            db.execute(statement, params)

    def unknown_states(self, limit: int = 10) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self._read(self.sql.unknown_states, {"limit": limit})]

    def held_by(self, owner: str) -> list[str]:
        return [r[0] for r in self._read(self.sql.held_by, {"owner": owner})]

    def mark_error(self, task_id: str, version: int, message: str) -> bool:
        params = self._with_clock({"id": task_id, "version": version, "message": message})
        return bool(self._write(lambda db: db.execute(self.sql.mark_error, params).rowcount == 1))

    def get(self, task_id: str) -> dict[str, Any] | None:
        found = self._read(self.sql.get, {"id": check_key(task_id, "task_id")})
        return dict(zip(COLUMNS, found[0], strict=True)) if found else None

    def counts(self) -> dict[str, int]:
        return {state: int(n) for state, n in self._read(self.sql.counts, {})}

    def wall_high_water(self, wall: float | None = None) -> float | None:
        def write(db: Any) -> Any:
            if wall is not None:
                db.execute(self.sql.raise_wall_mark, {"wall": wall})
            return db.execute(self.sql.read_wall_mark, {}).fetchone()

        row = self._write(write)
        return None if row is None else float(row[0])


def _split(versions: list[int], ops: Sequence[_Op]) -> list[list[int]]:
    """The versions of a run of schedules' tasks, split into each schedule's."""
    results = []
    start = 0
    for op in ops:
        results.append(versions[start:start + len(op.tasks)])
        start += len(op.tasks)
    return results
