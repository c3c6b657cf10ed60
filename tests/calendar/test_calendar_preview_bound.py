"""Previews of fire times are bounded: a count above MAX_PREVIEW is refused by name, at once.

Each fire time listed costs a search; without a bound ``Cron.preview(10**7)``
ran for minutes, and a series handle's ``next_fire_times`` does its searches
under the lock its scheduler decides that series' runs under.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from pysched import AsyncScheduler, Cron, Every, ThreadPoolScheduler
from pysched.calendar import Reading, Series
from pysched.calendar._preview import MAX_PREVIEW
from pysched.testing import FakeClock

from support.aio import VirtualTimeLoop, run

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
TOO_MANY = [MAX_PREVIEW + 1, 10**7]


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts Cron's searches; fails the test at once past MAX_PREVIEW of them (a build
    without the bound would otherwise run for minutes)."""
    count = [0]
    search = Cron._search

    def counting(self: Cron, t: datetime, name: str) -> datetime | None:
        count[0] += 1
        if count[0] > MAX_PREVIEW + 1:
            raise AssertionError("more searches than any preview may make")
        return search(self, t, name)

    monkeypatch.setattr(Cron, "_search", counting)
    yield count


@pytest.mark.parametrize("n", TOO_MANY)
def test_cron_preview_refuses_a_count_above_the_bound_before_any_search(searches, n):
    cron = Cron("* * * * * *")
    with pytest.raises(ValueError, match=f"n must be at most {MAX_PREVIEW} fire times, got {n}"):
        cron.preview(n, after=T0)
    assert searches == [0]


def test_cron_preview_lists_up_to_the_bound(searches):
    fires = Cron("* * * * *").preview(MAX_PREVIEW, after=T0)
    assert len(fires) == MAX_PREVIEW and fires[-1] == datetime(2025, 1, 1, 16, 40,
                                                               tzinfo=timezone.utc)
    assert searches == [MAX_PREVIEW]


@pytest.mark.parametrize("trigger", [Cron("* * * * * *"), Every(0.001)], ids=["cron", "every"])
@pytest.mark.parametrize("n", TOO_MANY)
def test_a_series_refuses_to_list_more_than_the_bound(searches, trigger, n):
    series = Series("job", trigger, Reading(T0.timestamp(), 0.0))
    with pytest.raises(ValueError, match=f"n must be at most {MAX_PREVIEW}"):
        series.next_fire_times(n)
    assert len(series.next_fire_times(3)) == 3  # nothing changed


@pytest.mark.parametrize("trigger", [Cron("* * * * * *"), Every(0.001)], ids=["cron", "every"])
@pytest.mark.parametrize("n", TOO_MANY)
def test_a_pool_series_handle_refuses_to_list_more_than_the_bound(impl, searches, trigger, n):
    pool = ThreadPoolScheduler(1, clock=FakeClock(), _core_factory=impl.Scheduler)
    handle = pool.schedule_recurring("job", trigger, 0, abs, (-1,))
    with pytest.raises(ValueError, match=f"n must be at most {MAX_PREVIEW}"):
        handle.next_fire_times(n)
    assert len(handle.next_fire_times(MAX_PREVIEW)) == MAX_PREVIEW
    assert pool.close(wait=True)


@pytest.mark.parametrize("n", TOO_MANY)
def test_an_event_loop_series_handle_refuses_to_list_more_than_the_bound(impl, searches, n):
    async def main() -> int:
        scheduler = AsyncScheduler(_core_factory=impl.Scheduler)
        handle = scheduler.schedule_recurring("job", Cron("* * * * * *"), 0, asyncio.sleep,
                                              (0,))
        with pytest.raises(ValueError, match=f"n must be at most {MAX_PREVIEW}"):
            handle.next_fire_times(n)
        listed = len(handle.next_fire_times(2))
        await scheduler.aclose()
        return listed

    assert run(main, VirtualTimeLoop) == 2
