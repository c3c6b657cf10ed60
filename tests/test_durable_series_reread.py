"""A re-read of the stored series that overlaps a local change never undoes it.

``SeriesDriver.sync`` reads the rows outside its lock, so this process may end
or adopt a series between that read and the moment the rows are applied: the
read is then older than the change, and must not bring back a series ended
here (it ran on, and its replacement by id reported "replaced" twice) nor drop
one adopted here (it went missing until the next re-read).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from durable_helpers import store_spec  # noqa: F401 - a fixture
from test_durable_series import RAN, Clocks, driver, put, step, store  # noqa: F401

from pysched import Cron
from pysched.durable.series_table import SeriesRow, SeriesTable


class ReadThenEdit:
    """A series table whose next ``rows()`` runs ``during`` after reading, as if another
    thread of this process changed something while the rows were on their way."""

    def __init__(self, table: SeriesTable) -> None:
        self.table = table
        self.during: Callable[[], None] | None = None

    def rows(self) -> list[SeriesRow]:
        rows = self.table.rows()
        during, self.during = self.during, None
        if during is not None:
            during()
        return rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)


def test_a_series_ended_while_the_rows_were_read_stays_ended(store: Any) -> None:  # noqa: F811 - the fixture above
    proxy = ReadThenEdit(store.series_table())
    clocks = Clocks()
    put(proxy.table, Cron("* * * * * *"))
    here = driver(proxy, clocks, "here")  # type: ignore[arg-type]
    events: list[Any] = []
    here.hub.add_listener(events.append)
    here.sync()
    proxy.during = lambda: here.end("s")
    here.sync()
    assert "s" not in here.entries and "s" not in here.book
    step([here], clocks)
    step([here], clocks)
    assert RAN == []
    assert [(e.kind, e.reason) for e in events] == [("stopped", "cancelled")]


def test_a_series_adopted_while_the_rows_were_read_is_kept(store: Any) -> None:  # noqa: F811 - the fixture above
    proxy = ReadThenEdit(store.series_table())
    clocks = Clocks()
    here = driver(proxy, clocks, "here")  # type: ignore[arg-type]

    def schedule_here() -> None:
        put(proxy.table, Cron("* * * * * *"))
        [row] = proxy.table.rows()
        here.adopt(row)

    proxy.during = schedule_here
    here.sync()  # read before the series was stored
    assert "s" in here.entries and "s" in here.book
    clocks.advance(1.0)
    here.tick()  # no re-read in between: the series was kept, so its fire time runs
    assert [label for label, _, _ in RAN] == ["a"]
