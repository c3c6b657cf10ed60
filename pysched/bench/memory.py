"""Resident bytes per pending task, measured in a fresh interpreter.

Run as ``python -m pysched.bench.memory IMPL N`` (IMPL: c, py or heapq). Ids and run times are made
before the first reading (a caller holds its own ids anyway) and every task
shares one function, so the difference is what the scheduler itself keeps.
"""

from __future__ import annotations

import gc
import subprocess
import sys
from functools import partial

from .competitors import CORE, core_available
from .plan import Row, Step
from .workloads import noop

SECTION = "memory"


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


def scheduler_class(impl: str) -> type:
    """The scheduler measured for ``impl``: c, py or heapq (the entry-finder baseline)."""
    if impl == "c":
        from pysched import _core

        return _core.Scheduler
    if impl == "py":
        from pysched import _scheduler_py

        return _scheduler_py.Scheduler
    from .baselines import HeapqScheduler

    return HeapqScheduler


def measure_here(impl: str, n: int) -> float:
    ids = list(range(10**9, 10**9 + n))
    times = [float(i % 1000) for i in range(n)]
    cls = scheduler_class(impl)
    gc.collect()
    before = resident_bytes()
    sched = cls()
    for task_id, run_at in zip(ids, times, strict=True):
        sched.schedule(task_id, run_at, 0, noop)
    gc.collect()
    used = resident_bytes() - before
    assert len(sched) == n
    return used / n


def bytes_per_task(impl: str, n: int) -> float:
    """Measure in a child process, so earlier work leaves no freed memory to reuse."""
    child = subprocess.run([sys.executable, "-m", "pysched.bench.memory", impl, str(n)],
                           capture_output=True, text=True)
    if child.returncode:
        raise RuntimeError(f"memory measurement of {impl} at n = {n} failed:\n{child.stderr}")
    return float(child.stdout)


MEASURED = [(CORE, "pysched"), ("py", "pure twin"), ("heapq", "heapq")]


def steps(n: int) -> list[Step]:
    """One step per scheduler: resident bytes per pending task with ``n`` pending."""
    impls = MEASURED if core_available() else MEASURED[1:]

    def one(key: str, label: str) -> list[Row]:
        return [{"section": SECTION, "workload": "memory", "param": "n", "size": n,
                 "competitor": key, "label": label, "bytes_per_task": bytes_per_task(key, n)}]

    return [Step(f"memory, {n:,} pending, {label}", partial(one, key, label))
            for key, label in impls]


if __name__ == "__main__":
    print(measure_here(sys.argv[1], int(sys.argv[2])))
