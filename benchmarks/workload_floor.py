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

The drain section's two loops (``pop_due`` in batches, and ``next()`` with
``complete()``) are timed the same way, each beside its own floor.

Run: ``python benchmarks/workload_floor.py [composite sizes] [churn capacities] [drain n]``
(defaults ``10000,1000000``, ``1000,100000`` and ``100000``; churn pushes 1,000,000).
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
from pysched.bench.competitors import (
    BATCH,
    drain_pop_due,
    drain_scheduler,
    drain_versioned_pop_due,
)
from pysched.bench.draining import drained
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
cdef class Feed:
    cdef list items
    cdef Py_ssize_t given
    def __init__(self, items):
        self.items = items
        self.given = 0
    def next(self, now):
        if self.given == len(self.items):
            return None
        self.given += 1
        return self.items[self.given - 1]
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


def null_drain(no_ops: Any, drain: Callable[[Any], None], n: int) -> Callable[[], int]:
    """A drain of n tasks from a scheduler whose calls do nothing but hand out the tasks."""
    tasks = [no_ops.Task(noop) for _ in range(n)]
    null = null_scheduler(no_ops, tasks)
    null.__dict__.update(next=no_ops.Feed(tasks).next, complete=no_ops.one)

    def run() -> int:
        drain(null)
        return n

    return run


def report_drain(no_ops: Any, n: int) -> None:
    """The drain section's two loops, each beside its floor: how far batching can go.

    With core work of X ns a task in both loops, next()'s speedup over
    pop_due(BATCH) is (next floor + X) / (pop floor + X): 1.5 needs X at most
    "own for 1.5x".
    """
    pop, by_next, pop_floor, next_floor = (
        m.seconds * 1e9 / m.result for m in measure_in_turns([
            partial(drained, Scheduler, drain_pop_due, n, 0),
            partial(drained, Scheduler, drain_scheduler, n, 0),
            partial(null_drain, no_ops, drain_pop_due, n),
            partial(null_drain, no_ops, drain_scheduler, n)], 1.0))
    print(f"\ndrain of {n:,} due tasks, ns/task: pop_due({BATCH}) against a loop of next()")
    print(f"{'':<10}{'pop_due':>10}{'next()':>10}{'speedup':>10}")
    print(f"{'core':<10}{pop:>10.0f}{by_next:>10.0f}{by_next / pop:>10.2f}")
    print(f"{'floor':<10}{pop_floor:>10.0f}{next_floor:>10.0f}{next_floor / pop_floor:>10.2f}")
    print(f"core own {pop - pop_floor:.0f} (pop_due) and {by_next - next_floor:.0f} (next());"
          f" own for 1.5x: {2 * next_floor - 3 * pop_floor:.0f}", flush=True)


def report(name: str, size: int, builds: list[Callable[[], Callable[[], int]]]) -> None:
    core, floor, base = (m.seconds * 1e9 / m.result for m in measure_in_turns(builds, 1.0))
    print(f"{name:<10}{size:>11,}{core:>8.0f}{floor:>8.0f}{base:>10.0f}{core - floor:>12.0f}"
          f"{base / core:>10.2f}{base / floor:>10.2f}", flush=True)


def main(sizes: list[int], capacities: list[int], drain_size: int) -> None:
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
        report_drain(no_ops, drain_size)


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


if __name__ == "__main__":
    args = sys.argv[1:]
    main(_ints(args[0]) if args else [10_000, 1_000_000],
         _ints(args[1]) if len(args) > 1 else [1_000, 100_000],
         int(args[2]) if len(args) > 2 else 100_000)
