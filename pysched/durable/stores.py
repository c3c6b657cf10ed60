"""open_store: choose a store from what the caller passed (None, a path, a URL or a Store).

``parse_store_target`` is the one reading of a store target string, shared by
``open_store`` and the ``pysched`` commands.
"""

from __future__ import annotations

import os
import re
from typing import Any, NamedTuple

from .memory import MemoryStore
from .store import Store

__all__ = ["StoreTarget", "open_store", "parse_store_target"]

# "scheme:" at the start of a string: a URL, or a "host:port" typed where a URL was
# meant. One letter is a Windows drive ("C:\\..."), which is a path.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
_POSTGRES = ("postgresql://", "postgres://")
_SQLITE = "sqlite:///"

POSTGRES, SQLITE = "postgres", "sqlite"


class StoreTarget(NamedTuple):
    """What a store target names: ``kind`` "postgres" with the URL as ``location``,
    or "sqlite" with the file's path."""

    kind: str
    location: str


def parse_store_target(target: str | os.PathLike[str]) -> StoreTarget:
    """Read a store target as ``open_store`` does, without opening anything.

    A ``postgresql://`` or ``postgres://`` URL names a PostgreSQL database;
    ``sqlite:///path`` (``sqlite:////abs/path`` for an absolute one), a
    ``pathlib.Path`` or a str that is a plain path names a SQLite file. A str
    that looks like a URL or ``host:port`` of any other kind, or ``sqlite:///``
    with no path, is refused with ValueError naming the store; anything but a
    str or path with TypeError.
    """
    if isinstance(target, str):
        if target.startswith(_POSTGRES):
            return StoreTarget(POSTGRES, target)
        if target.startswith(_SQLITE):
            path = target[len(_SQLITE):]
            if not path:
                raise ValueError("store sqlite:/// names no file: use sqlite:///path/to/file.db")
            return StoreTarget(SQLITE, path)
        if _SCHEME.match(target) is not None:
            raise ValueError(
                f"store {target!r} is neither a path nor a supported URL: use postgresql://"
                "user@host:port/dbname, sqlite:///path/to/file.db, or a pathlib.Path for a "
                "file of that name")
        return StoreTarget(SQLITE, target)
    if isinstance(target, os.PathLike):
        path = os.fspath(target)
        if isinstance(path, str):
            return StoreTarget(SQLITE, path)
    raise TypeError(f"store must be None, a path, a postgresql:// URL or a Store, not "
                    f"{type(target).__name__}")


def open_store(target: Store | str | os.PathLike[str] | None, **options: Any) -> Store:
    """A Store for ``target``: itself, MemoryStore for None, else the store
    ``parse_store_target(target)`` names: PostgresStore for a ``postgresql://``
    or ``postgres://`` URL, SQLiteStore for ``sqlite:///path`` (``sqlite:////abs/path``
    for an absolute one), a ``pathlib.Path`` or a str that is a plain path.

    A str that looks like a URL or ``host:port`` of any other kind is refused with
    ValueError, rather than becoming a SQLite file of that name (pass a
    ``pathlib.Path`` to mean such a file). ``options`` go to the store's
    constructor (``table=`` for instance).
    """
    if isinstance(target, Store):
        if options:
            raise TypeError("options apply only when the store is opened here")
        return target
    if target is None:
        return MemoryStore(**options)
    kind, location = parse_store_target(target)
    if kind == POSTGRES:
        from .postgres import PostgresStore  # psycopg is an optional dependency

        return PostgresStore(location, **options)
    from .sqlite import SQLiteStore

    return SQLiteStore(location, **options)
