"""Every's fire-time grid: the next fire time is found in few steps however fine the grid.

An interval finer than the floats near the anchor maps many indexes to one
time; the search must still end, find a time strictly later, and agree with a
plain step-by-step search wherever that one is quick.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from datetime import datetime, timezone

from hypothesis import given
from hypothesis import strategies as st

from pysched.calendar import Series
from pysched.calendar.every import Every, Grid

from support.calendar_driver import FakeClocks, ts

times = st.floats(min_value=-1e13, max_value=1e13)
intervals = st.floats(min_value=1e-300, max_value=1e12)


def stepwise(grid: Grid, after: float) -> float | None:
    """The least grid time after ``after``, by unit steps from the division's guess."""
    k = max(grid.first_index, math.floor((after - grid.anchor) / grid.interval) + 1)
    while grid.anchor + k * grid.interval <= after:
        k += 1
    while k - 1 >= grid.first_index and grid.anchor + (k - 1) * grid.interval > after:
        k -= 1
    fire = grid.anchor + k * grid.interval
    return fire if math.isfinite(fire) else None


@given(times, intervals, st.sampled_from([0, 1]), times)
def test_next_fire_is_later_and_the_next_one_later_still(anchor: float, interval: float,
                                                         first_index: int, after: float) -> None:
    grid = Grid(anchor, interval, first_index)
    fire = grid.next_fire(after)
    if abs(after - anchor) / interval < 1e300:  # else no float index reaches past ``after``
        assert fire is not None
    if fire is not None:
        assert fire > after
        following = grid.next_fire(fire)
        assert following is None or following > fire


@given(times, st.floats(min_value=1e-3, max_value=1e12), st.sampled_from([0, 1]), times)
def test_next_fire_agrees_with_a_stepwise_search_where_steps_are_few(
        anchor: float, interval: float, first_index: int, after: float) -> None:
    grid = Grid(anchor, interval, first_index)
    # Only where the grid is coarser than the floats: there stepping is quick.
    if interval > 1e-6 * max(1.0, abs(anchor), abs(after)):
        assert grid.next_fire(after) == stepwise(grid, after)


def test_a_grid_finer_than_the_floats_still_moves_on() -> None:
    grid = Grid(12345.678, 1e-300, 1)
    fire = grid.next_fire(12345.678)
    assert fire == math.nextafter(12345.678, math.inf)
    assert grid.next_fire(fire) == math.nextafter(fire, math.inf)


def test_a_grid_past_every_index_has_no_next_fire() -> None:
    assert Grid(-1e308, 1.0, 0).next_fire(1e308) is None
    assert Grid(1e308, 1.0, 0).next_fire(-1e308) == 1e308


def test_catching_up_a_fine_grid_far_out_on_the_clock_ends() -> None:
    # The monotonic clock reads 1e16, where floats are 2 apart: bisecting
    # between two neighbours to 1 ms would never end.
    clocks = FakeClocks(ts("2025-01-01T00:00"), mono=1e16)
    series = Series("job", Every(0.5), clocks.read(), catch_up="all", max_catch_up=5)
    clocks.advance(1e6)
    decision = series.poll(clocks.read())
    assert decision is not None


def test_a_pool_series_every_1e_300_seconds_answers_its_next_fire_times() -> None:
    # In a child process: before the grid's search was bounded, this never returned.
    code = textwrap.dedent("""
        from pysched import Every, ThreadPoolScheduler
        with ThreadPoolScheduler(1) as pool:
            handle = pool.schedule_recurring("x", Every(1e-300), 0, lambda: None)
            times = handle.next_fire_times(3)  # datetimes: to the microsecond
            assert len(times) == 3 and times[0] <= times[1] <= times[2], times
            handle.cancel()
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_fire_times_past_the_datetime_range_are_left_out_of_next_fire_times() -> None:
    from pysched import ThreadPoolScheduler

    with ThreadPoolScheduler(1) as pool:
        far = pool.schedule_recurring("far", Every(5e-324, start_at=1e300), 0, lambda: None)
        near = pool.schedule_recurring("near", Every(3600), 0, lambda: None)
        try:
            assert far.next_fire_times(2) == []
            assert len(near.next_fire_times(2)) == 2
        finally:
            far.cancel()
            near.cancel()


def test_a_series_keeps_its_grid_as_its_trigger_and_not_the_callers_every() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00"), mono=5.0)
    for every in (Every(2.5), Every(2.5, start_at=7.0, fixed_delay=True),
                  Every(2.5, start=datetime(2025, 1, 1, 0, 0, 1, tzinfo=timezone.utc))):
        held = sys.getrefcount(every)
        series = Series("s", every, clocks.read())
        assert sys.getrefcount(every) == held  # one object per series fewer
        assert isinstance(series.trigger, Grid)
        assert repr(series.trigger) == repr(every)
        assert series.trigger.describe() == every.describe()
        assert (series.trigger.seconds, series.trigger.start, series.trigger.start_at,
                series.trigger.fixed_delay) == (every.seconds, every.start, every.start_at,
                                                every.fixed_delay)
