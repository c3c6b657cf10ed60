"""Fixtures of the durable tests: ``store_spec`` (each kind of store), ``store`` (one opened
store, the series log cleared) and ``pg`` (a PostgreSQL table and a worker role)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pysched.durable import MemoryStore

import support.durable as h
from support.durable import ROLE
from support.durable_series import RAN

STORE_KINDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=STORE_KINDS)
def store_spec(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[dict[str, Any]]:
    """How to open one fresh store, several times: ``{"kind", "target", "table"}``.

    Memory stores cannot be opened twice, so their spec holds the one instance.
    """
    kind = request.param
    if kind == "memory":
        yield {"kind": kind, "store": MemoryStore()}
    elif kind == "sqlite":
        yield {"kind": kind, "target": str(tmp_path / "schedule.db"), "table": "pysched_tasks"}
    else:
        url = h.postgres_url()
        table = h.unique_table()
        yield {"kind": kind, "target": url, "table": table}
        h.drop_postgres_table(url, table)


@pytest.fixture
def store(store_spec: dict[str, Any]) -> Iterator[Any]:
    RAN.clear()
    if store_spec["kind"] == "memory":
        yield store_spec["store"]
        return
    opened = h.open_spec(store_spec)
    yield opened
    opened.close()


@pytest.fixture
def pg() -> Iterator[dict[str, Any]]:
    import psycopg

    url = h.postgres_url()
    table = h.unique_table()
    admin = psycopg.connect(url, autocommit=True)
    if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone() is None:
        admin.execute(f"CREATE ROLE {ROLE} LOGIN")
    admin.execute(f"ALTER ROLE {ROLE} CONNECTION LIMIT -1")
    admin.execute(f"GRANT CREATE, USAGE ON SCHEMA public TO {ROLE}")
    scheme, rest = url.split("://", 1)
    worker_url = f"{scheme}://{ROLE}@{rest.split('@', 1)[-1]}"
    h.reset()
    yield {"url": url, "worker_url": worker_url, "table": table, "admin": admin}
    admin.execute(f"ALTER ROLE {ROLE} CONNECTION LIMIT -1")
    h.drop_postgres_table(url, table)
    admin.close()
