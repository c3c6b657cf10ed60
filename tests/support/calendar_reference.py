"""A brute-force reference for Cron: croniter's naive local matches, the DST policy applied
to each match on its own, the earliest instant after t taken from all of them.

It shares no search logic with pysched.calendar: it reads the zone with zoneinfo's
fold, finds a gap's transition by stepping a minute at a time, and keeps taking
croniter matches until no later match can give an earlier instant.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from croniter import croniter

UTC = timezone.utc
MINUTE = timedelta(minutes=1)
# Every zone's offset lies within this many hours of its offset a day earlier.
SLACK = timedelta(hours=3)


def offsets(local: datetime, zone) -> tuple[timedelta, timedelta]:
    return (local.replace(tzinfo=zone, fold=0).utcoffset(),
            local.replace(tzinfo=zone, fold=1).utcoffset())


def transition_after(instant: datetime, zone) -> datetime:
    """The first instant after ``instant`` (aware UTC) whose offset differs."""
    before = instant.astimezone(zone).utcoffset()
    probe = instant.replace(second=0, microsecond=0)
    while (probe + MINUTE).astimezone(zone).utcoffset() == before:
        probe += MINUTE
    probe += MINUTE
    while (probe - timedelta(seconds=1)).astimezone(zone).utcoffset() != before:
        probe -= timedelta(seconds=1)
    return probe


def policy_instants(local: datetime, zone, nonexistent: str, ambiguous: str,
                    period: int | None) -> list[datetime]:
    """The fire instants (aware UTC) of one naive local match under the policy."""
    off0, off1 = offsets(local, zone)
    first = (local - off0).replace(tzinfo=UTC)
    second = (local - off1).replace(tzinfo=UTC)
    if off0 == off1:
        return [first]
    change = abs(off0 - off1).total_seconds()
    elapsed = period is not None and change % period == 0
    if off0 > off1:  # repeated
        if elapsed or ambiguous == "both":
            return [first, second]
        return [first] if ambiguous == "first" else [second]
    if elapsed or nonexistent == "skip":
        return []
    return [transition_after(second, zone)]


def reference_next(expr: str, zone, t: datetime, nonexistent: str = "shift",
                   ambiguous: str = "first", period: int | None = None) -> datetime | None:
    """The first fire instant strictly after aware ``t``, by brute force."""
    local = t.astimezone(zone).replace(tzinfo=None, fold=0)
    it = croniter(expr, local - SLACK, implement_cron_bug=True, second_at_beginning=True)
    best = None
    for _ in range(200_000):
        m = it.get_next(datetime)
        if best is not None and m - SLACK > best.astimezone(zone).replace(tzinfo=None):
            return best
        for u in policy_instants(m, zone, nonexistent, ambiguous, period):
            if u > t and (best is None or u < best):
                best = u
    raise AssertionError(f"reference ran out of matches for {expr!r}")


NAMES_DOW = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
NAMES_MON = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]


def _field(rng: random.Random, lo: int, hi: int, names: list[str] | None = None,
           star_weight: float = 0.3) -> str:
    def value(v: int) -> str:
        if names is not None and rng.random() < 0.3:
            return names[v - lo]
        return str(v)

    roll = rng.random()
    if roll < star_weight:
        return "*"
    if roll < star_weight + 0.15:
        return f"*/{rng.randint(2, max(2, (hi - lo) // 2))}"
    if roll < star_weight + 0.35:
        return value(rng.randint(lo, hi))
    # Ranges have distinct ends: croniter reads a range like 13-13/3 as the
    # whole cycle from 13, Vixie cron and cronsim as just 13.
    if roll < star_weight + 0.5:
        a = rng.randint(lo, hi - 1)
        b = rng.randint(a + 1, hi)
        return f"{value(a)}-{value(b)}"
    if roll < star_weight + 0.6:
        a = rng.randint(lo, hi - 1)
        b = rng.randint(a + 1, hi)
        return f"{a}-{b}/{rng.randint(1, 5)}"
    picks = sorted(rng.sample(range(lo, hi + 1), rng.randint(2, 4)))
    return ",".join(value(v) for v in picks)


def random_expression(rng: random.Random, nearest_weekday: bool = False) -> str:
    """A random expression in the syntax croniter and pysched both accept
    (with ``nearest_weekday``, always with a W day-of-month)."""
    minute = _field(rng, 0, 59, star_weight=0.15)
    hour = _field(rng, 0, 23, star_weight=0.35)
    dom = _field(rng, 1, 28, star_weight=0.6)
    month = _field(rng, 1, 12, NAMES_MON, star_weight=0.7)
    dow = _field(rng, 0, 6, NAMES_DOW, star_weight=0.6)
    special = 0.15 if nearest_weekday else rng.random()
    # croniter reads MON#2 or L5 beside a restricted day-of-month as AND (and
    # sometimes finds no date), cron's rule and cronsim as OR: the two
    # agree with the day-of-month left as *.
    if special < 0.04:
        dom = "L"
    elif special < 0.08:
        dom, dow = "*", f"{rng.choice(NAMES_DOW)}#{rng.randint(1, 4)}"
    elif special < 0.11:
        dom, dow = "*", f"L{rng.randint(0, 6)}"
    elif special < 0.16:
        # W beside a restricted day-of-week: croniter ANDs, cron's rule ORs (see above);
        # days 29 to 31 are past the end of some months, where W means the last day
        dom, dow = rng.choice(["{}W", "W{}", "{}w"]).format(rng.randint(1, 31)), "*"
    fields = [minute, hour, dom, month, dow]
    if rng.random() < 0.2:
        # seconds: mostly sparse, so the brute-force reference stays quick
        fields.insert(0, rng.choice(["0", "30", "15,45", "*/20", "5-10", str(rng.randint(0, 59))]))
    return " ".join(fields)


ZONES = {
    "UTC": ("UTC", 2025),
    "Europe/Berlin": ("Europe/Berlin", 2025),
    "America/New_York": ("America/New_York", 2025),
    "America/Santiago": ("America/Santiago", 2025),
    "Australia/Lord_Howe": ("Australia/Lord_Howe", 2025),
    # Iran dropped DST after 2022: its last two years with clock changes.
    "Asia/Tehran": ("Asia/Tehran", 2021),
}


# Odd changes, for the slow sweep: two hours (Troll), a 30-minute step back
# (Caracas 2007) and forward (2016), DST suspended for Ramadan (Casablanca),
# a negative DST (Dublin), a last change to permanent summer time (Moscow).
EXTRA_ZONES = {
    "Antarctica/Troll": ("Antarctica/Troll", 2024),
    "America/Caracas 2007": ("America/Caracas", 2007),
    "America/Caracas 2015": ("America/Caracas", 2015),
    "Africa/Casablanca": ("Africa/Casablanca", 2019),
    "Europe/Dublin": ("Europe/Dublin", 2024),
    "Europe/Moscow": ("Europe/Moscow", 2010),
}


def zone_of(name: str):
    return UTC if name == "UTC" else ZoneInfo(name)


def random_instant(rng: random.Random, first_year: int) -> datetime:
    """A random instant in the two years from first_year, whole minutes half the time."""
    start = datetime(first_year, 1, 1, tzinfo=UTC)
    seconds = rng.randrange(2 * 365 * 86400)
    if rng.random() < 0.5:
        seconds -= seconds % 60
    return start + timedelta(seconds=seconds)


def changes(zone, first_year: int) -> list[datetime]:
    """The instants (aware UTC) of the zone's offset changes in the two years from first_year."""
    out = []
    t = datetime(first_year, 1, 1, tzinfo=UTC)
    end = datetime(first_year + 2, 1, 1, tzinfo=UTC)
    step = timedelta(hours=6)
    while t < end:
        if (t + step).astimezone(zone).utcoffset() != t.astimezone(zone).utcoffset():
            out.append(transition_after(t, zone))
        t += step
    return out
