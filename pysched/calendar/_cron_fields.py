"""Cron syntax: the expression's fields, the naive local times it matches, its period.

Parsing and naive (wall-clock) matching are cronsim's: Vixie cron's five
fields with names, ranges, steps and lists, the day-of-month/day-of-week rule
(OR, unless either field starts with ``*``, then AND), an optional leading
seconds field, ``L`` and ``LW`` in day-of-month, ``5L`` or ``L5`` (last Friday)
and ``MON#2`` in day-of-week. The macros and the error messages that point at a
field are ours. Time zones are not cronsim's business here: it only ever sees
naive local times, and ``pysched.calendar.cron`` maps them to instants.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from datetime import datetime, timedelta

from cronsim import CronSim, CronSimError

__all__ = ["CronFields", "MACROS"]

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

    __slots__ = ("expr", "text", "fields", "period", "_proto")

    def __init__(self, expr: str) -> None:
        if not isinstance(expr, str):
            raise TypeError(f"expr must be a str, not {type(expr).__name__}")
        self.expr = expr
        self.text, self.fields = _normalize(expr)
        try:
            self._proto = CronSim(self.text, datetime(2000, 1, 1))
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
        return self._proto.explain()

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
