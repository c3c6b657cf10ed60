"""Two or more builds of the Cython core side by side in one process, timed in turns.

On a shared machine the same build moves by 30% between runs, so comparing a
change by running a benchmark from each build in turn needs many runs. Here
every build's ``_core`` extension is loaded into one process (each file is its
own module object, named ``pysched._core``; a file loads once, so compare a
build with itself through a copy of the file), and the workloads run on each
build in turns, the order reversed every round, with the same inputs as
``python -m pysched.bench``: the composite (through ``pop_due``, as the
benchmark drains the core), a drain of n due tasks by ``pop_due(64)`` and by
``next()``, and n tasks at one time and priority. Figures are CPU ns per
operation (composite) or per task (the others): the median and the minimum of
the rounds. The rest of pysched comes from wherever ``import pysched`` finds
it; only the extension differs between builds.

Build a second copy of a tree with ``pip install --no-deps --target DIR TREE``
(its extension is then ``DIR/pysched/_core*.so``).

Run: ``python benchmarks/compare_builds.py WORKLOAD N ROUNDS LABEL=PATH_TO_CORE_SO ...``
with WORKLOAD one of composite, composite_single (one call a task, drained
by ``next()``), drain_pop_due, drain_next, equal_keys; for
example ``python benchmarks/compare_builds.py composite 10000 41
before=/tmp/before/pysched/_core.cpython-311-x86_64-linux-gnu.so
after=pysched/_core.cpython-311-x86_64-linux-gnu.so``.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from pysched.bench.competitors import drain_pop_due, drain_scheduler
from pysched.bench.workloads import composite_inputs, noop


def load_core(path: str) -> Any:
    """The extension at ``path`` as a module of its own, beside any other build."""
    spec = importlib.util.spec_from_file_location("pysched._core", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"not an extension module: {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def workload(name: str, n: int) -> Callable[[Any], float]:
    """One timed run of ``name`` on a build's Scheduler class: CPU ns per op or per task."""
    times, priorities, replaced, cancelled = composite_inputs(n, 0)
    first = [(i, times[i], priorities[i], noop) for i in range(n)]
    sooner = [(i, times[i] * 0.5, 0, noop) for i in replaced]
    same_time = [(i, 1.0, 0, noop) for i in range(n)]
    clock = time.process_time

    def composite(scheduler: Any) -> float:
        start = clock()
        s = scheduler()
        s.schedule_many(first)
        s.schedule_many(sooner)
        for i in cancelled:
            s.cancel(i)
        drain_pop_due(s)
        return (clock() - start) * 1e9 / (2 * n + len(replaced))

    def composite_single(scheduler: Any) -> float:
        # The composite with one call a task, drained one next() at a time.
        start = clock()
        s = scheduler()
        for task_id, run_at, priority, fn in first:
            s.schedule(task_id, run_at, priority, fn)
        for task_id, run_at, priority, fn in sooner:
            s.schedule(task_id, run_at, priority, fn)
        for i in cancelled:
            s.cancel(i)
        drain_scheduler(s)
        return (clock() - start) * 1e9 / (2 * n + len(replaced))

    def drain(drainer: Callable[[Any], None], items: list[Any]) -> Callable[[Any], float]:
        def run(scheduler: Any) -> float:
            s = scheduler()
            s.schedule_many(items)
            start = clock()
            drainer(s)
            return (clock() - start) * 1e9 / n
        return run

    runs = {"composite": composite, "composite_single": composite_single,
            "drain_pop_due": drain(drain_pop_due, first),
            "drain_next": drain(drain_scheduler, first),
            "equal_keys": drain(drain_pop_due, same_time)}
    if name not in runs:
        raise SystemExit(f"unknown workload {name!r}: one of {', '.join(runs)}")
    return runs[name]


def main(argv: list[str]) -> None:
    if len(argv) < 4:
        raise SystemExit(__doc__)
    name, n, rounds = argv[0], int(argv[1]), int(argv[2])
    builds = {}
    for arg in argv[3:]:
        label, _, path = arg.partition("=")
        builds[label] = load_core(path).Scheduler
    run = workload(name, n)
    figures: dict[str, list[float]] = {label: [] for label in builds}
    for round_ in range(rounds):
        order = list(builds) if round_ % 2 else list(builds)[::-1]
        for label in order:
            figures[label].append(run(builds[label]))
    unit = "ns/op" if name.startswith("composite") else "ns/task"
    print(f"{name}, n = {n:,}, {rounds} rounds ({unit}, CPU time):")
    for label, values in figures.items():
        print(f"  {label:12s} median {statistics.median(values):8.1f}  min {min(values):8.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
