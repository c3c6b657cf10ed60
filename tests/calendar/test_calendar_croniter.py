"""Cron fire times against croniter: random expressions, six zones, two years each.

Away from clock changes the fire time must be croniter's match read in the
zone. Where a match is repeated or skipped by a change, the brute-force
reference in calendar_reference applies the stated DST policy to each match on
its own; pysched's search must agree with it. Half the start points sit in
the three hours before a clock change, so every change is crossed many times.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from pysched.calendar import Cron

from support.calendar_reference import (
    EXTRA_ZONES,
    UTC,
    ZONES,
    changes,
    offsets,
    random_expression,
    random_instant,
    reference_next,
    zone_of,
)

POLICIES = [(n, a) for n in ("shift", "skip") for a in ("first", "second", "both")]


def _sweep(zone_name: str, count: int, seed: int,
           nearest_weekday: bool = False) -> dict[str, int]:
    key, first_year = {**ZONES, **EXTRA_ZONES}[zone_name]
    zone = zone_of(key)
    rng = random.Random(seed)
    zone_changes = changes(zone, first_year)
    tally = {"compared": 0, "at_change": 0}
    for _ in range(count):
        expr = random_expression(rng, nearest_weekday)
        nonexistent, ambiguous = rng.choice(POLICIES)
        cron = Cron(expr, tz=None if key == "UTC" else key, nonexistent=nonexistent,
                    ambiguous=ambiguous)
        if zone_changes and rng.random() < 0.5:
            change = rng.choice(zone_changes)
            t = change - timedelta(seconds=rng.randrange(3 * 3600))
        else:
            t = random_instant(rng, first_year)
        for _step in range(2):
            expected = reference_next(expr, zone, t, nonexistent, ambiguous, cron.period)
            found = cron.next_after(t)
            assert found is None or found.tzinfo is cron.tz
            # In UTC: an aware datetime in a repeated hour never compares
            # equal to one in another zone (PEP 495).
            got = None if found is None else found.astimezone(UTC)
            assert got == expected, (expr, zone_name, nonexistent, ambiguous, t, got, expected)
            local = expected.astimezone(zone).replace(tzinfo=None)
            off0, off1 = offsets(local, zone)
            tally["at_change" if off0 != off1 or got == t else "compared"] += 1
            t = expected
    return tally


def _check(zone_name: str, count: int, seed: int, nearest_weekday: bool = False) -> None:
    tally = _sweep(zone_name, count, seed, nearest_weekday)
    assert tally["compared"] > count  # two fire times per expression, most away from changes
    # (a monthly W expression rarely fires in the very hour of a change)
    if zone_name in ZONES and zone_name != "UTC" and not nearest_weekday:
        assert tally["at_change"] > 0


@pytest.mark.parametrize("zone_name", list(ZONES))
def test_random_expressions_agree_with_croniter(zone_name: str) -> None:
    """170 expressions in each of six zones: 1,020 in all, each checked at two fire times."""
    _check(zone_name, 170, seed=sorted(ZONES).index(zone_name))


@pytest.mark.parametrize("zone_name", list(ZONES))
def test_nearest_weekday_expressions_agree_with_croniter(zone_name: str) -> None:
    """40 expressions with a W day-of-month (nW or Wn, n up to 31) in each of six zones."""
    _check(zone_name, 40, seed=300 + sorted(ZONES).index(zone_name), nearest_weekday=True)


@pytest.mark.slow
@pytest.mark.parametrize("zone_name", list(ZONES))
def test_random_expressions_agree_with_croniter_sweep(zone_name: str) -> None:
    """1,000 more expressions in each zone."""
    _check(zone_name, 1000, seed=100 + sorted(ZONES).index(zone_name))


@pytest.mark.slow
@pytest.mark.parametrize("zone_name", list(EXTRA_ZONES))
def test_random_expressions_agree_with_croniter_in_odd_zones(zone_name: str) -> None:
    """Two-hour, 30-minute, Ramadan, negative and last changes: 300 expressions each."""
    _check(zone_name, 300, seed=200 + sorted(EXTRA_ZONES).index(zone_name))
