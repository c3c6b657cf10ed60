"""PostgreSQL plans each statement of a store with its own parameters.

A generic plan (what the server keeps for a prepared statement after a few
runs) guesses an array parameter's length and cannot hash an ``= ANY`` list:
a batch of thousands of outcomes or heartbeat tokens was then matched row by
row against the whole array, for minutes. The store's connections prepare
nothing on the server, so every run is planned with its parameters.
"""

from __future__ import annotations

import pytest

from support.durable import postgres_url

psycopg = pytest.importorskip("psycopg")


def test_a_store_connection_prepares_no_statement_however_often_it_runs() -> None:
    from pysched.durable.postgres import connect

    with connect(postgres_url(), connect_timeout=10) as db:
        for _ in range(20):  # psycopg would prepare from the sixth run by default
            db.execute("SELECT count(*) FROM pg_class WHERE relname = ANY(%s)",
                       (["a", "b"],)).fetchall()
        prepared = db.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
    assert prepared == (0,)
