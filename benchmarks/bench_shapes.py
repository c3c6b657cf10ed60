"""The adversarial shapes of run times on two or more builds of the core, in turns.

For each shape of pysched/bench/shapes.py (every task at one time, ties by
priority, a far outlier, exponential spreads, times within one binade, a
flood of past-due tasks, the double range's extremes, clusters, large ints,
and uniform times for reference): n tasks of the shape scheduled one call at
a time, half of them claimed with ``next()``, n/2 more landing among the
rest, then all claimed. Every build's ``_core`` extension is loaded into one
process (as in compare_builds.py) and the builds take their rounds in turns,
the order reversed every round. Figures are CPU ns per operation (schedules
and claims): the median of the rounds, and each build's median over the
first build's, so "after/before" below 1.10 means at most 10% slower.

Run: ``python benchmarks/bench_shapes.py N ROUNDS LABEL=PATH_TO_CORE_SO ...
[--shapes uniform,outlier,...]``, for example ``python benchmarks/bench_shapes.py
1000000 5 before=/tmp/before/pysched/_core.cpython-311-x86_64-linux-gnu.so
after=pysched/_core.cpython-311-x86_64-linux-gnu.so``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from compare_builds import load_core

from pysched.bench.shapes import SHAPES, shape_workload


def main() -> None:
    parse = argparse.ArgumentParser(description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parse.add_argument("n", type=int)
    parse.add_argument("rounds", type=int)
    parse.add_argument("builds", nargs="+", metavar="LABEL=PATH")
    parse.add_argument("--shapes", default=",".join(SHAPES))
    args = parse.parse_args()
    builds = {}
    for arg in args.builds:
        label, _, path = arg.partition("=")
        builds[label] = load_core(path).Scheduler
    first = next(iter(builds))
    print(f"shapes, n = {args.n:,}, {args.rounds} rounds (CPU ns per operation, medians;"
          f" ratio: over {first})")
    print(f"  {'shape':<16}" + "".join(f"{label:>12}" for label in builds)
          + "".join(f"{label + '/' + first:>16}" for label in list(builds)[1:]))
    for shape in args.shapes.split(","):
        run = shape_workload(shape, args.n)
        figures: dict[str, list[float]] = {label: [] for label in builds}
        for round_ in range(args.rounds):
            for label in (list(builds) if round_ % 2 else list(builds)[::-1]):
                gc.collect()
                start = time.process_time()
                ops = run(builds[label])
                figures[label].append((time.process_time() - start) * 1e9 / ops)
        medians = {label: statistics.median(values) for label, values in figures.items()}
        print(f"  {shape:<16}" + "".join(f"{medians[label]:>12.1f}" for label in builds)
              + "".join(f"{medians[label] / medians[first]:>16.2f}" for label in list(builds)[1:]),
              flush=True)


if __name__ == "__main__":
    main()
