"""A durable series never runs fire times from before it was stored, whenever a worker
adopts it: a retention prune before its first claim moves no floor below its creation.

Two ``SeriesDriver``s over one store stand for two worker processes (inline starts, fake
clocks that start at the store's own time); on each store.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from pysched import Cron
from pysched.durable._series_spec import Policies, encode_spec

import support.durable_series as series

WEEK = 7 * 86_400.0
HOURLY = Cron("0 * * * *")


def store_hourly(table: Any, created: float, **policies: Any) -> int:
    """Store an hourly series "s" at wall instant ``created``; its generation."""
    spec = encode_spec(HOURLY, Policies(**{"misfire_grace": 1.0, "catch_up": "latest",
                                           "overlap": "skip", "on_error": "continue",
                                           "max_catch_up": 100, **policies}), created)
    return table.put("s", spec, "series-tick", '{"args":["s"],"kwargs":{}}', 0, "default",
                     created)


def adopted_at(table: Any, wall: float) -> tuple[Any, Any, list[Any]]:
    """A worker that reads the stored series at wall instant ``wall`` and starts what is
    due then: its driver, its clocks and the events it emits."""
    clocks = series.Clocks()
    clocks.wall = wall
    later = series.driver(table, clocks, "later")
    events: list[Any] = []
    later.hub.add_listener(events.append)
    later.sync()
    later.tick()
    return later, clocks, events


@pytest.mark.parametrize("catch_up", ["latest", "all"])
def test_a_worker_adopting_a_series_after_a_prune_runs_nothing_from_before_it_was_stored(
        store: Any, catch_up: str) -> None:  # noqa: F811
    """Stored at 42:32 past the hour, pruned by a worker's retention pass, adopted by a
    worker started 1.5 s later: that worker ran the hour's fire time at once and reported
    a week of fire times as late and coalesced (with catch_up="all", up to max_catch_up
    runs of them), because the prune had set the series' floor to a week ago."""
    table = store.series_table()
    now = store.now()
    created = math.floor(now / 3600) * 3600 + 42 * 60 + 32.0  # the store's clock's hour
    created = min(created, now)  # stored no later than the store's now: the prune sees it
    store_hourly(table, created, catch_up=catch_up, max_catch_up=5)
    table.prune(WEEK)  # a worker's retention pass, before any claim of the series
    [row] = table.rows()
    assert row.last_fire is None  # nothing claimed, and no floor below its creation

    later, clocks, events = adopted_at(table, created + 1.5)
    assert series.RAN == [] and events == []
    assert later.counts["series_fires"] == 0

    next_hour = math.floor(created / 3600) * 3600 + 3600
    series.step([later], clocks, next_hour + 0.5 - clocks.wall)
    assert list(series.RAN) == [("s", next_hour, 1)]
    assert events == []


def test_a_prune_still_floors_a_series_stored_before_its_horizon(store: Any) -> None:  # noqa: F811
    """The floor is what makes forgetting claims safe: a series stored before the prune's
    instant gets one, and its forgotten claims are never made again."""
    table = store.series_table()
    now = math.floor(store.now())
    generation = store_hourly(table, now - 3 * 3600)
    old, recent = now - 2 * 3600, now - 3600
    for fire in (old, recent):
        claim = table.claim("s", generation, fire, "one", 30.0)
        assert claim is not None and table.finish(claim, failed=False)
    assert table.prune(1.5 * 3600) == 1
    assert table.fire("s", generation, old) is None
    assert table.claim("s", generation, old, "two", 30.0) is None  # below the floor
    [row] = table.rows()
    assert row.last_fire == recent


def test_a_floor_an_older_prune_left_below_a_series_creation_is_not_followed(
        store: Any, store_spec: dict[str, Any]) -> None:  # noqa: F811
    """A database written by an older pysched may hold such a floor: a worker adopting the
    series still counts its fire times from when it was stored."""
    if store_spec["kind"] == "memory":
        pytest.skip("a floor written with SQL")
    table = store.series_table()
    created = math.floor(store.now() / 3600) * 3600 + 30 * 60.0
    store_hourly(table, created)
    store._conns.get().execute(f"UPDATE {store_spec['table']}_series SET floor = {created - WEEK}")
    _, _, events = adopted_at(table, created + 1.5)
    assert series.RAN == [] and events == []
