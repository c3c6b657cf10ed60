"""``pysched status``: rows by state (and queue), and the oldest pending and running rows.

Read-only: it opens its own connection (a SQLite file in read-only mode, a
PostgreSQL connection that only SELECTs), so pointing it at a wrong path or
table creates nothing; it reads the columns docs/durable.md documents. Times are
shown against the store's clock (the server's on PostgreSQL, the one leases
use) and, for ``run_at``, the scheduling node's wall clock.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import quote

from ..durable import parse_store_target
from ..durable._sql import quote as quote_identifier
from ..durable.listing import Count, Listing, SeriesLine
from ..durable.moments import jsonable
from ..durable.moments import lease_text as _lease
from ..durable.moments import when as _when
from ..durable.reading import connect
from ..durable.roster import unserved
from ._common import (
    ExitCode,
    UsageError,
    add_store_arguments,
    count,
    fail,
    first_line,
    public_target,
)
from ._reads import printable
from ._reads import table as _table

__all__ = ["NoSchedule", "add_parser", "check_schedule", "read_status", "run"]

_PENDING_COLUMNS = ("task_id", "version", "run_at", "priority", "ref", "attempts")
_RUNNING_COLUMNS = ("task_id", "version", "run_at", "ref", "attempts", "lease_owner",
                    "lease_expires")


def add_parser(commands: Any) -> None:
    """Add the ``status`` command to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "status", help="print rows by state and the oldest pending and running rows",
        description="Print how many rows of a durable schedule are in each state (and queue),"
                    " and its oldest pending and running rows. Changes no task; the first"
                    " listing of a table builds its listing indexes.")
    add_store_arguments(parser)
    parser.add_argument("--limit", type=count, default=5, metavar="N",
                        help="oldest rows shown per state (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the status; return the exit status (see ``ExitCode``)."""
    table = args.table
    where = public_target(args.store)
    try:
        status = read_status(args.store, table, args.limit)
    except UsageError:
        raise
    except NoSchedule as exc:
        return fail("status", f"{where}: {exc}")
    except Exception as exc:  # noqa: BLE001 - reported as one line, exit 1
        return fail("status", f"cannot read the store {where}: {first_line(exc)}")
    status = {"store": where, "table": table, **status}
    print(json.dumps(jsonable(status), indent=2) if args.json else render(status))
    return ExitCode.OK


class NoSchedule(LookupError):
    """The store holds no schedule: there is no such SQLite file, or no such table.

    ``option`` is the argument that names what is missing: ``--store`` or ``--table``.
    """

    def __init__(self, message: str, option: str) -> None:
        super().__init__(message)
        self.option = option


def check_schedule(target: str, table: str) -> None:
    """Raise NoSchedule unless ``target`` has the table ``table``; reads only, creates nothing."""
    _open(target, table)[0].close()


def read_status(target: str, table: str, limit: int) -> dict[str, Any]:
    """Counts by state (and queue) and the ``limit`` oldest pending and running rows.

    NoSchedule when there is no such SQLite file or table. The counts are the
    dashboard's (``Listing.counts``): exact up to a cap per state and queue,
    beyond it the planner's estimate or "at least" (``approximate`` names
    those states); each reads a bounded range of an index, however many rows
    there are. The oldest rows use the claim's index for pending ones.
    """
    reader, columns = _open(target, table)
    try:
        now = reader.now()
        quoted = quote_identifier(table)  # a table may be named "order"
        result: dict[str, Any] = {"now": now, **_counts(target, table)}
        result["oldest_pending"] = _oldest(reader, quoted, "pending", _PENDING_COLUMNS,
                                           "run_at, priority DESC, seq", limit)
        result["oldest_running"] = _oldest(reader, quoted, "running", _RUNNING_COLUMNS,
                                           "run_at, seq", limit)
        result["series"] = _series(target, table, limit)
        result["unserved"] = _unserved(target, table, now)
        return result
    finally:
        reader.close()


def render(status: dict[str, Any]) -> str:
    """``status`` as text for a terminal."""
    now = status["now"]
    lines = [f"Schedule {status['store']}, table {status['table']}"]
    counts = status["counts"]
    marks = status["approximate"]
    if not counts:
        lines.append("  no rows")
    else:
        rows = [[state, str(Count(n, marks.get(state, "exact")))] for state, n in counts.items()]
        kinds = {marks.get(state, "exact") for state in counts}
        total = Count(sum(counts.values()), "about" if "about" in kinds else
                      "at least" if "at least" in kinds else "exact")
        rows.append(["total", str(total)])
        lines += _table(["STATE", "ROWS"], rows, right={1})
    if status["queues"]:
        rows = [[q, state, str(Count(n, status["approximate_queues"].get(q, {}).get(state,
                                                                                  "exact")))]
                for q, by in status["queues"].items() for state, n in by.items()]
        lines += ["", "By queue:", *_table(["QUEUE", "STATE", "ROWS"], rows, right={2})]
    pending = [[r["task_id"], str(r["version"]), _when(r["run_at"], now), str(r["priority"]),
                str(r["attempts"]), r["ref"]] for r in status["oldest_pending"]]
    if pending:
        lines += ["", "Oldest pending (next due first):",
                  *_table(["TASK ID", "VERSION", "DUE", "PRIORITY", "ATTEMPTS", "TASK"],
                          pending)]
    running = [[r["task_id"], str(r["version"]), _when(r["run_at"], now), str(r["attempts"]),
                r["ref"], str(r["lease_owner"]), _lease(r["lease_expires"], now)]
               for r in status["oldest_running"]]
    if running:
        lines += ["", "Oldest running (first due first):",
                  *_table(["TASK ID", "VERSION", "DUE", "ATTEMPTS", "TASK", "OWNER", "LEASE"],
                          running)]
    series = status.get("series")
    if series and series["counts"]:
        by_state = ", ".join(f"{printable(k)} {n:,}" for k, n in series["counts"].items())
        rows = [[printable(s["series_id"], 40), printable(s["state"]),
                 _when(s["next_fire"], now) if s["next_fire"] is not None else "-",
                 printable(s["last_outcome"] or "-"), printable(s["trigger"] or s["problem"], 50)]
                for s in series["first"]]
        lines += ["", f"Series ({by_state}), first by id:",
                  *_table(["SERIES", "STATE", "NEXT FIRE", "LAST OUTCOME", "TRIGGER"], rows)]
    unserved = status.get("unserved")
    if unserved:
        rows = [[printable(name, 40), printable(queue, 20)] for name, queue in unserved]
        lines += ["", "Due rows not served by any live worker (they wait until one serves"
                      " their task name on their queue):", *_table(["TASK", "QUEUE"], rows)]
    return "\n".join(lines)


# -- reading ------------------------------------------------------------------------------

class _Reader(Protocol):
    """A read-only connection to one store's database."""

    def query(self, sql: str) -> list[tuple[Any, ...]]: ...
    def now(self) -> float: ...
    def columns(self, table: str) -> set[str]: ...
    def close(self) -> None: ...


class _PostgresReader:
    def __init__(self, url: str) -> None:
        import psycopg  # an optional dependency, as for PostgresStore

        self._db = psycopg.connect(url, autocommit=True, connect_timeout=10)
        self._db.read_only = True

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return self._db.execute(sql).fetchall()

    def now(self) -> float:
        return float(self.query("SELECT extract(epoch from clock_timestamp())::float8")[0][0])

    def columns(self, table: str) -> set[str]:
        return {r[0] for r in self.query("SELECT column_name FROM information_schema.columns"
                                         " WHERE table_schema = current_schema()"
                                         f" AND table_name = '{table}'")}

    def close(self) -> None:
        self._db.close()


class _SQLiteReader:
    def __init__(self, path: str) -> None:
        if not os.path.exists(path):
            raise NoSchedule("no such SQLite file", "--store")
        self._db = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True,
                                   timeout=10)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return self._db.execute(sql).fetchall()

    def now(self) -> float:
        return time.time()  # the clock SQLiteStore's leases use

    def columns(self, table: str) -> set[str]:
        return {r[1] for r in self.query(f"PRAGMA table_info({quote_identifier(table)})")}

    def close(self) -> None:
        self._db.close()


