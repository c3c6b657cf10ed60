"""ThreadPoolScheduler of another source tree against this one, in turns in one process.

The pool is pure Python over the core, so a change to it is timed by loading
the other tree's ``pysched`` package beside this one (copied into a temporary
directory as ``pysched_before``; its relative imports keep it whole, and both
share the compiled core loaded here). Each round runs the throughput
workload of ``python -m pysched.bench`` (make a pool, N due no-ops through 4
workers by ``submit`` or ``schedule``, collect them by ``result()``, shut
down) on each tree and core, the order reversed every round. Shown: the
median rate of each, and the median and quartiles of the this/before ratios
paired within a round, for the rate and for the process CPU time per task
(all threads: on a shared machine the steadier of the two).

Run: ``python benchmarks/compare_pool_builds.py BEFORE_TREE N ROUNDS``, for example
``git worktree add /tmp/before HEAD~1`` (or ``git archive HEAD~1 | tar -x -C
/tmp/before``), then ``python benchmarks/compare_pool_builds.py /tmp/before 10000 31``.
"""

from __future__ import annotations

import importlib
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pysched
import pysched._scheduler_py as pure
from pysched import _impl
from pysched.bench.runtime_workloads import collect_results, whole_run

WORKERS = 4


def load_before(tree: str) -> Any:
    """The ``pysched`` package of ``tree``, imported as ``pysched_before``."""
    source = Path(tree) / "pysched"
    if not (source / "__init__.py").is_file():
        raise SystemExit(f"no pysched package in {tree}")
    target = Path(tempfile.mkdtemp(prefix="pysched-before-")) / "pysched_before"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(target.parent))
    return importlib.import_module("pysched_before")


def quartiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 4], statistics.median(ordered), ordered[(3 * n) // 4]


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        raise SystemExit(__doc__)
    before, n, rounds = load_before(argv[0]), int(argv[1]), int(argv[2])
    builds = {"before": before.ThreadPoolScheduler, "this": pysched.ThreadPoolScheduler}
    cores = {"c": _impl.Scheduler, "py": pure.Scheduler}
    runs: list[tuple[str, Callable[[], Any], bool]] = [
        (f"{build}[{core}].{'schedule' if by_id else 'submit'}",
         partial(cls, WORKERS, _core_factory=factory), by_id)
        for core, factory in cores.items() for by_id in (False, True)
        for build, cls in builds.items()]
    rates: dict[str, list[float]] = {name: [] for name, *_ in runs}
    cpu: dict[str, list[float]] = {name: [] for name, *_ in runs}
    for turn in range(rounds):
        for name, make, by_id in runs if turn % 2 == 0 else runs[::-1]:
            used = time.process_time()
            rates[name].append(n / whole_run(make, n, by_id, collect_results))
            cpu[name].append((time.process_time() - used) / n * 1e6)
    print(f"{n:,} due no-ops through {WORKERS} workers, {rounds} rounds in turns;"
          f" this/before paired within each round: median (quartiles)")
    print(f"{'':18}{'before tasks/s':>15}{'this tasks/s':>13}{'ratio':>22}"
          f"{'before CPU us':>15}{'this CPU us':>13}{'ratio':>22}")
    for core in cores:
        for idiom in ("submit", "schedule"):
            row = f"[{core}].{idiom}"
            cells = []
            for table in (rates, cpu):
                was, now = table[f"before{row}"], table[f"this{row}"]
                low, mid, high = quartiles([a / b for a, b in zip(now, was, strict=True)])
                fmt = ",.0f" if table is rates else ".2f"
                cells.append(f"{statistics.median(was):>15{fmt}}{statistics.median(now):>13{fmt}}"
                             f"{mid:>10.3f} ({low:.3f}-{high:.3f})")
            print(f"{row:<18}" + "".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
