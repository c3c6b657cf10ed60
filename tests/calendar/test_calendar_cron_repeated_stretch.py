"""Cron.next_after around clock changes with expressions that match every few seconds.

Right: at each probe around a change (either side of each pass of a repeated
stretch, in a gap, and between), under every policy, the fire time agrees
with a brute force that tries every whole second after ``t``.

Cheap: a search examines a few of the expression's matches, not all the
matches of a repeated hour (a per-second expression has 3,600 there).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import pytest

from pysched.calendar import Cron
from pysched.calendar._cron_fields import CronFields

from support.calendar_reference import UTC, changes, offsets, zone_of

SECOND = timedelta(seconds=1)
HORIZON = timedelta(hours=3)  # how far the brute force tries
POLICIES = [(n, a) for n in ("shift", "skip") for a in ("first", "second", "both")]

# Each expression with what it matches, written out independently of any parser.
EXPRESSIONS: dict[str, Callable[[datetime], bool]] = {
    "* * * * * *": lambda d: True,
    "*/7 * * * * *": lambda d: d.second % 7 == 0,
    "13 */2 * * * *": lambda d: d.second == 13 and d.minute % 2 == 0,
    "*/7 30-59 1 * * *": lambda d: d.second % 7 == 0 and d.minute >= 30 and d.hour == 1,
}
ZONES = [("America/New_York", 2025), ("Australia/Lord_Howe", 2025), ("Antarctica/Troll", 2024)]


def brute_next(cron: Cron, matches: Callable[[datetime], bool], t: datetime) -> datetime | None:
    """The first fire time after ``t`` within HORIZON, trying every whole second: an
    instant fires if its local time matches and the policy lets that occurrence fire,
    or if the clocks jumped forward over a matching local time there (under "shift")."""
    zone = cron.tz
    u = t.replace(microsecond=0) + SECOND
    previous = (u - SECOND).astimezone(zone).utcoffset()
    while u <= t + HORIZON:
        aware = u.astimezone(zone)
        offset = aware.utcoffset()
        local = aware.replace(tzinfo=None, fold=0)
        if matches(local):
            off0, off1 = offsets(local, zone)
            elapsed = (cron.period is not None
                       and abs(off0 - off1).total_seconds() % cron.period == 0)
            if (off0 == off1 or elapsed or cron.ambiguous == "both"
                    or (cron.ambiguous == "first") == (aware.fold == 0)):
                return u
        jump = offset - previous  # type: ignore[operator]
        if (jump > timedelta(0) and cron.nonexistent == "shift"
                and not (cron.period is not None and jump.total_seconds() % cron.period == 0)):
            skipped = (u + previous).replace(tzinfo=None)  # type: ignore[operator]
            if any(matches(skipped + k * SECOND) for k in range(int(jump.total_seconds()))):
                return u
        previous = offset
        u += SECOND
    return None


def probes(change: datetime, size: timedelta, rng: random.Random) -> Iterator[datetime]:
    """Instants around a change of ``size`` at ``change``: each end of each pass, either
    side of them, and a few anywhere near."""
    micro = timedelta(microseconds=1)
    for offset in (-size - HORIZON / 3, -size - SECOND, -size, -size + SECOND / 2, -micro,
                   timedelta(0), SECOND / 2, size - micro, size, size + SECOND / 2):
        yield change + offset
    for _ in range(3):
        yield change + timedelta(seconds=rng.uniform(-size.total_seconds() - 3600,
                                                     size.total_seconds() + 3600))


def cases() -> Iterator[tuple[str, str, datetime]]:
    for key, year in ZONES:
        for change in changes(zone_of(key), year):
            if change.year != year:  # one year of changes: one each way
                continue
            for expr in EXPRESSIONS:
                # the last one matches in New York's repeated hour only
                if expr.endswith(" 1 * * *") and (key, change.month) != ("America/New_York", 11):
                    continue
                yield expr, key, change


@pytest.mark.parametrize(("expr", "key", "change"), list(cases()),
                         ids=lambda v: v.isoformat() if isinstance(v, datetime) else v)
def test_fire_times_around_a_change_agree_with_trying_every_second(expr, key, change):
    zone = zone_of(key)
    size = abs((change - SECOND).astimezone(zone).utcoffset()  # type: ignore[operator]
               - change.astimezone(zone).utcoffset())
    rng = random.Random(f"{expr} {key} {change}")
    for nonexistent, ambiguous in POLICIES:
        cron = Cron(expr, tz=key, nonexistent=nonexistent, ambiguous=ambiguous)
        for t in probes(change, size, rng):
            expected = brute_next(cron, EXPRESSIONS[expr], t)
            found = cron.next_after(t)
            got = None if found is None else found.astimezone(UTC)
            if expected is not None:
                assert got == expected, (expr, key, nonexistent, ambiguous, t, got, expected)
            else:  # nothing within the horizon
                assert got is None or got > t + HORIZON, (expr, key, ambiguous, t, got)


@pytest.fixture
def examined(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many of the expression's matches the searches look at: one count per search."""
    counts = [0]
    matches_after = CronFields.matches_after

    def counting(self: CronFields, local: datetime) -> Iterator[datetime]:
        for m in matches_after(self, local):
            counts[-1] += 1
            yield m

    monkeypatch.setattr(CronFields, "matches_after", counting)
    return counts


@pytest.mark.parametrize("expr", list(EXPRESSIONS))
@pytest.mark.parametrize("ambiguous", ["first", "second", "both"])
def test_a_search_in_a_repeated_hour_looks_at_a_few_matches(examined, expr, ambiguous):
    cron = Cron(expr, tz="America/New_York", ambiguous=ambiguous)
    change = datetime(2025, 11, 2, 6, 0, tzinfo=UTC)  # 02:00 EDT becomes 01:00 EST
    rng = random.Random(0)
    # from two hours before the repeated hour to its end, in either pass
    for _ in range(40):
        examined.append(0)
        cron.next_after(change + timedelta(seconds=rng.uniform(-3 * 3600, 3600)))
    assert max(examined[1:]) <= 8, examined
