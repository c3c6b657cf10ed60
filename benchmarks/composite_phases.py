"""Where the composite workload's time goes: CPU time per phase, core, twin and heapq, versioned.

The composite of ``python -m pysched.bench`` (same inputs and calls: schedule
n tasks with ``schedule_many``, re-schedule 10% sooner in a second batch,
cancel another 10% one call at a time, drain the rest as the benchmark
drains each competitor), timed phase by phase, in nanoseconds per task id
(per n, so the phases add up to the total).
For work on the core: at n = 1,000,000 the drain is bound by cache misses,
and its figure is what the core's prefetching moved.

Run: ``python benchmarks/composite_phases.py [n] [rounds] [c,py,versioned]``
(defaults 1,000,000, 3 and c,versioned). Rounds alternate the implementations; each
line is one round. Compare two builds by running this from each in turns:
on a shared machine the same build moves by 30% between runs.
"""

from __future__ import annotations

import gc
import sys
import time
from typing import Any

from pysched.bench.baselines import HeapqVersioned
from pysched.bench.competitors import VERSIONED, drain_pop_due, drain_versioned_pop_due
from pysched.bench.workloads import composite_inputs, noop

PHASES = ("schedule", "replace", "cancel", "drain")


def implementations() -> dict[str, tuple[Any, Any]]:
    """key: (scheduler class, drain)."""
    from pysched._scheduler_py import Scheduler as PureScheduler

    found: dict[str, tuple[Any, Any]] = {}
    try:
        from pysched._core import Scheduler as CoreScheduler
    except ImportError:
        pass
    else:
        found["c"] = CoreScheduler, drain_pop_due
    found["py"] = PureScheduler, drain_pop_due
    found[VERSIONED] = HeapqVersioned, drain_versioned_pop_due
    return found


def phases(make: Any, drain: Any, n: int) -> list[float]:
    """CPU seconds of each phase of one composite run."""
    times, priorities, replaced, cancelled = composite_inputs(n, 0)
    first = [(i, times[i], priorities[i], noop) for i in range(n)]
    sooner = [(i, times[i] * 0.5, 0, noop) for i in replaced]
    gc.collect()
    marks = [time.process_time()]
    sched = make()
    sched.schedule_many(first)
    marks.append(time.process_time())
    sched.schedule_many(sooner)
    marks.append(time.process_time())
    cancel = sched.cancel
    for i in cancelled:
        cancel(i)
    marks.append(time.process_time())
    drain(sched)
    marks.append(time.process_time())
    return [end - start for start, end in zip(marks, marks[1:], strict=False)]


def main(n: int = 1_000_000, rounds: int = 3, which: str = "c,versioned") -> None:
    found = implementations()
    chosen = [key for key in which.split(",") if key in found]
    print(f"composite at n = {n:,}: CPU ns per task id, by phase")
    print(f"{'impl':<10}" + "".join(f"{name:>10}" for name in PHASES) + f"{'total s':>10}")
    for _ in range(rounds):
        for key in chosen:
            seconds = phases(*found[key], n)
            print(f"{key:<10}" + "".join(f"{s * 1e9 / n:>10,.0f}" for s in seconds)
                  + f"{sum(seconds):>10.3f}", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]) if args else 1_000_000, int(args[1]) if len(args) > 1 else 3,
         args[2] if len(args) > 2 else "c,versioned")
