"""Properties of Cron.next_after that hold for any expression, zone and policy."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from pysched.calendar import Cron

from support.calendar_reference import ZONES, changes, random_expression, zone_of
from support.examples import examples

UTC = timezone.utc
MICRO = timedelta(microseconds=1)

crons = st.builds(
    lambda seed, zone, nonexistent, ambiguous: Cron(
        random_expression(random.Random(seed)), tz=None if zone == "UTC" else zone,
        nonexistent=nonexistent, ambiguous=ambiguous),
    st.integers(0, 10**9), st.sampled_from(sorted(ZONES)), st.sampled_from(["shift", "skip"]),
    st.sampled_from(["first", "second", "both"]))
instants = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2026, 12, 31),
                        timezones=st.just(UTC))


@settings(max_examples=examples(150), deadline=None)
@given(cron=crons, t=instants, gap=st.integers(0, 10**7))
def test_next_after_is_after_monotone_and_misses_nothing(cron: Cron, t: datetime,
                                                          gap: int) -> None:
    first = cron.next_after(t)
    assert first is not None and first > t
    # nothing between t and first: searching from just before first finds first
    assert cron.next_after(first - MICRO) == first
    # monotone: from a later instant, never an earlier fire time
    later = t + timedelta(seconds=gap)
    found = cron.next_after(later)
    assert found is not None and found.timestamp() >= first.timestamp()
    if later < first:
        assert found == first
    fires = cron.preview(4, after=t)
    stamps = [f.timestamp() for f in fires]
    assert stamps == sorted(set(stamps))  # strictly increasing: no fire time twice


CHANGES = [(zone, change) for zone in sorted(ZONES) if zone != "UTC"
           for change in changes(zone_of(ZONES[zone][0]), ZONES[zone][1])]


@settings(max_examples=examples(100), deadline=None)
@given(at=st.sampled_from(CHANGES), before=st.integers(0, 3 * 3600),
       step=st.sampled_from([1, 2, 5, 10, 15, 30]),
       policy=st.tuples(st.sampled_from(["shift", "skip"]),
                        st.sampled_from(["first", "second", "both"])))
def test_sub_hourly_intervals_keep_their_spacing_across_every_change(
        at: tuple[str, datetime], before: int, step: int, policy: tuple[str, str]) -> None:
    zone, change = at
    cron = Cron(f"*/{step} * * * *", tz=zone, nonexistent=policy[0], ambiguous=policy[1])
    fires = [f.timestamp() for f in cron.preview(4 * 60 // step, after=change - timedelta(
        seconds=before))]
    assert all(b - a == step * 60 for a, b in zip(fires, fires[1:], strict=False))
