"""``Cron.describe()``: the fields in English (cronsim's wording), the zone and the DST policy."""

from __future__ import annotations

from typing import Protocol

from ._cron_fields import CronFields

__all__ = ["describe"]

_NONEXISTENT = {
    "shift": "a time skipped by a clock change runs when the clocks change",
    "skip": "a time skipped by a clock change does not run",
}
_AMBIGUOUS = {
    "first": "a time repeated by a clock change runs on its first occurrence",
    "second": "a time repeated by a clock change runs on its second occurrence",
    "both": "a time repeated by a clock change runs on both occurrences",
}


class _Described(Protocol):
    _fields: CronFields
    nonexistent: str
    ambiguous: str

    @property
    def tz(self) -> object: ...


def _duration(seconds: int) -> str:
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def describe(cron: _Described) -> str:
    """One sentence (and a DST clause where a zone has clock changes)."""
    fields = cron._fields
    words = fields.explain()
    zone = str(cron.tz)
    if zone == "UTC":
        return f"{words} (UTC)"
    if fields.period is not None:
        every = _duration(fields.period)
        dst = (f"runs every {every} of elapsed time across a clock change by a multiple of "
               f"{every}; otherwise {_NONEXISTENT[cron.nonexistent]} and "
               f"{_AMBIGUOUS[cron.ambiguous]}")
    else:
        dst = f"{_NONEXISTENT[cron.nonexistent]}; {_AMBIGUOUS[cron.ambiguous]}"
    return f"{words} ({zone} time); {dst}"
