"""ThreadPoolScheduler against the standard library: throughput and start lateness.

The workloads live in pysched.bench.runtime_workloads, which
``python -m pysched.bench`` runs too; this script is their stand-alone report::

    python benchmarks/bench_threadpool.py [--tasks N] [--repeat R] [--late-tasks N]
                                          [--span S] [--late-repeat L]

Throughput: whole runs (start to shutdown) of N due no-ops through 4 workers,
collected by a result() loop, wait() or as_completed(); each repeat runs every
contender once with a fresh executor, in an order rotated between repeats.
Shown: the median rate of R runs, the ratio of medians to ThreadPoolExecutor
in the same idiom, the lowest and highest ratio of the runs paired within a
repeat, and the median of the process's context switches per task (a lock
convoy shows there first). Lateness: tasks spread evenly over S seconds with
idle workers (defaults 10,000 over 1 s); start minus due time, as seen by the
task itself; the contenders in turns, each percentile the median of L runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from pysched.bench.runtime_workloads import lateness_contenders, throughput


def table(title: str, heads: list[str], rows: list[tuple[str, list[str]]]) -> None:
    """Print ``rows`` (a name, then cells) under ``heads``, each column as wide as it must be."""
    name_width = max(len(title), *(len(name) for name, _ in rows))
    widths = [max(len(head), *(len(cells[k]) for _, cells in rows))
              for k, head in enumerate(heads)]
    for name, cells in [(title, heads), *rows]:
        print(f"{name:<{name_width}}  "
              + "  ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50_000, help="tasks per throughput run")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved throughput runs")
    parser.add_argument("--late-tasks", type=int, default=10_000, help="tasks per lateness run")
    parser.add_argument("--span", type=float, default=1.0, help="seconds the lateness tasks span")
    parser.add_argument("--late-repeat", type=int, default=3, help="lateness runs in turns")
    args = parser.parse_args(argv)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Python {sys.version.split()[0]}; switch interval {sys.getswitchinterval() * 1e3:g} ms;"
          f" load average {load}")
    print(f"throughput: median of {args.repeat} whole runs of {args.tasks:,} tasks")
    result = throughput(args.tasks, repeat=args.repeat)
    table("due no-ops, 4 workers", ["tasks/s", "ratio", "ratio min-max", "switches/task"],
          [(name, [f"{row['tasks_per_s']:,.0f}", f"{row['ratio']:.2f}",
                   f"{row['min_ratio']:.2f}-{row['max_ratio']:.2f}",
                   f"{row['switches_per_task']:.3f}"])
           for name, row in result.items()])
    contenders = lateness_contenders(args.late_tasks, args.span)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in contenders}
    for _ in range(args.late_repeat):
        for name, measure in contenders.items():
            runs[name].append(measure())
    figures = ["p50_ms", "p90_ms", "p99_ms", "max_ms"]
    print(f"start lateness: median of {args.late_repeat} runs in turns")
    table(f"{args.late_tasks:,} tasks over {args.span:g} s", [f.replace("_", " ") for f in figures],
          [(name, [f"{statistics.median(run[f] for run in taken):.3f}" for f in figures])
           for name, taken in runs.items()])


if __name__ == "__main__":
    main()
