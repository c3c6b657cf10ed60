"""The cost of task events in ThreadPoolScheduler, against a tree without them, in one process.

Each round runs the throughput workload of ``python -m pysched.bench`` (make a
pool, N due no-ops through 4 workers by ``submit`` or ``schedule``, collect
them by ``result()``, shut down) on: the BEFORE tree's pool (loaded beside this
one as ``pysched_before``, as ``compare_trees.py`` does; both share the
compiled core loaded here), this tree's pool with no listener, and this tree's
pool with one listener of every kind that does nothing (so every event is
built and delivered). The order is reversed every round. Shown: the median
rate of each, and the median and quartiles of the ratios to "before" paired
within a round, for the rate and for the process CPU time per task.

Run: ``python benchmarks/bench_events.py BEFORE_TREE N ROUNDS [WORKERS]`` (default 4
workers; 1 leaves the GIL to one worker and the producer, the steadier
measure on a busy machine), for example
``git worktree add /tmp/before a26808e`` then
``python benchmarks/bench_events.py /tmp/before 10000 31``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from compare_trees import load_before, quartiles  # beside this script

import pysched
from pysched import _impl
from pysched.bench.runtime_workloads import collect_results, whole_run

WORKERS = 4


def _ignore(event: Any) -> None:
    pass


def main(argv: list[str]) -> None:
    if len(argv) not in (3, 4):
        raise SystemExit(__doc__)
    before, n, rounds = load_before(argv[0]), int(argv[1]), int(argv[2])
    workers = int(argv[3]) if len(argv) == 4 else WORKERS
    core = _impl.Scheduler

    def plain(cls: Any) -> Callable[[], Any]:
        return lambda: cls(workers, _core_factory=core)

    def listened() -> Any:
        pool = pysched.ThreadPoolScheduler(workers, _core_factory=core)
        pool.add_listener(_ignore)
        return pool

    makers = {"before": plain(before.ThreadPoolScheduler),
              "no listener": plain(pysched.ThreadPoolScheduler), "one listener": listened}
    runs = [(f"{name}.{'schedule' if by_id else 'submit'}", make, by_id)
            for by_id in (False, True) for name, make in makers.items()]
    rates: dict[str, list[float]] = {name: [] for name, *_ in runs}
    cpu: dict[str, list[float]] = {name: [] for name, *_ in runs}
    for turn in range(rounds):
        for name, make, by_id in runs if turn % 2 == 0 else runs[::-1]:
            used = time.process_time()
            rates[name].append(n / whole_run(make, n, by_id, collect_results))
            cpu[name].append((time.process_time() - used) / n * 1e6)
    print(f"{n:,} due no-ops through {workers} workers, {rounds} rounds in turns (core:"
          f" {core.__module__}); ratio to before paired within each round: median (quartiles)")
    print(f"{'':24}{'tasks/s':>10}{'ratio':>22}{'CPU us/task':>13}{'ratio':>22}")
    for idiom in ("submit", "schedule"):
        for name in makers:
            cells = []
            for table in (rates, cpu):
                was, now = table[f"before.{idiom}"], table[f"{name}.{idiom}"]
                low, mid, high = quartiles([a / b for a, b in zip(now, was, strict=True)])
                fmt = ",.0f" if table is rates else ".2f"
                width = 10 if table is rates else 13
                cells.append(f"{statistics.median(now):>{width}{fmt}}"
                             f"{mid:>10.3f} ({low:.3f}-{high:.3f})")
            print(f"{name + '.' + idiom:<24}" + "".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
