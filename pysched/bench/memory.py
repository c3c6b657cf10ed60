"""Resident bytes per pending task, measured in a fresh interpreter.

Run as ``python -m pysched.bench.memory IMPL N``. Ids and run times are made
before the first reading (a caller holds its own ids anyway) and every task
shares one function, so the difference is what the scheduler itself keeps.
"""

from __future__ import annotations

import gc
import subprocess
import sys

from .workloads import noop


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
    if impl == "c":
        from pysched._core import Scheduler
    else:
        from pysched._scheduler_py import Scheduler
    return Scheduler


def measure_here(impl: str, n: int) -> float:
    ids = list(range(10**9, 10**9 + n))
    times = [float(i % 1000) for i in range(n)]
    cls = scheduler_class(impl)
    gc.collect()
    before = resident_bytes()
    sched = cls()
    for task_id, run_at in zip(ids, times):
        sched.schedule(task_id, run_at, 0, noop)
    gc.collect()
    used = resident_bytes() - before
    assert len(sched) == n
    return used / n


def bytes_per_task(impl: str, n: int) -> float:
    """Measure in a child process, so earlier work leaves no freed memory to reuse."""
    out = subprocess.run(
        [sys.executable, "-m", "pysched.bench.memory", impl, str(n)],
        check=True, capture_output=True, text=True,
    ).stdout
    return float(out)


if __name__ == "__main__":
    print(measure_here(sys.argv[1], int(sys.argv[2])))
