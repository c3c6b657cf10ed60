"""Cron syntax: the expression's fields, the naive local times it matches, its period.

Parsing and naive (wall-clock) matching are cronsim's: Vixie cron's five
fields with names, ranges, steps and lists, the day-of-month/day-of-week rule
(OR, unless either field starts with ``*``, then AND), an optional leading
seconds field, ``L`` and ``LW`` in day-of-month, ``5L`` or ``L5`` (last Friday)
and ``MON#2`` in day-of-week. The macros, the error messages that point at a
field and ``nW`` (or ``Wn``) in day-of-month are ours: cronsim does not read
``W``. ``nW`` is the weekday nearest day n within its month, as croniter and
Quartz read it: a Saturday moves to the Friday before, a Sunday to the Monday
after, unless that leaves the month (``1W`` on a Saturday is Monday the 3rd);
an n past the month's end stands for its last day (``31W`` in April is the
weekday nearest April 30). Like Quartz and croniter, ``W`` takes a single day,
never a list, range or step. Beside a restricted day-of-week it follows the
rule above as any day-of-month does. Time zones are not cronsim's business
here: it only ever sees naive local times, and ``pysched.calendar.cron`` maps
them to instants.
"""

from __future__ import annotations

import calendar
import copy
import re
from collections.abc import Iterator
from datetime import date, datetime, timedelta

from cronsim import CronSim, CronSimError
from cronsim.explain import Expression

__all__ = ["CronFields", "MACROS", "nearest_weekday"]

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_FIVE = ("minute", "hour", "day-of-month", "month", "day-of-week")
_SIX = ("second",) + _FIVE
_ONE_SECOND = timedelta(seconds=1)
_LAST_WEEKDAY = re.compile(r"^[Ll]([0-7]|[A-Za-z]{3})$")
_ALL_WEEKDAYS = frozenset(range(7))
_NEAREST_WEEKDAY = re.compile(r"^(?:([0-9]+)W|W([0-9]+))$", re.IGNORECASE)
_SATURDAY, _SUNDAY = 5, 6


def nearest_weekday(year: int, month: int, day: int) -> int:
    """The day of the month that ``dayW`` means: the weekday (Monday to Friday) nearest
    ``day``, never outside the month; a ``day`` past the month's end is its last day."""
    last = calendar.monthrange(year, month)[1]
    day = min(day, last)
    weekday = calendar.weekday(year, month, day)
    if weekday == _SATURDAY:
        return day - 1 if day > 1 else day + 2
    if weekday == _SUNDAY:
        return day + 1 if day < last else day - 2
    return day


class _NearestWeekdaySim(CronSim):
    """cronsim whose day-of-month is one ``nW``; cronsim parsed a plain day in its place,
    which keeps the day-of-month/day-of-week rule (the field does not start with ``*``)."""

    nearest_day = 1

    def match_dom(self, d: date) -> bool:
        return d.day == nearest_weekday(d.year, d.month, self.nearest_day)


def _nearest_day(day_of_month: str) -> int | None:
    """n of a day-of-month ``nW`` or ``Wn``; None without a W; "Bad day-of-month"
    (cronsim's wording, located by ``CronFields``) for a W it cannot mean."""
    if "W" not in day_of_month.upper() or day_of_month.upper() == "LW":
        return None
    found = _NEAREST_WEEKDAY.match(day_of_month)
    if found is None:
        raise CronSimError("Bad day-of-month")
    day = int(found.group(1) or found.group(2))
    if not 1 <= day <= 31:
        raise CronSimError("Bad day-of-month")
    return day


def _normalize(expr: str) -> tuple[str, list[str]]:
    """(the expression cronsim sees, its fields) or ValueError naming what is wrong."""
    text = expr.strip()
    if text.startswith("@"):
        try:
            text = MACROS[text.lower()]
        except KeyError:
            raise ValueError(f"expr: unknown macro {expr!r}; known: "
                             f"{', '.join(MACROS)}") from None
    fields = text.split()
    if len(fields) not in (5, 6):
        raise ValueError(f"expr: {expr!r} has {len(fields)} fields; a cron expression has 5 "
                         f"(minute hour day-of-month month day-of-week) or 6 (a leading "
                         f"second field first)")
    # croniter spells "last Friday" L5, cronsim 5L: take both.
    dow = ",".join(_LAST_WEEKDAY.sub(r"\1L", term) for term in fields[-1].split(","))
    return " ".join(fields[:-1] + [dow]), fields


