"""Helpers shared by the SQL stores: checked and quoted table names, rows as records, and
per-thread connections.

Each thread gets its own connection, opened on first use, so a claim on
the dispatcher's connection never waits behind a finish on a worker's; the
store keeps a list of them to close them all in ``close()``.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .records import Row

C = TypeVar("C")

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")

__all__ = ["ThreadConnections", "check_table", "quote", "rows_of"]


def check_table(name: Any) -> str:
    """``name`` if it is a safe, lower-case SQL identifier (it is spliced into SQL text)."""
    if not isinstance(name, str) or _IDENTIFIER.match(name) is None:
        raise ValueError(f"table must match {_IDENTIFIER.pattern}, got {name!r}")
    return name


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier: a table may be named ``order`` or ``select``."""
    return '"' + name.replace('"', '""') + '"'


def rows_of(found: list[Any]) -> list[Row]:
    """Rows from ``(task_id, version, state, run_at, priority, blocked, ref, queue)``
    tuples; ``blocked`` as a bool (SQLite gives 0 or 1)."""
    return [Row(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6], r[7]) for r in found]


class ThreadConnections(Generic[C]):
    """One connection per thread from ``connect``; ``close_all`` closes every one.

    A connection that ``alive`` says is dead (the server restarted, or ended the
    session) is closed and replaced by a new one on the thread's next ``get``.
    """

    def __init__(self, connect: Callable[[], C], close: Callable[[C], None],
                 alive: Callable[[C], bool] = lambda conn: True) -> None:
        self._connect = connect
        self._close = close
        self._alive = alive
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[C] = []
        self._closed = False

    def get(self) -> C:
        conn: C | None = getattr(self._local, "conn", None)
        if conn is not None and not self._alive(conn):
            self._local.conn = None
            with self._lock:
                if conn in self._all:
                    self._all.remove(conn)
            with contextlib.suppress(Exception):
                self._close(conn)
            conn = None
        if conn is None:
            with self._lock:
                if self._closed:
                    raise RuntimeError("the store is closed")
            conn = self._connect()
            with self._lock:
                closed = self._closed  # closed while this one connected: nobody else will
                if not closed:
                    self._all.append(conn)
            if closed:
                with contextlib.suppress(Exception):
                    self._close(conn)
                raise RuntimeError("the store is closed")
            self._local.conn = conn
        return conn

    @property
    def closed(self) -> bool:
        """Whether ``close_all`` was called."""
        return self._closed

    def close_all(self) -> None:
        with self._lock:
            self._closed = True
            conns, self._all = self._all, []
        for conn in conns:
            # Closing a broken connection must not stop the rest.
            with contextlib.suppress(Exception):
                self._close(conn)
