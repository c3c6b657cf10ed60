"""open_store: choose a store from what the caller passed (None, a path, a URL or a Store)."""

from __future__ import annotations

import os
from typing import Any

from .memory import MemoryStore
from .store import Store

__all__ = ["open_store"]


def open_store(target: Store | str | os.PathLike[str] | None, **options: Any) -> Store:
    """A Store for ``target``: itself, MemoryStore for None, PostgresStore for a
    ``postgresql://`` or ``postgres://`` URL, SQLiteStore for any other path.

    ``options`` go to the store's constructor (``table=`` for instance).
    """
    if isinstance(target, Store):
        if options:
            raise TypeError("options apply only when the store is opened here")
        return target
    if target is None:
        return MemoryStore(**options)
    if isinstance(target, str) and target.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore  # psycopg is an optional dependency

        return PostgresStore(target, **options)
    if isinstance(target, (str, os.PathLike)):
        from .sqlite import SQLiteStore

        return SQLiteStore(target, **options)
    raise TypeError(f"store must be None, a path, a postgresql:// URL or a Store, not "
                    f"{type(target).__name__}")
