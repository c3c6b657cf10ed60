"""``python -m pysched.bench``: pysched's Cython core against what users would write instead.

Quick by default (sizes 1,000 and 10,000, about a minute); ``--full``
runs n = 1,000 to 1,000,000, so growth with n shows, and checks that the
core's cost per operation grows no faster than log n (about 25 minutes).
A progress bar goes to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence

from . import (
    bounded,
    calendar_section,
    config,
    draining,
    growth,
    machine,
    memory,
    plot,
    report,
    results,
    runtime,
    scheduling,
)
from .competitors import BATCH, CORE, VERSIONED, core_available
from .plan import Keep, Row, Step, keep_all, run_steps
from .progress import Progress
from .workloads import WORKLOADS

SECTIONS = ("scheduler", "bounded", "drain", "memory", "runtime", calendar_section.SECTION)
# The baselines whose growth is shown beside the core's, per section.
REFERENCE = {scheduling.SECTION: VERSIONED, bounded.SECTION: bounded.TWO_HEAPS}


def _sizes(text: str) -> list[int]:
    try:
        return [int(part.replace("_", "")) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of sizes: {text!r}") from None


def _sections(text: str) -> list[str]:
    chosen = text.split(",")
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown sections {sorted(unknown)}; pick from {', '.join(SECTIONS)}")
    return chosen


def _workloads(text: str) -> list[str]:
    chosen = text.split(",")
    known = [workload.key for workload in WORKLOADS]
    unknown = set(chosen) - set(known)
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown workloads {sorted(unknown)}; pick from {', '.join(known)}")
    return chosen


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(prog="python -m pysched.bench", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parse.add_argument("--full", action="store_true",
                       help="sizes 1,000 to 1,000,000 and the log-n check (about 25 minutes)")
    parse.add_argument("--huge", action="store_true",
                       help=f"also n = {config.HUGE_N:,} for the composite workloads (pysched"
                            " and heapq, versioned) and for memory (an hour or more)")
    parse.add_argument("--json", metavar="FILE",
                       help="write every figure, with the machine, to FILE")
    parse.add_argument("--plot", metavar="FILE.png",
                       help="draw ns/op and speedup against n (needs matplotlib)")
    parse.add_argument("--quiet", action="store_true", help="no progress bar")
    # For tests, hidden from --help: custom sizes.
    parse.add_argument("--sizes", type=_sizes, help=argparse.SUPPRESS)
    parse.add_argument("--sections", type=_sections, default=list(SECTIONS), metavar="NAME,...",
                       help=f"run only these sections, in this order (default: all of"
                       f" {','.join(SECTIONS)})")
    parse.add_argument("--only", type=lambda text: frozenset(text.split(",")), metavar="KEY,...",
                       help="time only the competitors with these JSON keys (c, versioned,"
                       " two_heaps, py, ...); the others are left out")
    parse.add_argument("--workloads", type=_workloads, metavar="KEY,...",
                       help="run only these workloads of the scheduler section (composite,"
                       " composite_single, ...)")
    return parse


def plan(cfg: config.Config, sections: Sequence[str], keep: Keep = keep_all,
         workloads: Sequence[str] | None = None) -> list[Step]:
    """The steps of the chosen sections, in the order given, for the competitors kept
    (and, in the scheduler section, the ``workloads`` named, or all)."""
    chosen = [w for w in WORKLOADS if workloads is None or w.key in workloads]
    makers: dict[str, Callable[[], list[Step]]] = {
        "scheduler": lambda: scheduling.steps(cfg.sizes, cfg.budget, cfg.sched_cancel_cap,
                                              workloads=chosen, keep=keep,
                                              huge_n=cfg.huge_n),
        "bounded": lambda: bounded.steps(cfg.churn_pushes, cfg.capacities, cfg.top_n,
                                         cfg.top_ks, cfg.budget, keep),
        "drain": lambda: draining.steps(cfg.drain_n, cfg.budget, keep),
        "memory": lambda: [step for n in (cfg.memory_n, cfg.huge_n) if n
                           for step in memory.steps(n, keep)],
        "runtime": lambda: runtime.steps(cfg.throughput_tasks, cfg.throughput_repeat,
                                         cfg.lateness_tasks, cfg.lateness_span,
                                         cfg.lateness_repeat),
        calendar_section.SECTION: lambda: calendar_section.steps(
            cfg.calendar_series, cfg.calendar_seconds, cfg.calendar_repeat),
    }
    return [step for section in sections for step in makers[section]()]


def growth_checks(rows: Sequence[Row], competitor: Mapping[str, str] | None = None,
                  ) -> dict[str, growth.GrowthCheck | None]:
    """The log-n check for each scheduler workload and bounded-queue churn.

    On the core by default, the verdict; on ``competitor[section]`` for the
    heapq baselines (O(log n) by construction), which shows what the same
    machine's caches do to a heap's cost per operation.
    """
    checked = [(scheduling.SECTION, workload.key, workload.title) for workload in WORKLOADS]
    checked.append((bounded.SECTION, "churn", "bounded-queue churn"))
    checks: dict[str, growth.GrowthCheck | None] = {}
    for section, key, title in checked:
        points = {row["size"]: row["ns_per_op"] for row in rows
                  if (row["section"], row["workload"], row["competitor"])
                  == (section, key, CORE if competitor is None else competitor[section])}
        if points:
            checks[title] = growth.check(points)
    return checks


def pick_section(rows: Sequence[Row], section: str) -> list[Row]:
    return [row for row in rows if row["section"] == section]


def render(rows: Sequence[Row], checks: dict[str, growth.GrowthCheck | None],
           reference: dict[str, growth.GrowthCheck | None], head: list[str],
           cfg: config.Config) -> str:
    """The whole text report."""

    def pick(section: str, workload: str) -> list[Row]:
        return [row for row in rows if (row["section"], row["workload"]) == (section, workload)]

    blocks = [head]
    for workload in WORKLOADS:
        chosen = pick(scheduling.SECTION, workload.key)
        if chosen:
            gaps = (f"not run: sched cancels in O(n), so it gets at most"
                    f" {cfg.sched_cancel_cap:,} tasks where tasks are cancelled or replaced")
            blocks.append(report.speedup_table(
                chosen, f"{workload.title}: {workload.summary}", "n", gaps))
    churn = pick(bounded.SECTION, "churn")
    if churn:
        blocks.append(report.speedup_table(
            churn, f"bounded-queue churn: {churn[0]['pushes']:,} pushes of priorities 0 to"
            " 10,000, a pop every 10th, at capacity C", "C"))
    top = pick(bounded.SECTION, "top_k")
    if top:
        blocks.append(report.speedup_table(
            top, f"one-shot top-k of {top[0]['pushes']:,} values (ns per value)", "k"))
    drain = pick(draining.SECTION, "drain")
    if drain:
        blocks.append(report.speedup_table(
            drain, f"drain: claim, run and complete {drain[0]['size']:,} due tasks; speedup"
            f" against the core's pop_due({BATCH}), {BATCH} tasks a call", "n"))
    memory_rows = pick(memory.SECTION, "memory")
    blocks += [report.memory_table([row for row in memory_rows if row["size"] == n])
               for n in sorted({row["size"] for row in memory_rows})]
    blocks += [report.throughput_table(pick(runtime.SECTION, "throughput")),
               report.lateness_table(pick(runtime.SECTION, "lateness")),
               calendar_section.table(pick(calendar_section.SECTION, "series"))]
    if checks:
        blocks.append(report.growth_lines(checks, reference))
    blocks.append(report.cost_growth_lines(pick_section(rows, scheduling.SECTION),
                                           [(w.key, w.title) for w in WORKLOADS]))
    return "\n\n".join("\n".join(block) for block in blocks if block) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.plot:
        try:  # fail before measuring, not after minutes of work
            plot.require_matplotlib()
        except plot.PlotUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.sizes:
        cfg, mode = config.custom(args.sizes), "custom"
    else:
        cfg, mode = (config.FULL, "full") if args.full else (config.QUICK, "quick")
    if args.huge:
        cfg, mode = dataclasses.replace(cfg, huge_n=config.HUGE_N), f"{mode} + huge"
    about = machine.describe()
    if not core_available():
        print("note: pysched's compiled core does not import here: the tables show the"
              " pure twin beside the baselines, without speedups", file=sys.stderr)
    elif "drain" in args.sections and not draining.drainers():
        print("note: this core has no pop_due: the drain section is left out", file=sys.stderr)
    steps = plan(cfg, args.sections, keep_all if args.only is None else args.only.__contains__,
                 args.workloads)
    rows = run_steps(steps, Progress(enabled=not args.quiet))
    checks, reference = growth_checks(rows), growth_checks(rows, REFERENCE)
    print(render(rows, checks, reference, report.header(about, mode), cfg), end="")
    if args.json:
        results.write(args.json, results.document(
            about, mode, sys.argv[1:] if argv is None else argv, dataclasses.asdict(cfg), rows,
            checks, reference))
    if args.plot:
        plot.draw(rows, args.plot, " ".join(report.header(about, mode)[:2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
