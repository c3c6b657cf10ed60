"""open_store: choose a store from what the caller passed (None, a path, a URL or a Store)."""

from __future__ import annotations

import os
import re
from typing import Any

from .memory import MemoryStore
from .store import Store

__all__ = ["open_store"]

# "scheme:" at the start of a string: a URL, or a "host:port" typed where a URL was
# meant. One letter is a Windows drive ("C:\\..."), which is a path.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
_POSTGRES = ("postgresql://", "postgres://")
_SQLITE = "sqlite:///"


def open_store(target: Store | str | os.PathLike[str] | None, **options: Any) -> Store:
    """A Store for ``target``: itself, MemoryStore for None, PostgresStore for a
    ``postgresql://`` or ``postgres://`` URL, SQLiteStore for ``sqlite:///path``
    (``sqlite:////abs/path`` for an absolute one), a ``pathlib.Path`` or a str that
    is a plain path.

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
    if isinstance(target, str):
        if target.startswith(_POSTGRES):
            from .postgres import PostgresStore  # psycopg is an optional dependency

            return PostgresStore(target, **options)
        if target.startswith(_SQLITE):
            target = target[len(_SQLITE):]
            if not target:
                raise ValueError("store sqlite:/// names no file: use sqlite:///path/to/file.db")
        elif _SCHEME.match(target) is not None:
            raise ValueError(
                f"store {target!r} is neither a path nor a supported URL: use postgresql://"
                "user@host:port/dbname, sqlite:///path/to/file.db, or a pathlib.Path for a "
                "file of that name")
    if isinstance(target, (str, os.PathLike)):
        from .sqlite import SQLiteStore

        return SQLiteStore(target, **options)
    raise TypeError(f"store must be None, a path, a postgresql:// URL or a Store, not "
                    f"{type(target).__name__}")
