"""Durable recurring series on fake clocks: registered tasks, clocks, and two
``SeriesDriver``s over one store standing for two processes, each running its starts
inline, so each step is deterministic."""

from __future__ import annotations

from typing import Any

from pysched.calendar import Reading
from pysched.durable import TaskRegistry, current_task
from pysched.durable._series import SeriesDriver
from pysched.durable._series_spec import Policies, encode_spec
from pysched.durable.series_table import SeriesTable

import support.durable as h

T0 = 1_800_000_000.0  # a whole second, wall time
RAN: list[tuple[str, float, int]] = []


def tick(label: str) -> None:
    task = current_task()
    assert task is not None
    RAN.append((label, task.run_at, task.attempt))


def boom() -> None:
    raise RuntimeError("boom")


TRUSTED = 10.0  # seconds a claim's lease is trusted here after it was sent


class Clocks:
    """A wall and a monotonic clock that move together unless told otherwise."""

    def __init__(self) -> None:
        self.wall = T0
        self.mono = 100.0

    def read(self) -> Reading:
        return Reading(self.wall, self.mono)

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds

    def clock(self) -> float:
        return self.mono

    def live_until(self, sent: float) -> float:
        """A claim's local deadline: its lease is trusted for TRUSTED seconds after it was sent."""
        return sent + TRUSTED

    def lease_rule(self) -> dict[str, Any]:
        return {"clock": self.clock, "live_until": self.live_until}


STALLED: list[Any] = []  # (store, driver) for stall_mid_run


def stall_mid_run(label: str) -> None:
    """A first run whose process stalls past its lease, then goes on: meanwhile its series
    thread looks for expired fire times to take over, as it does after a stall."""
    store, here = STALLED
    running = current_task()
    assert running is not None
    RAN.append((label, running.run_at, running.attempt))
    if running.attempt == 1:
        h.wait_for(lambda: lease_expired(store, 1, running.run_at), what="the lease to expire")
        here.rerun_expired()


REGISTRY = TaskRegistry()
REGISTRY.register(tick, "series-tick")
REGISTRY.register(boom, "series-boom")
REGISTRY.register(stall_mid_run, "series-stall")


def driver(table: SeriesTable, clocks: Clocks, owner: str, lease: float = 30.0) -> SeriesDriver:
    return SeriesDriver(table, owner=owner, registry=REGISTRY, served=lambda ref, queue: True,
                        read=clocks.read, **clocks.lease_rule(), lease=lease,
                        start=lambda job, priority: job())


def put(table: SeriesTable, trigger: Any, ref: str = "series-tick", label: str = "a",
        series_id: str = "s", **policies: Any) -> int:
    spec = encode_spec(trigger, Policies(**{"misfire_grace": 1.0, "catch_up": "latest",
                                            "overlap": "skip", "on_error": "continue",
                                            "max_catch_up": 100, **policies}), T0)
    return table.put(series_id, spec, ref, f'{{"args":["{label}"],"kwargs":{{}}}}', 0,
                     "default", T0)


def step(drivers: list[SeriesDriver], clocks: Clocks, seconds: float = 1.0) -> None:
    clocks.advance(seconds)
    for d in drivers:
        d.sync()
    for d in drivers:
        d.tick()


def lease_expired(store: Any, generation: int, fire: float = T0 + 1) -> bool:
    """Whether the lease on fire time ``fire`` has expired on the store's clock."""
    row = store.series_table().fire("s", generation, fire)
    assert row is not None
    return bool(store.now() > row["lease_expires"])
