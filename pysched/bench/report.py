"""The text report: one table per workload, then memory, runtime and the log-n check.

Speedup is the competitor's time per operation divided by the Cython core's
on the same workload and size: 3.0x means the core does the same work in a
third of the time. Tables have a line per competitor, so more of them fit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .competitors import CORE
from .growth import FACTOR, GrowthCheck
from .plan import Row

CELL = 17  # width of one size's "ns/op speedup" cell
LABEL = 24  # width of the competitor column


def _ordered(values: Iterable[Any]) -> list[Any]:
    """Distinct values in first-seen order."""
    return list(dict.fromkeys(values))


def _cell(ns: float | None, core_ns: float | None, is_core: bool) -> str:
    if ns is None:
        return f"{'-':>{CELL}}"
    if core_ns is None or is_core:
        return f"{ns:>{CELL - 8},.0f}" + " " * 8
    speedup = ns / core_ns
    shown = f"{speedup:.0f}x" if speedup >= 100 else f"{speedup:.1f}x"
    return f"{ns:>{CELL - 8},.0f} {shown:>7}"


def speedup_table(rows: Sequence[Row], title: str, param: str, gaps: str = "") -> list[str]:
    """A line per competitor, the core first: its ns/op at each size and the core's speedup over it.

    ``gaps`` explains cells left out ("-"), if there are any.
    """
    labels = dict(_ordered((row["competitor"], row["label"]) for row in rows))
    sizes = _ordered(row["size"] for row in rows)
    ns = {(row["size"], row["competitor"]): row["ns_per_op"] for row in rows}
    has_core = CORE in labels
    lines = [title,
             (f"  {param:<{LABEL}}" + "".join(f"{size:>{CELL - 8},}" + " " * 8
                                             for size in sizes)).rstrip(),
             f"  {'':<{LABEL}}"
             + f"{'ns/op speedup' if has_core else 'ns/op':>{CELL}}" * len(sizes)]
    missing = False
    for key, label in labels.items():
        line = f"  {label:<{LABEL}}"
        for size in sizes:
            line += _cell(ns.get((size, key)), ns.get((size, CORE)), key == CORE)
            missing = missing or (size, key) not in ns
        lines.append(line.rstrip())
    if gaps and missing:
        lines.append(f"  -: {gaps}")
    return lines


def memory_table(rows: Sequence[Row]) -> list[str]:
    """Resident bytes per pending task, and what each keeps after draining to empty."""
    if not rows:
        return []
    n = rows[0]["size"]
    core = next((row["bytes_per_task"] for row in rows if row["competitor"] == CORE), None)
    lines = [f"memory with {n:,} tasks pending, each scheduler in a fresh process",
             f"  {'':<{LABEL}}{'B/task':>8}{'x core':>8}{'left after draining':>22}"]
    for row in rows:
        ratio = f"{row['bytes_per_task'] / core:.1f}x" if core else ""
        lines.append(f"  {row['label']:<{LABEL}}{row['bytes_per_task']:>8.0f}{ratio:>8}"
                     f"{row['after_drain'] * 100:>21.1f}%")
    lines.append("  B/task: resident bytes per pending task; left after draining: what its"
                 " allocations still hold once every task has run, as a share of their peak"
                 " (tracemalloc)")
    return lines


def contender_table(title: str, rows: Sequence[Row],
                    columns: Sequence[tuple[str, str, str]]) -> list[str]:
    """One line per row: its label, then each (heading, field, format spec) column."""
    if not rows:
        return []
    lines = [title, f"  {'contender':<36}" + "".join(f"{head:>11}" for head, _, _ in columns)]
    for row in rows:
        lines.append(f"  {row['label']:<36}"
                     + "".join(f"{format(row[field], spec):>11}" for _, field, spec in columns))
    return lines


def throughput_table(rows: Sequence[Row]) -> list[str]:
    """Tasks per second through the pools, and the ratio to ThreadPoolExecutor."""
    title = (f"runtime throughput: {rows[0]['size']:,} due no-op tasks through 4 workers"
             " (whole runs, start to shutdown, median of the repeats in turns, wall time;"
             " ratio: against ThreadPoolExecutor in the same idiom)") if rows else ""
    return contender_table(title, rows, [("tasks/s", "tasks_per_s", ",.0f"),
                                         ("ns/task", "ns_per_op", ",.0f"),
                                         ("ratio", "ratio", ".2f")])


def lateness_table(rows: Sequence[Row]) -> list[str]:
    """Start lateness percentiles per contender."""
    title = (f"runtime start lateness: {rows[0]['size']:,} tasks spread over"
             f" {rows[0]['span_s']:g} s, idle workers (start minus due time;"
             f" each figure the median of {rows[0].get('runs', 1)} runs in turns)") if rows else ""
    return contender_table(title, rows, [(f"{q} ms", f"{q}_ms", ".3f")
                                         for q in ("p50", "p90", "p99", "max")])


def growth_lines(checks: Mapping[str, GrowthCheck | None],
                 reference: Mapping[str, GrowthCheck | None]) -> list[str]:
    """The log-n check per workload (or why it was not made), the heapq baseline's beside it."""
    lines = [f"log-n check on the Cython core: ns/op / log2(n) at each size, relative to the"
             f" smallest; pass when every ratio is <= {FACTOR:g}",
             "  (beside it the largest ratio of the main heapq baseline: O(log n) by construction,"
             " slowed by the same caches)"]
    for title, result in checks.items():
        if result is None:
            lines.append(f"  {title:<24} not checked: needs sizes spanning 1,000 to 1,000,000"
                         " (--full)")
            continue
        ratios = "  ".join(f"{n:,}: {ratio:.2f}"
                           for n, ratio in zip(result.sizes, result.ratios, strict=True))
        verdict = "pass" if result.ok else "FAIL"
        lines.append(f"  {title:<24} {ratios}   fit ns/op ~ n^{result.exponent:.2f}   {verdict}")
        ref = reference.get(title)
        if ref is not None:
            lines.append(f"  {'':<24} heapq baseline: largest ratio {ref.worst:.2f},"
                         f" fit ns/op ~ n^{ref.exponent:.2f}")
    return lines


GROWTH_BASE = 10_000  # the size the cost at larger sizes is compared with


def cost_growth_lines(rows: Sequence[Row], workloads: Sequence[tuple[str, str]]) -> list[str]:
    """The core's ns/op at each size above GROWTH_BASE as a multiple of its ns/op there."""
    ns = {(row["workload"], row["size"]): row["ns_per_op"] for row in rows
          if row["competitor"] == CORE}
    lines = []
    for key, title in workloads:
        base = ns.get((key, GROWTH_BASE))
        larger = sorted(size for workload, size in ns if workload == key and size > GROWTH_BASE)
        if base and larger:
            lines.append(f"  {title:<24} " + "  ".join(
                f"{size:,}: {ns[key, size] / base:.2f}x" for size in larger))
    if not lines:
        return []
    return [f"cost growth of the Cython core: ns/op at each size over its ns/op at"
            f" n = {GROWTH_BASE:,}", *lines]


def header(machine: Mapping[str, Any], mode: str) -> list[str]:
    return [f"pysched {machine['pysched']} ({machine['pysched_implementation']} core),"
            f" Python {machine['python']} ({machine['python_implementation']}), {mode} run,"
            f" {machine['date']}",
            f"{machine['cpu_model']}, {machine['cores']} cores, {machine['platform']}",
            "Times per operation: CPU time of this process (median of repeats);"
            " speedup = competitor ns/op / pysched ns/op."]
