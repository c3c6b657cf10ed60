"""``Cron``: a cron expression in a time zone, with an explicit DST policy.

Fire times are instants. A naive local time the expression matches gives:

- one instant when it exists once;
- at an overlap (clocks set back, the time happens twice): the first
  occurrence, the second, or both (``ambiguous``);
- in a gap (clocks set forward, the time never happens): the instant the
  clocks changed (``nonexistent="shift"``; several times in one gap fire once
  there) or nothing (``"skip"``).

A fixed-interval expression (see ``CronFields._fixed_period``) of period P
follows elapsed time instead at any change whose size is a multiple of P: it
fires at every instant whose local time matches, both occurrences of a
repeated time and nothing in a gap, so its fires stay exactly P apart and
neither policy applies.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone, tzinfo

from .._validate import check_choice
from ._cron_fields import CronFields
from ._describe import describe
from ._preview import check_preview_count
from ._readings import Reading
from ._zones import AMBIGUOUS, NONEXISTENT, Placement, place, resolve_tz, transition_instant

__all__ = ["AMBIGUOUS_CHOICES", "NONEXISTENT_CHOICES", "Cron", "CronFires", "check_aware"]

NONEXISTENT_CHOICES = ("shift", "skip")
AMBIGUOUS_CHOICES = ("first", "second", "both")

# How far next_after looks: a new match iterator after each gap would
# otherwise renew cronsim's own horizon and search to the end of the calendar.
HORIZON_YEARS = 50

_UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1)
_ONE_SECOND = timedelta(seconds=1)


def check_aware(dt: object, name: str) -> datetime:
    """Return ``dt`` if it is an aware datetime, else raise naming ``name``."""
    if not isinstance(dt, datetime):
        raise TypeError(f"{name} must be a datetime, not {type(dt).__name__}")
    if dt.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {dt!r}")
    return dt


class CronFires:
    """A cron series' fire times on the POSIX timestamp (wall-clock) scale."""

    __slots__ = ("_cron", "_origin")

    timeline = "wall"

    def __init__(self, cron: Cron, origin: float) -> None:
        self._cron = cron
        self._origin = origin

    def first(self) -> float | None:
        return self._cron.next_fire(self._origin)

    def next_fire(self, after: float) -> float | None:
        return self._cron.next_fire(after)

    def after_run(self, end: float) -> CronFires:
        """Calendar fire times do not depend on when runs end."""
        return self


