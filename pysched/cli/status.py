"""``pysched status``: rows by state (and queue), and the oldest pending and running rows.

Read-only: it opens its own connection (a SQLite file in read-only mode, a
PostgreSQL connection that only SELECTs), so pointing it at a wrong path or
table creates nothing; it reads the columns docs/durable.md documents. A
``queue`` column, where the table has one, adds counts by queue. Times are
shown against the store's clock (the server's on PostgreSQL, the one leases
use) and, for ``run_at``, the scheduling node's wall clock.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sqlite3
import time
from collections.abc import Collection, Sequence
from typing import Any, Protocol
from urllib.parse import quote

from ..durable import parse_store_target
from ..durable._sql import quote as quote_identifier
from ._common import (
    ExitCode,
    UsageError,
    add_store_arguments,
    count,
    fail,
    first_line,
    public_target,
)

__all__ = ["add_parser", "read_status", "run"]

_PENDING_COLUMNS = ("task_id", "version", "run_at", "priority", "ref", "attempts")
_RUNNING_COLUMNS = ("task_id", "version", "run_at", "ref", "attempts", "lease_owner",
                    "lease_expires")


def add_parser(commands: Any) -> None:
    """Add the ``status`` command to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "status", help="print rows by state and the oldest pending and running rows",
        description="Print how many rows of a durable schedule are in each state (and queue),"
                    " and its oldest pending and running rows. Reads only.")
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
    except LookupError as exc:
        return fail("status", f"{where}: {exc.args[0]}")
    except Exception as exc:  # noqa: BLE001 - reported as one line, exit 1
        return fail("status", f"cannot read the store {where}: {first_line(exc)}")
    status = {"store": where, "table": table, **status}
    print(json.dumps(status, indent=2) if args.json else render(status))
    return ExitCode.OK


def read_status(target: str, table: str, limit: int) -> dict[str, Any]:
    """Counts by state (and queue) and the ``limit`` oldest pending and running rows.

    LookupError when there is no such SQLite file or table. Three SELECTs
    (four with queues): the counts scan the table, the oldest rows use the
    claim's index for pending ones.
    """
    reader = _connect(target)
    try:
        columns = reader.columns(table)
        if not columns:
            raise LookupError(f"no table {table}")
        now = reader.now()
        quoted = quote_identifier(table)  # a table may be named "order"
        counts = {state: int(n) for state, n in
                  reader.query(f"SELECT state, count(*) FROM {quoted} GROUP BY state")}
        result: dict[str, Any] = {"now": now, "counts": dict(sorted(counts.items()))}
        if "queue" in columns:
            queues: dict[str, dict[str, int]] = {}
            for name, state, n in reader.query(f"SELECT queue, state, count(*) FROM {quoted}"
                                        " GROUP BY queue, state"):
                queues.setdefault(str(name), {})[state] = int(n)
            result["queues"] = dict(sorted(queues.items()))
        result["oldest_pending"] = _oldest(reader, quoted, "pending", _PENDING_COLUMNS,
                                           "run_at, priority DESC, seq", limit)
        result["oldest_running"] = _oldest(reader, quoted, "running", _RUNNING_COLUMNS,
                                           "run_at, seq", limit)
        return result
    finally:
        reader.close()


def render(status: dict[str, Any]) -> str:
    """``status`` as text for a terminal."""
    now = status["now"]
    lines = [f"Schedule {status['store']}, table {status['table']}"]
    counts = status["counts"]
    if not counts:
        lines.append("  no rows")
    else:
        rows = [[state, f"{n:,}"] for state, n in counts.items()]
        rows.append(["total", f"{sum(counts.values()):,}"])
        lines += _table(["STATE", "ROWS"], rows, right={1})
    if "queues" in status:
        rows = [[q, state, f"{n:,}"] for q, by in status["queues"].items()
                for state, n in by.items()]
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
            raise LookupError("no such SQLite file")
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


def _connect(target: str) -> _Reader:
    """A reader of the database ``target`` names, read as ``open_store`` reads it."""
    try:
        kind, location = parse_store_target(target)
    except ValueError as exc:
        raise UsageError(f"argument --store: {exc}") from exc
    return _PostgresReader(location) if kind == "postgres" else _SQLiteReader(location)


def _oldest(reader: _Reader, table: str, state: str, columns: Sequence[str], order: str,
            limit: int) -> list[dict[str, Any]]:
    rows = reader.query(f"SELECT {', '.join(columns)} FROM {table} WHERE state = '{state}'"
                        f" ORDER BY {order} LIMIT {int(limit)}")
    return [dict(zip(columns, row, strict=True)) for row in rows]


# -- text -----------------------------------------------------------------------------------

def _table(headers: Sequence[str], rows: Sequence[Sequence[str]],
           right: Collection[int] = ()) -> list[str]:
    """Aligned columns, two spaces in; the columns in ``right`` aligned right."""
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    out = []
    for row in [headers, *rows]:
        cells = [str(x).rjust(w) if i in right else str(x).ljust(w)
                 for i, (x, w) in enumerate(zip(row, widths, strict=True))]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def _when(wall: float, now: float) -> str:
    at = datetime.datetime.fromtimestamp(wall, datetime.timezone.utc)
    delta = wall - now
    relative = f"in {_span(delta)}" if delta > 0 else f"{_span(-delta)} ago"
    return f"{at:%Y-%m-%d %H:%M:%S} UTC ({relative})"


def _lease(expires: float | None, now: float) -> str:
    if expires is None:
        return "none"
    left = expires - now
    return f"expires in {_span(left)}" if left >= 0 else f"expired {_span(-left)} ago"


def _span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
