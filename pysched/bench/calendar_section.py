"""The calendar section: many interval series in one pool, beside APScheduler 3 when installed.

A small run of ``calendar_workloads.compare`` (each competitor in turns, each
turn a fresh process): the quick default is 1,000 series for 3 s, so the
first command of the README stays quick; ``--full`` runs 10,000 series for
20 s, three turns each. The 100,000-series, 60 s comparison quoted in
docs/calendar.md is ``benchmarks/bench_calendar.py``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from . import calendar_workloads as workloads
from .plan import Row, Step

SECTION = "calendar"
WORKERS = 10  # APScheduler's default ThreadPoolExecutor
# Seconds to start a turn's process and add its series before the window: far less
# than the stand-alone benchmark's, whose 100,000 series take seconds to add.
LEAD_BASE = 2.0
LEAD_PER_SERIES = 4e-4

__all__ = ["SECTION", "steps", "table"]


def competitors() -> list[str]:
    """pysched, and APScheduler 3 if it imports."""
    names = [workloads.PYSCHED]
    if workloads.apscheduler_available():
        names.append(workloads.APSCHEDULER)
    return names


def _rows(series: int, seconds: int, repeats: int) -> list[Row]:
    result = workloads.compare(series, seconds, repeats, workers=WORKERS,
                               lead=LEAD_BASE + series * LEAD_PER_SERIES,
                               competitors=competitors())
    settings = {key: result[key] for key in ("series", "seconds", "repeats", "workers")}
    return [{"section": SECTION, "workload": "series", "param": "series", "size": series,
             "competitor": name.lower(), "label": name, **settings, "turns": turns}
            for name, turns in result["turns"].items()]


def steps(series: int, seconds: int, repeats: int) -> list[Step]:
    """One step: every competitor, ``repeats`` turns each."""
    return [Step(f"calendar, {series:,} interval series for {seconds} s x {repeats}, in turns",
                 partial(_rows, series, seconds, repeats))]


def table(rows: Sequence[Row]) -> list[str]:
    """``calendar_workloads.render``'s table of the section's rows; nothing without rows."""
    if not rows:
        return []
    first = rows[0]
    result: dict[str, Any] = {key: first[key] for key in ("series", "seconds", "repeats",
                                                         "workers")}
    result["turns"] = {row["label"]: row["turns"] for row in rows}
    return ["calendar: " + workloads.render(result)]
