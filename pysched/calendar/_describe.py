"""``Cron.describe()``: the fields in English (cronsim's wording), the zone and the DST policy."""

from __future__ import annotations

from datetime import tzinfo

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


def _duration(seconds: int) -> str:
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def describe(fields: CronFields, zone: tzinfo, nonexistent: str, ambiguous: str) -> str:
    """One sentence, with the zone and, outside UTC, the DST policy."""
    words = fields.explain()
    name = str(zone)
    if name == "UTC":
        return f"{words} (UTC)"
    if fields.period is not None:
        every = _duration(fields.period)
        dst = (f"runs every {every} of elapsed time across a clock change by a multiple of "
               f"{every}; otherwise {_NONEXISTENT[nonexistent]} and {_AMBIGUOUS[ambiguous]}")
    else:
        dst = f"{_NONEXISTENT[nonexistent]}; {_AMBIGUOUS[ambiguous]}"
    return f"{words} ({name} time); {dst}"
