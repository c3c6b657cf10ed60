"""The durable scheduler's clocks: each reading checked once, at one boundary.

``pysched._clock.CheckedClock`` turns a reading that is no finite number, or a
monotonic reading that goes back, into an error naming the clock; the rule for
what an error does (a round retried, a run failed, a call refused) is tested
end to end in test_durable_lifecycle_edges.py and test_durable_series.py. Here:
the checks themselves, and a fire time whose lease check cannot read the clock.
"""

from __future__ import annotations

import datetime
import math
import threading
import time
from typing import Any

import pytest

from pysched import Every
from pysched._clock import CheckedClock
from pysched.calendar import Reading
from pysched.durable import DurableScheduler, MemoryStore
from pysched.durable._clocks import Clocks
from pysched.durable._series import SeriesDriver
from pysched.durable._series_spec import Policies, encode_spec
from pysched.durable.registry import REGISTRY

import support.durable as h

T0 = 1_800_000_000.0


def readings(*values: Any) -> Any:
    found = iter(values)
    return lambda: next(found)


@pytest.mark.parametrize(("reading", "error"), [
    (math.nan, ValueError), (math.inf, ValueError), ("noon", TypeError), (True, TypeError),
    (None, TypeError), (10**400, OverflowError)])
def test_a_reading_that_is_no_finite_number_raises_naming_the_clock(
        reading: Any, error: type[Exception]) -> None:
    clock = CheckedClock(readings(reading, 2.0), "wall_clock()", monotonic=False)
    with pytest.raises(error, match=r"wall_clock\(\)"):
        clock()
    assert clock() == 2.0  # the next reading is read afresh


def test_readings_come_back_as_floats_and_a_raising_clock_raises_its_own_error() -> None:
    clock = CheckedClock(readings(3, 4.5), "clock()", monotonic=True)
    assert [type(clock()), clock()] == [float, 4.5]

    def broken() -> float:
        raise OSError("no clock here")

    with pytest.raises(OSError, match="no clock here"):
        CheckedClock(broken, "clock()", monotonic=True)()


def test_a_monotonic_clock_that_goes_back_raises_and_a_wall_clock_may() -> None:
    mono = CheckedClock(readings(5.0, 5.0, 4.0, 6.0), "clock()", monotonic=True)
    assert mono() == 5.0 and mono() == 5.0  # standing still is allowed
    with pytest.raises(ValueError, match=r"clock\(\) went back from 5.0 to 4.0"):
        mono()
    assert mono() == 6.0
    wall = CheckedClock(readings(5.0, 4.0), "wall_clock()", monotonic=False)
    assert (wall(), wall()) == (5.0, 4.0)


def test_threads_reading_one_monotonic_clock_at_once_never_see_a_false_error() -> None:
    clock = CheckedClock(time.monotonic, "clock()", monotonic=True)
    errors: list[BaseException] = []

    def read_many() -> None:
        try:
            for _ in range(20_000):
                clock()
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=read_many) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_the_scheduler_reads_its_clock_through_the_boundary() -> None:
    """``sched.clock`` is the checked clock: what a task or caller reads is checked too."""
    now = [100.0]
    with DurableScheduler(MemoryStore(), max_workers=0, clock=lambda: now[0]) as sched:
        assert sched.clock() == 100.0
        now[0] = 99.0
        with pytest.raises(ValueError, match="went back"):
            sched.schedule_in("x", 1, 0, h.note)
        assert sched.row("x") is None  # nothing stored


def test_clocks_read_both_clocks_checked() -> None:
    clocks = Clocks(readings(1.0, 1.0, 2.0), readings("noon"))
    with pytest.raises(TypeError, match=r"wall_clock\(\)"):
        clocks.read()
    ok = Clocks(readings(1.0, 1.0), readings(T0))
    assert ok.read() == Reading(T0, 1.0)


def test_a_clock_failing_at_a_fire_times_lease_check_fails_the_run_and_frees_its_claim() -> None:
    """A fire time is claimed, then its start rule cannot read the clock: the run fails
    (recorded failed, counted, its series goes on), and its claim is no longer held here.
    Held, the heartbeat would renew its lease for ever, and no process would run it."""
    h.reset()
    table = MemoryStore(clock=lambda: T0).series_table()
    start = datetime.datetime.fromtimestamp(T0 + 1, datetime.timezone.utc)
    spec = encode_spec(Every(1, start=start), Policies(1.0, "latest", "skip", "continue", 100),
                       T0)
    table.put("s", spec, "note", '{"args":["s"],"kwargs":{}}', 0, "default", T0)
    now = [T0]
    claimed = threading.Event()

    class ClaimWatch:
        """The series table, noting when a fire time was claimed."""

        def __getattr__(self, name: str) -> Any:
            return getattr(table, name)

        def claim(self, *args: Any) -> Any:
            found = table.claim(*args)
            claimed.set()
            return found

    def clock() -> float:  # fails from the claim on: at the run's start rule
        if claimed.is_set():
            raise OSError("the clock could not be read")
        return now[0] - T0

    here = SeriesDriver(ClaimWatch(), owner="here", registry=REGISTRY,  # type: ignore[arg-type]
                        served=lambda ref, queue: True,
                        read=lambda: Reading(now[0], now[0] - T0),
                        lease=30.0, start=lambda job, priority: job(), clock=clock,
                        live_until=lambda sent: sent + 10.0)
    events: list[Any] = []
    here.hub.add_listener(events.append)
    here.sync()
    now[0] += 1
    here.tick()  # fire time T0 + 1: claimed, then the lease check raises
    assert here.inflight == {}
    assert table.fire("s", 1, T0 + 1)["state"] == "failed"  # type: ignore[index]
    assert here.counts["series_failed"] == 1 and h.CALLS == []
    assert [(e.kind, e.fire_time) for e in events] == [("failed", T0 + 1)]
