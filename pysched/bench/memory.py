"""Memory per pending task, and what is left once the tasks drain away, each in a fresh interpreter.

Run as ``python -m pysched.bench.memory IMPL N FIGURE`` (IMPL: a key of
SCHEDULERS; FIGURE: ``resident`` or ``after_drain``). Ids and run times are
made before the first reading (a caller holds its own ids anyway) and every
task shares one function, so what is measured is what the scheduler keeps.

- ``resident``: resident bytes per pending task with N pending.
- ``after_drain``: the scheduler's traced allocations (tracemalloc) once its
  N tasks are drained to empty, as a share of their peak: a long-lived
  scheduler should give back what a burst of tasks made it allocate.
  tracemalloc sees the core's arrays too, as it allocates them with PyMem.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import Any

from .competitors import CORE, VERSIONED, core_available, drain_scheduler, drain_versioned
from .plan import Keep, Row, Step, keep_all
from .workloads import noop

SECTION = "memory"
FIGURES = ("resident", "after_drain")


def resident_bytes() -> int:
    """This process's resident set size, from /proc on Linux or getrusage elsewhere."""
    try:
        with open("/proc/self/statm") as statm:
            import os

            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def scheduler(impl: str) -> tuple[type, Callable[[Any], None]]:
    """The scheduler class measured for ``impl`` and the function that drains one."""
    if impl == CORE:
        from pysched import _core

        return _core.Scheduler, drain_scheduler
    if impl == "py":
        from pysched import _scheduler_py

        return _scheduler_py.Scheduler, drain_scheduler
    from .baselines import HeapqVersioned

    return HeapqVersioned, drain_versioned


def _inputs(n: int) -> tuple[list[int], list[float]]:
    return list(range(10**9, 10**9 + n)), [float(i % 1000) for i in range(n)]


def resident_per_task(impl: str, n: int) -> float:
    """Resident bytes per pending task with ``n`` pending."""
    ids, times = _inputs(n)
    cls, _ = scheduler(impl)
    gc.collect()
    before = resident_bytes()
    sched = cls()
    for task_id, run_at in zip(ids, times, strict=True):
        sched.schedule(task_id, run_at, 0, noop)
    gc.collect()
    used = resident_bytes() - before
    assert len(sched) == n
    return used / n


def after_drain_share(impl: str, n: int) -> float:
    """Traced bytes still held after draining ``n`` tasks to empty, over their peak."""
    ids, times = _inputs(n)
    cls, drain = scheduler(impl)
    gc.collect()
    tracemalloc.start()
    sched = cls()
    for task_id, run_at in zip(ids, times, strict=True):
        sched.schedule(task_id, run_at, 0, noop)
    drain(sched)
    gc.collect()
    left, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(sched) == 0
    return left / peak


def measure_here(impl: str, n: int, figure: str) -> float:
    return (resident_per_task if figure == "resident" else after_drain_share)(impl, n)


def in_child(impl: str, n: int, figure: str) -> float:
    """Measure in a child process, so earlier work leaves no freed memory to reuse."""
    child = subprocess.run([sys.executable, "-m", "pysched.bench.memory", impl, str(n), figure],
                           capture_output=True, text=True)
    if child.returncode:
        raise RuntimeError(f"memory ({figure}) of {impl} at n = {n} failed:\n{child.stderr}")
    return float(child.stdout)


MEASURED = [(CORE, "pysched"), (VERSIONED, "heapq, versioned"), ("py", "pure twin")]


def steps(n: int, keep: Keep = keep_all) -> list[Step]:
    """One step per scheduler: its bytes per pending task and its share left after draining."""
    impls = [(key, label) for key, label in (MEASURED if core_available() else MEASURED[1:])
             if keep(key)]

    def one(key: str, label: str) -> list[Row]:
        return [{"section": SECTION, "workload": "memory", "param": "n", "size": n,
                 "competitor": key, "label": label,
                 "bytes_per_task": in_child(key, n, "resident"),
                 "after_drain": in_child(key, n, "after_drain")}]

    return [Step(f"memory, {n:,} pending, {label}", partial(one, key, label))
            for key, label in impls]


if __name__ == "__main__":
    print(measure_here(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
