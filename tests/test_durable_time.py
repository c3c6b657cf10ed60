"""The wall-clock / monotonic map, and wall-clock jumps between restarts."""

from __future__ import annotations

import time

import pytest
from durable_helpers import open_spec, store_spec, wait_for  # noqa: F401 - store_spec is a fixture

from pysched.durable import DurableScheduler, NewTask, Timebase

ARGS = '{"args":[],"kwargs":{}}'


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_map_is_fixed_at_start_up() -> None:
    mono, wall = Clock(100.0), Clock(1_000_000.0)
    tb = Timebase(mono, wall)
    assert tb.to_wall(130.0) == 1_000_030.0 and tb.to_mono(1_000_030.0) == 130.0
    wall.now = 5.0  # the wall clock jumps while running: no deadline moves
    assert tb.to_mono(1_000_030.0) == 130.0


def test_a_wall_clock_set_back_between_restarts_uses_the_high_water_mark() -> None:
    tb = Timebase(Clock(0.0), Clock(1_000.0), high_water=5_000.0)
    assert tb.wall_jumped_back
    assert tb.to_mono(4_990.0) == -10.0  # due before the last seen instant: due at once
    assert tb.to_mono(5_060.0) == 60.0  # still a minute to go, as it had
    ahead = Timebase(Clock(0.0), Clock(9_000.0), high_water=5_000.0)
    assert not ahead.wall_jumped_back and ahead.to_mono(5_060.0) == -3_940.0  # overdue: runs now


def test_bad_clocks_are_refused() -> None:
    with pytest.raises(ValueError, match="clock"):
        Timebase(Clock(float("nan")), Clock(0.0))
    with pytest.raises(TypeError, match="wall_clock"):
        Timebase(Clock(0.0), lambda: "noon")  # type: ignore[arg-type, return-value]


def test_restart_after_the_wall_clock_went_back(store_spec: dict) -> None:  # noqa: F811
    """The store remembers the latest wall time; a restart whose clock is behind it
    neither delays due work nor pulls future work in. On PostgreSQL the database's
    clock is the reference: a clock 8000 s off is refused and the server's used."""
    store = open_spec(store_spec)
    mono, base = Clock(50.0), time.time()
    first = DurableScheduler(store, clock=mono, wall_clock=Clock(base))
    first.close()
    store.schedule([NewTask("due", base - 10, 0, "note", ARGS),
                    NewTask("later", base + 100, 0, "note", ARGS)])
    again = DurableScheduler(store, clock=mono, wall_clock=Clock(base - 8_000))  # set back
    try:
        tb = again.timebase
        if store.reference_clock:
            assert tb.clock_refused and not tb.mark_refused and abs(tb.wall0 - base) < 5
        else:
            assert tb.wall_jumped_back and tb.wall0 == base
        assert list(again._mirror.entries) == ["later"]  # "due" was claimed at once
        assert tb.to_mono(again._mirror.entries["later"].wall) == pytest.approx(
            mono.now + 100.0, abs=5)
        wait_for(lambda: again.row("due")["state"] == "completed", what="the due task")
    finally:
        again.close()
        if store_spec["kind"] != "memory":
            store.close()
