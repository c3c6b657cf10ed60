"""The wall-clock / monotonic map, and wall-clock jumps between restarts."""

from __future__ import annotations

import time
from typing import Any

import pytest

from pysched.durable import DurableScheduler, MemoryStore, NewTask, Timebase

from support.durable import open_spec, wait_for

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


def test_restart_after_the_wall_clock_went_back(store_spec: dict) -> None:
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


def _skew_store(store_spec: dict) -> tuple[Any, Clock | None]:
    """A store whose clock is a reference: PostgreSQL's server, or a memory store
    standing for one on a fake clock. None for SQLite (its clock is this machine's)."""
    if store_spec["kind"] == "sqlite":
        pytest.skip("SQLite's clock is this machine's: there is no other clock to compare")
    if store_spec["kind"] == "memory":
        server = Clock(time.time())
        return MemoryStore(clock=server, reference_clock=True), server
    return open_spec(store_spec), None


def test_a_fast_node_cannot_make_an_honest_node_run_work_early(
        store_spec: dict, caplog: pytest.LogCaptureFixture) -> None:
    """A node one hour fast starts and stops; then an honest node starts: work due in
    30 minutes is still 30 minutes away, whether or not the mark was already poisoned."""
    store, _ = _skew_store(store_spec)
    try:
        now = store.now()
        store.schedule([NewTask("half-hour", now + 1800, 0, "note", ARGS)])
        with caplog.at_level("ERROR", logger="pysched.durable"):
            fast = DurableScheduler(store, wall_clock=lambda: store.now() + 3600)
            assert fast.timebase.clock_refused  # it runs on the database's clock instead
            assert fast.timebase.to_mono(now + 1800) - fast.clock() > 1700
            fast.close()
            assert any("off the database's" in r.getMessage() for r in caplog.records)
            for poisoned in (False, True):
                if poisoned:  # as an older version let a fast node write it
                    store.wall_high_water(store.now() + 3600)
                honest = DurableScheduler(store, wall_clock=store.now)
                assert honest.timebase.mark_refused is poisoned
                due_in = honest.timebase.to_mono(honest._mirror.entries["half-hour"].wall)
                assert due_in - honest.clock() > 1700
                assert honest.row("half-hour")["state"] == "pending"
                honest.close()
        assert any("ahead of the database's clock" in r.getMessage() for r in caplog.records)
    finally:
        if store_spec["kind"] != "memory":
            store.close()


def test_a_node_ahead_of_the_database_does_not_raise_the_mark(
        store_spec: dict, caplog: pytest.LogCaptureFixture) -> None:
    """At each resync the mark is raised only while this node's time is within the limit."""
    store, server = _skew_store(store_spec)
    mono = Clock(0.0)
    try:
        s = DurableScheduler(store, clock=mono, wall_clock=store.now, max_clock_skew=5.0,
                             resync_interval=3600)
        mark = store.wall_high_water()
        mono.now += 60.0  # this node's clock runs a minute ahead of the database's
        with caplog.at_level("ERROR", logger="pysched.durable"):
            s._keeper.mark_wall_time()
        assert store.wall_high_water() == mark and s.stats()["skew_refusals"] == 1
        if server is not None:
            server.now += 60.0  # the database's clock catches up: within the limit again
            s._keeper.mark_wall_time()
            assert store.wall_high_water() == pytest.approx(mark + 60.0)
        s.close()
    finally:
        if store_spec["kind"] != "memory":
            store.close()
