"""The pool, asyncio or durable scheduler of another source tree against this one, in turns.

The schedulers are pure Python over the core, so a change to them is timed by
loading the other tree's ``pysched`` package beside this one (copied into a
temporary directory as ``pysched_before``; its relative imports keep it
whole, and both share the compiled core loaded here). Each round runs one
workload on each tree, the order reversed every round. Shown: the median
rate of each, and the median and quartiles of the this/before ratios paired
within a round, for the rate and for the process CPU time per task (all
threads: on a shared machine the steadier of the two).

Workloads (PART):

- ``pool``: make a ThreadPoolScheduler, N due no-ops through 4 workers by
  ``submit`` and by ``schedule``, collect them by ``result()``, shut down (the
  throughput workload of ``python -m pysched.bench``), on the C core and on
  the pure twin.
- ``aio``: N plain callables due now through an AsyncScheduler by
  ``schedule``, on a fresh event loop, until the last has run.
- ``durable``: N due no-op rows stored in a fresh SQLite file, then run by a
  DurableScheduler with 4 workers until every outcome is stored.

Run: ``python benchmarks/compare_trees.py PART BEFORE_TREE N ROUNDS``, for
example ``git worktree add /tmp/before HEAD~1`` (or ``git archive HEAD~1 | tar
-x -C /tmp/before``), then ``python benchmarks/compare_trees.py pool /tmp/before 10000 31``.
"""

from __future__ import annotations

import asyncio
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
NOOP_TASK = "compare-noop"
NOOP_ARGS = '{"args":[],"kwargs":{}}'


def load_before(tree: str) -> Any:
    """The ``pysched`` package of ``tree``, imported as ``pysched_before``."""
    source = Path(tree) / "pysched"
    if not (source / "__init__.py").is_file():
        raise SystemExit(f"no pysched package in {tree}")
    target = Path(tempfile.mkdtemp(prefix="pysched-before-")) / "pysched_before"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(target.parent))
    return importlib.import_module("pysched_before")


def pool_runs(package: Any, n: int) -> dict[str, Callable[[], float]]:
    """Seconds of one whole pool run, by core and idiom."""
    cores = {"c": _impl.Scheduler, "py": pure.Scheduler}
    return {f"[{core}].{'schedule' if by_id else 'submit'}":
            partial(whole_run, partial(package.ThreadPoolScheduler, WORKERS, _core_factory=factory),
                    n, by_id, collect_results)
            for core, factory in cores.items() for by_id in (False, True)}


def aio_run(package: Any, n: int) -> float:
    """Seconds from the first of n due ``schedule`` calls to the last run, on a fresh loop."""
    async def main() -> float:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        left = [n]

        def tick() -> None:
            left[0] -= 1
            if not left[0]:
                done.set_result(None)

        scheduler = importlib.import_module(f"{package.__name__}.aio").AsyncScheduler()
        start = time.perf_counter()
        now = loop.time()
        for k in range(n):
            scheduler.schedule(k, now, 0, tick)
        await done
        elapsed = time.perf_counter() - start
        await scheduler.aclose()
        return elapsed

    return asyncio.run(main())


def durable_run(package: Any, n: int) -> float:
    """Seconds for a DurableScheduler with 4 workers to run n stored due no-ops (SQLite)."""
    durable = importlib.import_module(f"{package.__name__}.durable")
    with tempfile.TemporaryDirectory() as folder:
        store = durable.open_store(Path(folder) / "tasks.db")
        store.schedule([durable.NewTask(f"t{i}", 0.0, 0, NOOP_TASK, NOOP_ARGS) for i in range(n)])
        start = time.perf_counter()
        scheduler = durable.DurableScheduler(store, max_workers=WORKERS, prefetch=60,
                                             poll_interval=0.05)
        while store.counts().get("completed", 0) < n:
            time.sleep(0.005)
        elapsed = time.perf_counter() - start
        scheduler.close()
        store.close()
    return elapsed


def runs_of(part: str, package: Any, n: int) -> dict[str, Callable[[], float]]:
    if part == "pool":
        return pool_runs(package, n)
    if part == "aio":
        return {"schedule": partial(aio_run, package, n)}
    if part == "durable":
        importlib.import_module(f"{package.__name__}.durable").task(name=NOOP_TASK)(lambda: None)
        return {"sqlite": partial(durable_run, package, n)}
    raise SystemExit(f"PART must be pool, aio or durable, not {part!r}")


def quartiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 4], statistics.median(ordered), ordered[(3 * n) // 4]


def main(argv: list[str]) -> None:
    if len(argv) != 4:
        raise SystemExit(__doc__)
    part, before, n, rounds = argv[0], load_before(argv[1]), int(argv[2]), int(argv[3])
    builds = {"before": runs_of(part, before, n), "this": runs_of(part, pysched, n)}
    rows = list(builds["this"])
    runs = [(build, row) for row in rows for build in builds]
    rates: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    cpu: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    for turn in range(rounds):
        for build, row in runs if turn % 2 == 0 else runs[::-1]:
            used = time.process_time()
            rates[build, row].append(n / builds[build][row]())
            cpu[build, row].append((time.process_time() - used) / n * 1e6)
    print(f"{part}: {n:,} due no-ops, {rounds} rounds in turns;"
          f" this/before paired within each round: median (quartiles)")
    print(f"{'':18}{'before tasks/s':>15}{'this tasks/s':>13}{'ratio':>22}"
          f"{'before CPU us':>15}{'this CPU us':>13}{'ratio':>22}")
    for row in rows:
        cells = []
        for table in (rates, cpu):
            was, now = table["before", row], table["this", row]
            low, mid, high = quartiles([a / b for a, b in zip(now, was, strict=True)])
            fmt = ",.0f" if table is rates else ".2f"
            cells.append(f"{statistics.median(was):>15{fmt}}{statistics.median(now):>13{fmt}}"
                         f"{mid:>10.3f} ({low:.3f}-{high:.3f})")
        print(f"{row:<18}" + "".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