class CronFields:
    """One parsed cron expression, matched against naive local times."""

    __slots__ = ("expr", "text", "fields", "period", "nearest_day", "_proto")

    def __init__(self, expr: str) -> None:
        if not isinstance(expr, str):
            raise TypeError(f"expr must be a str, not {type(expr).__name__}")
        self.expr = expr
        self.text, self.fields = _normalize(expr)
        try:
            self.nearest_day = _nearest_day(self.fields[-3])
            if self.nearest_day is None:
                self._proto = CronSim(self.text, datetime(2000, 1, 1))
            else:
                parts = self.text.split()
                parts[-3] = "1"  # any plain day: match_dom reads nearest_day instead
                self._proto = _NearestWeekdaySim(" ".join(parts), datetime(2000, 1, 1))
                self._proto.nearest_day = self.nearest_day
        except CronSimError as exc:
            raise ValueError(self._locate(str(exc))) from None
        self.period = self._fixed_period()

    def _locate(self, message: str) -> str:
        """cronsim's "Bad <field>" message, pointing at the field's text."""
        names = _SIX if len(self.fields) == 6 else _FIVE
        for index, name in enumerate(names):
            if message == f"Bad {name}":
                return (f"expr: {self.expr!r}: field {index + 1} ({name}) {self.fields[index]!r} "
                        f"is malformed, out of range, or can never match")
        return f"expr: {self.expr!r}: {message}"

    def matches_after(self, local: datetime) -> Iterator[datetime]:
        """The naive local times the expression matches, strictly after ``local``, in order.

        Ends (about 50 years on, cronsim's horizon, or at the end of the
        calendar) when there is no further match.
        """
        # A copy of the parsed prototype, moved to ``local``: cronsim parses in
        # its constructor, which would otherwise be half the cost of a search.
        # Like the constructor, it drops the microseconds and starts one second on.
        it = copy.copy(self._proto)
        it.dt = local.replace(microsecond=0)
        while True:
            try:
                yield next(it)
            except (StopIteration, OverflowError):
                return

    def matches_from(self, local: datetime) -> Iterator[datetime]:
        """As ``matches_after`` but including ``local`` itself (whole seconds)."""
        return self.matches_after(local - _ONE_SECOND)

    def explain(self) -> str:
        """cronsim's description of the fields in English."""
        words = self._proto.explain()
        if self.nearest_day is None:
            return words
        # cronsim's words for day n itself, not for the plain day put in the W's place
        parts = list(self._proto.parts)  # six fields: cronsim adds the seconds
        parts[3] = str(self.nearest_day)
        words = Expression(parts).explain()
        return (f"{words}, moved to the nearest weekday (Monday to Friday) within the month"
                f" when it falls on a weekend")

    def _fixed_period(self) -> int | None:
        """The period in seconds if the expression is fixed-interval, else None.

        Fixed-interval: it matches every day (every day of month, every month,
        every weekday) and its times of day are evenly spaced with a period P
        shorter than a day that divides a day, so the grid runs on across
        midnight. That is:
        every hour, with the times within the hour P apart and P dividing an
        hour (``*/30 * * * *``, ``*/10 * * * * *``, ``0 * * * *``); or one time
        within the hour, at hours h apart with h < 24 dividing 24
        (``0 */2 * * *``, P = 2 h).
        """
        proto = self._proto
        if (proto.days != set(range(1, 32)) or proto.months != set(range(1, 13))
                or not {d for d in proto.weekdays if isinstance(d, int)} >= _ALL_WEEKDAYS):
            return None
        within = sorted(60 * m + s for m in proto.minutes for s in proto.seconds)
        hours = sorted(proto.hours)
        if len(hours) == 24:
            step = _even_step(within, 3600)
            return step
        if len(within) == 1 and len(hours) > 1:
            step = _even_step(hours, 24)
            return None if step is None else step * 3600
        return None


def _even_step(values: list[int], cycle: int) -> int | None:
    """The common gap of sorted ``values`` repeating every ``cycle``, or None if uneven."""
    step = cycle // len(values)
    if step * len(values) != cycle:
        return None
    if any(b - a != step for a, b in zip(values, values[1:], strict=False)):
        return None
    return step
