"""The most any scheduler can gain: each workload with calls that do nothing, beside the core.

Every workload of ``python -m pysched.bench`` drives its scheduler from
Python, as user code does: batches through ``schedule_many`` and
``pop_due``, cancels and pops one call at a time, and each task's function
called from the drain's loop. That code's own interpreter work (the
iterations, the argument lookups, the calls themselves) is paid by every
competitor alike, so it bounds every speedup. This script
measures it: the composite and churn run on a stand-in whose every method is
a compiled function that does nothing (built with Cython, which the core
needs anyway), beside the Cython core and the main heapq baseline, in turns.
"floor" is the loop alone; "core's own" the core's ns/op minus the floor;
"ceiling" the speedup a core costing nothing would reach.

Run: ``python benchmarks/workload_floor.py [composite sizes] [churn capacities]``
(defaults ``10000,1000000`` and ``1000,100000``; churn pushes 1,000,000).
Needs Cython's pyximport and a C compiler (``pip install cython``).
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from pysched._core import Scheduler, StableBoundedPriorityQueue
from pysched.bench._timing import measure_in_turns
from pysched.bench.baselines import HeapqVersioned
from pysched.bench.bounded_baselines import TwoHeapsQueue
from pysched.bench.bounded_workloads import churn
from pysched.bench.competitors import BATCH, drain_pop_due, drain_versioned_pop_due
from pysched.bench.workloads import composite, noop

NO_OPS = """
# cython: language_level=3
def four(a, b, c, d):
    pass
def two(a, b):
    pass
def one(a):
    pass
def zero():
    pass
cdef class Task:
    cdef readonly object fn
    def __init__(self, fn):
        self.fn = fn
"""


def compiled_no_ops(build_dir: str) -> Any:
    """A Cython module of functions that do nothing, compiled on first use."""
    import pyximport  # type: ignore[import-untyped]

    Path(build_dir, "workload_floor_no_ops.pyx").write_text(NO_OPS)
    sys.path.insert(0, build_dir)
    pyximport.install(build_dir=build_dir, language_level=3)
    return importlib.import_module("workload_floor_no_ops")


class _Null:
    """An object whose methods are the given callables."""

    def __init__(self, **calls: Callable[..., Any]) -> None:
        self.__dict__.update(calls)


def null_scheduler(no_ops: Any, tasks: list[Any]) -> _Null:
    """A scheduler whose calls do nothing; ``pop_due`` hands out ``tasks`` in batches, then []."""
    batches: Iterator[list[Any]] = iter([tasks[k:k + BATCH] for k in range(0, len(tasks), BATCH)])
    # The drain calls pop_due(1e300, BATCH): next(batches, []) gives the batches, then [].
    return _Null(schedule_many=no_ops.one, cancel=no_ops.one, complete_many=no_ops.one,
                 pop_due=lambda _now, _limit: next(batches, []))


def report(name: str, size: int, builds: list[Callable[[], Callable[[], int]]]) -> None:
    core, floor, base = (m.seconds * 1e9 / m.result for m in measure_in_turns(builds, 1.0))
    print(f"{name:<10}{size:>11,}{core:>8.0f}{floor:>8.0f}{base:>10.0f}{core - floor:>12.0f}"
          f"{base / core:>10.2f}{base / floor:>10.2f}", flush=True)


def main(sizes: list[int], capacities: list[int]) -> None:
    with tempfile.TemporaryDirectory() as build_dir:
        no_ops = compiled_no_ops(build_dir)
        print("ns/op, CPU time, medians of repeats in turns; baseline: heapq, versioned"
              " (composite), heapq, two heaps (churn)")
        print(f"{'workload':<10}{'size':>11}{'core':>8}{'floor':>8}{'baseline':>10}"
              f"{'core own':>12}{'speedup':>10}{'ceiling':>10}")
        for n in sizes:
            fns = [noop] * n
            tasks = [no_ops.Task(noop) for _ in range(n - n // 10)]  # the composite runs 90%
            report("composite", n, [
                partial(composite, Scheduler, drain_pop_due, n, 0, fns),
                partial(composite, partial(null_scheduler, no_ops, tasks), drain_pop_due,
                        n, 0, fns),
                partial(composite, HeapqVersioned, drain_versioned_pop_due, n, 0, fns)])
        null_queue = partial(_Null, push=no_ops.two, pop=no_ops.zero)
        for capacity in capacities:
            report("churn", capacity, [
                partial(churn, StableBoundedPriorityQueue, capacity, 1_000_000, 0),
                partial(churn, lambda _capacity: null_queue(), capacity, 1_000_000, 0),
                partial(churn, TwoHeapsQueue, capacity, 1_000_000, 0)])


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


if __name__ == "__main__":
    args = sys.argv[1:]
    main(_ints(args[0]) if args else [10_000, 1_000_000],
         _ints(args[1]) if len(args) > 1 else [1_000, 100_000])
