"""Time zones and where a local wall time falls: once, twice or never.

A naive local time ``m`` read in a zone is classified with PEP 495's ``fold``:
zoneinfo gives ``fold=0`` the offset in force before a transition and
``fold=1`` the one after. Equal offsets: the time exists once. A larger
``fold=0`` offset: the clocks went back and the time happens twice (an
overlap). A smaller one: the clocks went forward and the time never happens
(a gap).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["UNIQUE", "AMBIGUOUS", "NONEXISTENT", "Placement", "place", "resolve_tz",
           "to_utc_naive", "transition_instant"]

UNIQUE = "unique"
AMBIGUOUS = "ambiguous"
NONEXISTENT = "nonexistent"

_ONE_SECOND = timedelta(seconds=1)


def resolve_tz(tz: object) -> tzinfo:
    """The zone for ``tz``: None is UTC, a str is a zoneinfo key, or a ZoneInfo/timezone."""
    if tz is None:
        return timezone.utc
    if isinstance(tz, str):
        try:
            return ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"tz: no time zone named {tz!r}") from exc
    if isinstance(tz, (ZoneInfo, timezone)):
        return tz
    # Other tzinfo classes (pytz, dateutil) do not all follow PEP 495's fold,
    # on which the DST policy depends.
    raise TypeError(f"tz must be a zoneinfo key, a ZoneInfo or a datetime.timezone, "
                    f"not {type(tz).__name__}")


@dataclass(frozen=True)
class Placement:
    """Where a naive local time falls. Instants are naive UTC datetimes.

    ``first`` and ``second`` are the instants read with ``fold=0`` and
    ``fold=1``: equal for a unique time; the two occurrences of an ambiguous
    time; for a nonexistent one, the instants either side of the gap's
    transition (``second < transition <= first``). ``change`` is the size of the
    offset change the time sits in (zero for a unique time).
    """

    kind: str
    first: datetime
    second: datetime
    change: timedelta


def to_utc_naive(local: datetime, zone: tzinfo, fold: int) -> datetime:
    """The UTC instant (naive) of naive local time ``local`` read with ``fold``."""
    aware = local.replace(tzinfo=zone, fold=fold)
    offset = aware.utcoffset()
    assert offset is not None  # ZoneInfo and timezone always give one
    return local - offset


def place(local: datetime, zone: tzinfo) -> Placement:
    """Classify naive local time ``local`` in ``zone`` (see the module docstring)."""
    first = to_utc_naive(local, zone, 0)
    second = to_utc_naive(local, zone, 1)
    if first == second:
        return Placement(UNIQUE, first, first, timedelta(0))
    if first < second:  # fold=0 offset larger: the clocks went back
        return Placement(AMBIGUOUS, first, second, second - first)
    return Placement(NONEXISTENT, first, second, first - second)


def _offset_at(instant: datetime, zone: tzinfo) -> timedelta:
    offset = instant.replace(tzinfo=timezone.utc).astimezone(zone).utcoffset()
    assert offset is not None
    return offset


def transition_instant(spot: Placement, zone: tzinfo) -> datetime:
    """The instant (naive UTC) of the clock change that made ``spot``'s time
    nonexistent (the clocks jumped over it) or ambiguous (they went back over it).

    Bisection on whole seconds between the instants read with the offset
    before and after the change (``second`` then ``first`` for a gap, ``first``
    then ``second`` for an overlap); tz transitions fall on whole seconds.
    """
    lo, hi = (spot.second, spot.first) if spot.kind == NONEXISTENT else (spot.first, spot.second)
    before = _offset_at(lo, zone)  # offset(lo) == before, offset(hi) != before
    # A zone changes between two offsets at most once within (lo, hi], a change's
    # size: the last change found between them is this one if it lies in there.
    key = (zone, before, _offset_at(hi, zone))
    last = _last_change.get(key)
    if last is not None and lo < last <= hi:
        return last
    while hi - lo > _ONE_SECOND:
        mid = lo + (hi - lo) // 2
        mid = mid.replace(microsecond=0)
        if mid <= lo:
            mid = lo + _ONE_SECOND
        if _offset_at(mid, zone) == before:
            lo = mid
        else:
            hi = mid
    _last_change[key] = hi
    return hi


# The last change found for each (zone, offset before, offset after): a series in a
# repeated or skipped stretch searches it again at each of its matches there.
_last_change: dict[tuple[tzinfo, timedelta, timedelta], datetime] = {}
