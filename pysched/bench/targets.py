"""The figures the issues ask for, read off a run's rows and set against their targets.

A target is looked up at the exact size its issue names, so a quick run
leaves most of them unmeasured rather than judging them at another size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .competitors import CORE
from .config import FULL
from .plan import Row


@dataclass(frozen=True)
class Target:
    """One promised figure: ``measure(rows)`` is compared with ``bound``."""

    issue: str
    text: str
    measure: Callable[[Sequence[Row]], float | None]
    bound: float
    at_least: bool  # True: the figure must be >= bound; False: <= bound
    unit: str

    def verdict(self, rows: Sequence[Row]) -> tuple[float | None, bool | None]:
        """(the figure, whether it meets the bound), or (None, None) if not measured."""
        value = self.measure(rows)
        if value is None:
            return None, None
        return value, value >= self.bound if self.at_least else value <= self.bound


def _field(rows: Sequence[Row], field: str, **where: Any) -> float | None:
    for row in rows:
        if all(row.get(key) == value for key, value in where.items()):
            return float(row[field])
    return None


def speedup(section: str, workload: str, size: int, over: str, pushes: int | None = None,
            ) -> Callable[[Sequence[Row]], float | None]:
    """The core's speedup over ``over`` on one workload at one size."""

    def measure(rows: Sequence[Row]) -> float | None:
        extra = {} if pushes is None else {"pushes": pushes}
        where = {"section": section, "workload": workload, "size": size, **extra}
        core = _field(rows, "ns_per_op", competitor=CORE, **where)
        other = _field(rows, "ns_per_op", competitor=over, **where)
        return None if core is None or other is None else other / core

    return measure


def field(field_name: str, **where: Any) -> Callable[[Sequence[Row]], float | None]:
    """One figure of the row matching ``where``."""
    return lambda rows: _field(rows, field_name, **where)


# The issue names no size for throughput; its figure is the full run's. The
# quick run's 10,000 tasks x 2 last a fraction of a second, and their ratio
# swung between 0.6x and 1.5x from one run to the next here.
THROUGHPUT_TASKS = FULL.throughput_tasks

TARGETS = [
    Target("core (#2)", "composite n=10,000: speedup over the pure twin",
           speedup("scheduler", "composite", 10_000, "py"), 4.0, True, "x"),
    Target("core (#2)", "composite n=1,000,000: speedup over the pure twin",
           speedup("scheduler", "composite", 1_000_000, "py"), 8.0, True, "x"),
    Target("core (#2)", "resident bytes per pending task, 1,000,000 pending",
           field("bytes_per_task", section="memory", size=1_000_000, competitor=CORE),
           120.0, False, " B"),
    Target("bounded queue (#3)", "churn, 1,000,000 pushes, C=1,000: speedup over the twin",
           speedup("bounded", "churn", 1_000, "py", 1_000_000), 5.0, True, "x"),
    Target("bounded queue (#3)", "churn, 1,000,000 pushes, C=100,000: speedup over twin",
           speedup("bounded", "churn", 100_000, "py", 1_000_000), 5.0, True, "x"),
    Target("runtime (#4)", "throughput ratio to ThreadPoolExecutor, pool[c].submit",
           field("ratio", section="runtime", workload="throughput", size=THROUGHPUT_TASKS,
                 label="ThreadPoolScheduler[c].submit"), 1.0, True, "x"),
    Target("runtime (#4)", "throughput ratio to ThreadPoolExecutor, pool[c].schedule",
           field("ratio", section="runtime", workload="throughput", size=THROUGHPUT_TASKS,
                 label="ThreadPoolScheduler[c].schedule"), 1.0, True, "x"),
    Target("runtime (#4)", "start lateness p99, 10,000 tasks over 1 s, pool[c]",
           field("p99_ms", section="runtime", workload="lateness", size=10_000,
                 label="ThreadPoolScheduler[c]"), 2.0, False, " ms"),
]


def evaluate(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Every target with its measured figure and verdict (None where not measured)."""
    found = []
    for target in TARGETS:
        value, ok = target.verdict(rows)
        found.append({"issue": target.issue, "target": target.text,
                      "bound": ("at least " if target.at_least else "at most ")
                      + f"{target.bound:g}{target.unit}",
                      "value": value, "ok": ok})
    return found


def lines(evaluated: Sequence[dict[str, Any]]) -> list[str]:
    """The targets as report lines."""
    out = ["targets from the issues, at the size each names (--full measures all);"
           " pool[c]: ThreadPoolScheduler on the Cython core"]
    for entry in evaluated:
        if entry["value"] is None:
            shown, verdict = "-", "not measured"
        else:
            shown = f"{entry['value']:,.2f}"
            verdict = "met" if entry["ok"] else "MISSED"
        out.append(f"  {entry['issue']:<19}{entry['target']:<57}{entry['bound']:>14}"
                   f"  {shown:>10} {verdict}".rstrip())
    return out