class Cron:
    """A cron schedule in a time zone.

    ``expr``: five fields (minute hour day-of-month month day-of-week), or six
    with a leading second field, or a macro (``@hourly``, ``@daily``,
    ``@weekly``, ``@monthly``, ``@yearly``). ``tz``: a zoneinfo key or a
    ``ZoneInfo`` (None: UTC). ``nonexistent`` ("shift" or "skip") and
    ``ambiguous`` ("first", "second" or "both") are the DST policy; see
    docs/calendar.md. A malformed expression is a ValueError naming the field.
    """

    __slots__ = ("_fields", "_zone", "nonexistent", "ambiguous")

    def __init__(self, expr: str, *, tz: str | tzinfo | None = None,
                 nonexistent: str = "shift", ambiguous: str = "first") -> None:
        self._fields = CronFields(expr)
        self._zone = resolve_tz(tz)
        self.nonexistent = check_choice(nonexistent, "nonexistent", NONEXISTENT_CHOICES)
        self.ambiguous = check_choice(ambiguous, "ambiguous", AMBIGUOUS_CHOICES)

    @property
    def expr(self) -> str:
        """The expression as given."""
        return self._fields.expr

    @property
    def tz(self) -> tzinfo:
        """The zone the expression is read in."""
        return self._zone

    @property
    def period(self) -> int | None:
        """The period in seconds if the expression is fixed-interval, else None."""
        return self._fields.period

    def __repr__(self) -> str:
        return (f"Cron({self.expr!r}, tz={str(self._zone)!r}, nonexistent={self.nonexistent!r}, "
                f"ambiguous={self.ambiguous!r})")

    def next_after(self, dt: datetime) -> datetime | None:
        """The first fire time strictly after aware ``dt``, in the trigger's zone.

        None when there is none within 50 years (an expression that
        only matches times that never exist, under ``nonexistent="skip"``,
        or the end of the calendar). Naive ``dt``: ValueError.
        """
        check_aware(dt, "dt")
        found = self._search(dt.astimezone(_UTC).replace(tzinfo=None), "dt")
        return None if found is None else found.replace(tzinfo=_UTC).astimezone(self._zone)

    def next_fire(self, after: float) -> float | None:
        """``next_after`` on the POSIX timestamp scale."""
        # Rounded down to the microsecond, never up: fire times are whole
        # seconds, and rounding a time just before one up onto it would pass it.
        whole = math.floor(after)
        micros = math.floor((after - whole) * 1_000_000)
        found = self._search(_EPOCH + timedelta(seconds=whole, microseconds=micros), "after")
        return None if found is None else (found - _EPOCH).total_seconds()

    def fires(self, now: Reading, timeline: str = "wall") -> CronFires:
        """The fire times of a series scheduled at ``now``: the first is after ``now.wall``.

        Calendar fire times are wall-clock instants: ``timeline`` must be "wall".
        """
        check_choice(timeline, "timeline", ("wall",))
        return CronFires(self, now.wall)

    def preview(self, n: int, after: datetime | None = None) -> list[datetime]:
        """The next ``n`` (at most ``MAX_PREVIEW``) fire times after ``after`` (default:
        now); fewer if they run out."""
        n = check_preview_count(n)
        current = datetime.now(_UTC) if after is None else check_aware(after, "after")
        out: list[datetime] = []
        while len(out) < n:
            found = self.next_after(current)
            if found is None:
                break
            out.append(found)
            current = found
        return out

    def describe(self) -> str:
        """What the schedule means, in words."""
        return describe(self._fields, self._zone, self.nonexistent, self.ambiguous)

    def _search(self, t: datetime, name: str) -> datetime | None:
        """``_next_utc``, with the ends of the calendar: None past the end, an error at
        the start (local times before year 1 cannot be represented)."""
        try:
            return self._next_utc(t)
        except OverflowError:
            if t.year > 9000:
                return None
            raise ValueError(f"{name} is too close to the start of the calendar for "
                             f"{self._zone}: {t} UTC") from None

    def _next_utc(self, t: datetime) -> datetime | None:
        """The first fire instant strictly after instant ``t`` (both naive UTC).

        Walks the expression's matches in local time from ``t``'s. Instants
        follow local times in order, except within a repeated stretch, whose
        two passes come one after the other: the walk settles a repeated
        stretch in one step (``_in_repeat``) and goes on after it, and jumps
        over a gap, all of whose matches give one instant or none.
        """
        zone = self._zone
        local = t.replace(tzinfo=_UTC).astimezone(zone).replace(tzinfo=None, fold=0)
        horizon = local.year + HORIZON_YEARS
        here = place(local.replace(microsecond=0), zone)
        if here.kind == AMBIGUOUS:  # t is in a repeated stretch, in either pass
            found, after = self._in_repeat(here, local.replace(microsecond=0), t)
            if found is not None:
                return found
            matches = self._fields.matches_from(after)
        else:
            matches = self._fields.matches_after(local)
        while (m := next(matches, None)) is not None and m.year <= horizon:
            spot = place(m, zone)
            if spot.kind == NONEXISTENT:
                changed = transition_instant(spot, zone)
                if not self._skips_gap(spot) and changed > t:
                    return changed
                # Every later match in this gap gives the same instant or none:
                # go on from the first local time after the gap.
                matches = self._fields.matches_from(m + (changed - spot.second))
            elif spot.kind == AMBIGUOUS:
                found, after = self._in_repeat(spot, m, t)
                if found is not None:
                    return found
                matches = self._fields.matches_from(after)
            elif spot.first > t:  # local times after t's that exist once: in order
                return spot.first
        return None

    def _in_repeat(self, spot: Placement, local: datetime,
                   t: datetime) -> tuple[datetime | None, datetime]:
        """The first fire instant after ``t`` in the repeated stretch of ``local``, a
        whole-second local time placed as ``spot``; else None and the local time
        the stretch ends at (exclusive), to go on from.

        The stretch's local times [start, end) happen first with the offset
        before the change, all of them, then again with the one after: the
        first pass's instants all come before the second's. In each pass the
        first match whose instant is after ``t`` is one search from
        ``max(start, t's local time in that pass)``, so the stretch costs a few
        searches however many times it matches.
        """
        zone = self._zone
        before, after = local - spot.first, local - spot.second  # the offsets
        changed = transition_instant(spot, zone)
        start, end = changed + after, changed + before
        passes: tuple[timedelta, ...] = (before, after)
        if not self._follows_elapsed_time(spot) and self.ambiguous != "both":
            passes = (before,) if self.ambiguous == "first" else (after,)
        for offset in passes:
            # matches_after reads whole seconds: the first match after t's local time
            # (t + offset) or, if t is before the stretch, the first from its start
            m = next(self._fields.matches_after(max(t + offset, start - _ONE_SECOND)), None)
            if m is not None and m < end:
                return m - offset, end
        return None, end

    def _follows_elapsed_time(self, spot: Placement) -> bool:
        period = self._fields.period
        return period is not None and spot.change.total_seconds() % period == 0

    def _skips_gap(self, spot: Placement) -> bool:
        return self.nonexistent == "skip" or self._follows_elapsed_time(spot)