def _open(target: str, table: str) -> tuple[_Reader, set[str]]:
    """A reader of ``target`` and the columns of ``table``; NoSchedule when either is missing."""
    reader = _connect(target)
    try:
        columns = reader.columns(table)
    except BaseException:
        reader.close()
        raise
    if not columns:
        reader.close()
        raise NoSchedule(f"no table {table}", "--table")
    return reader, columns


def _connect(target: str) -> _Reader:
    """A reader of the database ``target`` names, read as ``open_store`` reads it."""
    try:
        kind, location = parse_store_target(target)
    except ValueError as exc:
        raise UsageError(f"argument --store: {exc}") from exc
    return _PostgresReader(location) if kind == "postgres" else _SQLiteReader(location)


def _counts(target: str, table: str) -> dict[str, Any]:
    """``counts`` by state and ``queues`` (by queue and state) as numbers, and
    ``approximate`` and ``approximate_queues``: the kind of each that is not exact
    ("about", "at least")."""
    db = connect(target)
    try:
        counts, queues, _ = Listing(db, table).counts()
    finally:
        db.close()
    return {"counts": {s: c.value for s, c in sorted(counts.items())},
            "approximate": {s: c.kind for s, c in sorted(counts.items()) if c.kind != "exact"},
            "queues": {q: {s: c.value for s, c in by.items()} for q, by in sorted(queues.items())},
            "approximate_queues": {q: {s: c.kind for s, c in by.items() if c.kind != "exact"}
                                   for q, by in sorted(queues.items())
                                   if any(c.kind != "exact" for c in by.values())}}


def _series(target: str, table: str, limit: int) -> dict[str, Any]:
    """The series by state and the first ``limit`` of them by id: next fire time, last
    outcome. None of either where the store has no series tables (or an older table)."""
    db = connect(target)
    try:
        reads = Listing(db, table)
        try:
            counts = reads.series_counts()
            first = reads.series(limit=max(limit, 1), fires=1)[0] if limit else []
        except LookupError:
            return {"counts": {}, "first": []}
    finally:
        db.close()
    return {"counts": counts, "first": [_series_line(s) for s in first]}


def _unserved(target: str, table: str, now: float) -> list[list[Any]] | None:
    """The (task name, queue) pairs of due pending rows no live worker serves; None where no
    worker ever wrote the roster (``pysched.durable.roster``)."""
    db = connect(target)
    try:
        found = unserved(db, table, now)
    finally:
        db.close()
    return None if found is None else [list(pair) for pair in found]


def _series_line(s: SeriesLine) -> dict[str, Any]:
    return {"series_id": s.series_id, "state": s.state, "note": s.note,
            "next_fire": s.next_fires[0] if s.next_fires else None, "last_fire": s.last_fire,
            "last_outcome": s.last_state, "trigger": s.trigger, "problem": s.problem}


def _oldest(reader: _Reader, table: str, state: str, columns: Sequence[str], order: str,
            limit: int) -> list[dict[str, Any]]:
    rows = reader.query(f"SELECT {', '.join(columns)} FROM {table} WHERE state = '{state}'"
                        f" ORDER BY {order} LIMIT {int(limit)}")
    return [dict(zip(columns, row, strict=True)) for row in rows]
