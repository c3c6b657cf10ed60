"""The stores' per-thread connections: none is left open by a store that closes while a
thread connects (such a connection was collected open, and psycopg warned of it)."""

from __future__ import annotations

import pytest

from pysched.durable._sql import ThreadConnections


class Conn:
    def __init__(self) -> None:
        self.closed = False


def test_a_connection_made_while_the_store_closes_is_closed_not_kept() -> None:
    made: list[Conn] = []
    conns: ThreadConnections[Conn]

    def connect() -> Conn:
        conns.close_all()  # another thread closes the store while this one connects
        made.append(Conn())
        return made[-1]

    def close(conn: Conn) -> None:
        conn.closed = True

    conns = ThreadConnections(connect, close, lambda conn: not conn.closed)
    with pytest.raises(RuntimeError, match="closed"):
        conns.get()
    assert [c.closed for c in made] == [True]
    with pytest.raises(RuntimeError, match="closed"):
        conns.get()
    assert len(made) == 1 and conns.closed


def test_every_connection_is_closed_with_the_store() -> None:
    made: list[Conn] = []

    def connect() -> Conn:
        made.append(Conn())
        return made[-1]

    conns = ThreadConnections(connect, lambda c: setattr(c, "closed", True),
                              lambda c: not c.closed)
    assert conns.get() is conns.get() is made[0]
    conns.close_all()
    assert made[0].closed and conns.closed
