"""Connections for the read layer: ``connect(target)`` opens a store's database to read it.

Read-only by default (a SQLite file opened with ``mode=ro``, a PostgreSQL
session with ``default_transaction_read_only``), so pointing a command at a
wrong path or table creates nothing; ``writable=True`` is for the few writes
the steering module makes itself. One connection per thread, opened on first
use, as the stores do: a web server's worker threads each read on their own.
The one exception is ``build``: the listing's indexes on a table the reader
has checked, on a connection of its own that may write (``Listing``).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import quote

from ._sql import ThreadConnections
from .listing_sql import POSTGRES, SQLITE, Dialect
from .stores import POSTGRES as POSTGRES_KIND
from .stores import parse_store_target

__all__ = ["Database", "connect", "target_of"]

# A page that takes longer than this is cut off by PostgreSQL rather than holding a
# connection (milliseconds); the listing's statements take a few.
READ_TIMEOUT_MS = 15_000


class Database(Protocol):
    """One store's database, as the read layer uses it. Safe to use from any thread."""

    dialect: Dialect

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """The rows of one statement."""

    def execute(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Run ``statements`` in one transaction (a writable database only)."""

    def build(self, statements: Sequence[str]) -> str | None:
        """Run ``statements`` (indexes to add) one by one, each its own transaction, on a
        connection of their own that may write, even where this database reads only;
        None once all ran, else why not (the database's words: a file or a role that
        may not write, say). A statement that failed leaves the ones before it done."""

    def now(self) -> float:
        """The store's clock (what its leases are measured on), in seconds since the epoch."""

    def close(self) -> None:
        """Close every connection. Idempotent."""


def connect(target: str, *, writable: bool = False) -> Database:
    """The database a store target names (as ``open_store`` reads it).

    ValueError for a target that is no store; LookupError for a SQLite file
    that does not exist; the driver's error if the database cannot be reached
    (raised on first use for PostgreSQL, as for a SQLite file that is no
    database).
    """
    kind, location = parse_store_target(target)
    if kind == POSTGRES_KIND:
        return _PostgresDatabase(location, writable)
    return _SQLiteDatabase(location, writable)


def target_of(store: object) -> str | None:
    """The target ``connect`` opens for a SQL store (its URL or path); None for a store
    without tables (a ``MemoryStore``)."""
    target = getattr(store, "url", None) or getattr(store, "path", None)
    return target if isinstance(target, str) else None


class _SQLiteDatabase:
    dialect = SQLITE

    def __init__(self, path: str, writable: bool) -> None:
        if not os.path.exists(path):
            raise LookupError(f"no such SQLite file: {path}")
        self._file = f"file:{quote(os.path.abspath(path))}"
        self._uri = f"{self._file}?mode={'rw' if writable else 'ro'}"
        self._conns: ThreadConnections[sqlite3.Connection] = ThreadConnections(
            self._connect, sqlite3.Connection.close)

    def _connect(self) -> sqlite3.Connection:
        from .sqlite import decode_text  # the store's own reading of text that is not UTF-8

        db = sqlite3.connect(self._uri, uri=True, timeout=10, isolation_level=None,
                             check_same_thread=False)
        db.text_factory = decode_text
        return db

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return self._conns.get().execute(sql, params or {}).fetchall()

    def execute(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        db = self._conns.get()
        db.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                db.execute(sql, params)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def build(self, statements: Sequence[str]) -> str | None:
        try:
            db = sqlite3.connect(f"{self._file}?mode=rw", uri=True, timeout=10,
                                 isolation_level=None)
            try:
                for sql in statements:
                    db.execute(sql)
            finally:
                db.close()
        except sqlite3.Error as exc:
            return str(exc)
        return None

    def now(self) -> float:
        return time.time()  # the clock SQLiteStore's leases use

    def close(self) -> None:
        self._conns.close_all()


class _PostgresDatabase:
    dialect = POSTGRES

    def __init__(self, url: str, writable: bool) -> None:
        import psycopg  # an optional dependency, as for PostgresStore

        self._psycopg = psycopg
        self._url = url
        self._writable = writable
        from .postgres import usable  # the store's check of an idle connection

        self._conns: ThreadConnections[Any] = ThreadConnections(
            self._connect, lambda db: db.close(), usable)

    def _connect(self) -> Any:
        options = f"-c statement_timeout={READ_TIMEOUT_MS}"
        if not self._writable:
            options += " -c default_transaction_read_only=on"
        # The keyword replaces the URL's own options (a search_path, say): keep them, first.
        given = self._psycopg.conninfo.conninfo_to_dict(self._url).get("options")
        if given:
            options = f"{given} {options}"
        return self._psycopg.connect(self._url, autocommit=True, connect_timeout=10,
                                     options=options)

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        cursor = self._conns.get().execute(sql, params or {})
        return cursor.fetchall() if cursor.description else []

    def execute(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        db = self._conns.get()
        with db.transaction():
            for sql, params in statements:
                db.execute(sql, params)

    def build(self, statements: Sequence[str]) -> str | None:
        # Autocommit, no statement timeout: CREATE INDEX CONCURRENTLY runs outside any
        # transaction, and on a large table it takes longer than a page may.
        try:
            with self._psycopg.connect(self._url, autocommit=True, connect_timeout=10) as db:
                for sql in statements:
                    db.execute(sql)
        except self._psycopg.Error as exc:
            return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None

    def now(self) -> float:
        return float(self.query("SELECT extract(epoch from clock_timestamp())")[0][0])

    def close(self) -> None:
        self._conns.close_all()
