"""The text report: one table per workload, then memory, runtime and the log-n check.

Speedup is the competitor's time per operation divided by the Cython core's
on the same workload and size: 3.0x means the core does the same work in a
third of the time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .competitors import CORE
from .growth import FACTOR, GrowthCheck
from .plan import Row

CELL = 17  # width of one competitor's "ns/op speedup" cell


def _ordered(values: Iterable[Any]) -> list[Any]:
    """Distinct values in first-seen order."""
    return list(dict.fromkeys(values))


def _cell(ns: float | None, core_ns: float | None) -> str:
    if ns is None:
        return f"{'-':>{CELL}}"
    if core_ns is None:
        return f"{ns:>{CELL},.0f}"
    speedup = ns / core_ns
    shown = f"{speedup:.0f}x" if speedup >= 100 else f"{speedup:.1f}x"
    return f"{ns:>{CELL - 8},.0f} {shown:>7}"


def speedup_table(rows: Sequence[Row], title: str, param: str, gaps: str = "") -> list[str]:
    """ns/op of the core, then ns/op and speedup of each competitor, one line per size.

    ``gaps`` explains cells left out ("-"), if there are any.
    """
    labels = dict(_ordered((row["competitor"], row["label"]) for row in rows))
    others = [key for key in labels if key != CORE]
    has_core = CORE in labels
    ns = {(row["size"], row["competitor"]): row["ns_per_op"] for row in rows}
    head = f"{param:>10} " + (f"{labels[CORE]:>10} |" if has_core else "")
    sub = f"{'':>10} " + (f"{'ns/op':>10} |" if has_core else "")
    for key in others:
        head += f"{labels[key]:>{CELL}}"
        sub += f"{'ns/op speedup' if has_core else 'ns/op':>{CELL}}"
    lines = [title, head, sub]
    missing = False
    for size in _ordered(row["size"] for row in rows):
        core_ns = ns.get((size, CORE))
        line = f"{size:>10,} " + (f"{core_ns:>10,.0f} |" if has_core and core_ns else "")
        for key in others:
            line += _cell(ns.get((size, key)), core_ns)
            missing = missing or (size, key) not in ns
        lines.append(line)
    if gaps and missing:
        lines.append(f"  -: {gaps}")
    return lines


def memory_table(rows: Sequence[Row]) -> list[str]:
    if not rows:
        return []
    n = rows[0]["size"]
    core = next((row["bytes_per_task"] for row in rows if row["competitor"] == CORE), None)
    lines = [f"memory: resident bytes per pending task, {n:,} pending (each in a fresh process)"]
    for row in rows:
        ratio = "" if not core else f"  {row['bytes_per_task'] / core:5.1f}x the core"
        lines.append(f"  {row['label']:<16}{row['bytes_per_task']:>8.0f} B{ratio}")
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
    """The log-n check, one line per workload (or why it was not made), heapq's beside it."""
    lines = [f"log-n check on the Cython core: ns/op / log2(n) at each size, relative to the"
             f" smallest; pass when every ratio is <= {FACTOR:g}",
             "  (heapq's largest ratio beside it: a heap that is O(log n) by construction,"
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
            lines.append(f"  {'':<24} heapq: largest ratio {ref.worst:.2f},"
                         f" fit ns/op ~ n^{ref.exponent:.2f}")
    return lines


def header(machine: Mapping[str, Any], mode: str) -> list[str]:
    return [f"pysched {machine['pysched']} ({machine['pysched_implementation']} core),"
            f" Python {machine['python']} ({machine['python_implementation']}), {mode} run,"
            f" {machine['date']}",
            f"{machine['cpu_model']}, {machine['cores']} cores, {machine['platform']}",
            "Times per operation: CPU time of this process (median of repeats);"
            " speedup = competitor ns/op / pysched ns/op."]
