"""A store that cannot be opened says which one: the SQLite file's path, the PostgreSQL
server, database and user, and never the password, in the message or its traceback."""

from __future__ import annotations

import socket
import sqlite3
import traceback
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from pysched.durable import DurableScheduler

import support.durable as h

psycopg = pytest.importorskip("psycopg")
from pysched.durable import PostgresStore  # noqa: E402 - needs psycopg

SECRET = "s3cret-Pa55"


def shown(exc: BaseException) -> str:
    """All that a printed traceback of ``exc`` shows."""
    return "".join(traceback.format_exception(exc))


@pytest.mark.parametrize("form", ["path", "url"])
def test_a_sqlite_file_in_a_missing_directory_is_named(tmp_path: Path, form: str) -> None:
    path = tmp_path / "no" / "dir" / "x.db"
    with pytest.raises(sqlite3.OperationalError) as caught:
        DurableScheduler(str(path) if form == "path" else f"sqlite:///{path}")
    message = str(caught.value)
    assert repr(str(path)) in message and "unable to open database file" in message
    assert f"the directory {str(path.parent)!r} does not exist" in message
    assert not (tmp_path / "no").exists()


def test_a_file_that_is_not_a_database_is_named(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database, but long enough to hold a header " * 4)
    with pytest.raises(sqlite3.DatabaseError, match="not a database") as caught:
        DurableScheduler(path)
    assert repr(str(path)) in str(caught.value)
    assert path.read_text().startswith("not a database")  # left as it was


def closed_port() -> int:
    """A loopback port where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("url", [
    f"postgresql://app:{SECRET}@127.0.0.1:{{port}}/orders",
    f"postgresql://app@127.0.0.1:{{port}}/orders?password={SECRET}",
    f"host=127.0.0.1 port={{port}} dbname=orders user=app password={SECRET}",
], ids=["in-url", "in-query", "conninfo"])
def test_an_unreachable_postgresql_server_is_named_without_its_password(url: str) -> None:
    port = closed_port()
    with pytest.raises(psycopg.OperationalError) as caught:
        PostgresStore(url.format(port=port))
    message = str(caught.value)
    assert f"host=127.0.0.1 port={port} dbname=orders user=app" in message
    assert "Connection refused" in message
    assert SECRET not in shown(caught.value)


@pytest.mark.parametrize("password", ["s3 cret-Pa55", "s%ZZcret-Pa55"],
                         ids=["space", "bad-escape"])
def test_a_malformed_postgresql_url_is_refused_without_its_password(password: str) -> None:
    """psycopg's own message repeats the part of the URL it could not read."""
    with pytest.raises(psycopg.ProgrammingError) as caught:
        DurableScheduler(f"postgresql://app:{password}@127.0.0.1:{closed_port()}/orders")
    assert "cannot connect to PostgreSQL" in str(caught.value)
    assert password not in shown(caught.value)


def test_a_missing_postgresql_database_is_named_without_the_password() -> None:
    url = urlsplit(h.postgres_url())
    user = url.username or "postgres"
    host = f"{user}:{SECRET}@{url.hostname}" + (f":{url.port}" if url.port else "")
    missing = urlunsplit(url._replace(netloc=host, path="/no_such_db_here"))
    with pytest.raises(psycopg.OperationalError) as caught:
        DurableScheduler(missing)
    message = str(caught.value)
    assert "dbname=no_such_db_here" in message and f"user={user}" in message
    assert SECRET not in shown(caught.value)

