"""``current_fire()`` inside a durable series run: the fire time it runs for, as in the pool."""

from __future__ import annotations

import datetime
from typing import Any

from pysched import Every
from pysched.calendar import Fire, current_fire
from pysched.durable import TaskRegistry
from pysched.durable._series import SeriesDriver

from support.durable_series import T0, Clocks, put, step

SEEN: list[Fire | None] = []


def record_fire(label: str) -> None:
    SEEN.append(current_fire())


REGISTRY = TaskRegistry()
REGISTRY.register(record_fire, "series-record-fire")


def test_current_fire_is_the_fire_time_inside_a_durable_series_run(store: Any) -> None:
    SEEN.clear()
    table = store.series_table()
    clocks = Clocks()
    put(table, Every(1, start=datetime.datetime.fromtimestamp(T0 + 1, datetime.timezone.utc)),
        ref="series-record-fire")
    here = SeriesDriver(table, owner="one", registry=REGISTRY,
                        served=lambda ref, queue: True, read=clocks.read,
                        **clocks.lease_rule(), lease=30.0, start=lambda job, priority: job())
    for _ in range(3):
        step([here], clocks)
    assert [f.fire_time if f is not None else None for f in SEEN] == [T0 + 1, T0 + 2, T0 + 3]
    assert all(f is not None and 0 <= f.lateness < 1 for f in SEEN)
    assert current_fire() is None  # set only inside the run
