"""ThreadPoolScheduler against the standard library: throughput and start lateness.

The workloads live in pysched.bench.runtime_workloads, which
``python -m pysched.bench`` runs too; this script is their stand-alone report::

    python benchmarks/bench_threadpool.py [--tasks N] [--repeat R] [--late-tasks N] [--span S]

Throughput: whole runs (start to shutdown) of N due no-ops through 4 workers,
collected by a result() loop, wait() or as_completed(); median of R runs in turns.
Lateness: tasks spread evenly over S seconds with idle workers (defaults
10,000 over 1 s); start minus due time, as seen by the task itself.
"""

from __future__ import annotations

import argparse
import sys

from pysched.bench.runtime_workloads import lateness_contenders, throughput


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50_000, help="tasks per throughput run")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved throughput runs")
    parser.add_argument("--late-tasks", type=int, default=10_000, help="tasks per lateness run")
    parser.add_argument("--span", type=float, default=1.0, help="seconds the lateness tasks span")
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}; median of {args.repeat}; {args.tasks} tasks per run")
    print(f"{'throughput (due no-ops, 4 workers)':50} {'tasks/s':>10} {'ratio':>6}")
    for name, row in throughput(args.tasks, repeat=args.repeat).items():
        print(f"{name:50} {row['tasks_per_s']:10,.0f} {row['ratio']:6.2f}")
    title = f"start lateness, {args.late_tasks:,} tasks over {args.span:g} s"
    print(f"{title:40} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, measure in lateness_contenders(args.late_tasks, args.span).items():
        row = measure()
        print(f"{name:40} {row['p50_ms']:8.3f} {row['p90_ms']:8.3f} {row['p99_ms']:8.3f}"
              f" {row['max_ms']:8.3f}")


if __name__ == "__main__":
    main()
