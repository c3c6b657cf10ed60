"""Cancel-all benchmark: pysched.sched against the standard library's sched.

``n`` events are entered (distinct times, a few priorities) and then all
cancelled in a shuffled order, the same order for both schedulers; only the
cancels are timed. ``sched.cancel`` is ``list.remove`` + ``heapify``, O(n) per
call, so its total is O(n**2); pysched's is O(1) amortised per call.

Run: ``python benchmarks/bench_sched.py [n]`` (n defaults to 100,000; the
standard library side then takes minutes).
"""

from __future__ import annotations

import random
import sched as std_sched
import sys
import time
from collections.abc import Callable
from typing import Any

import pysched
import pysched.sched as py_sched


def _noop() -> None:
    pass


def time_cancel_all(make_scheduler: Callable[[], Any], n: int, seed: int = 0,
                    timer: Callable[[], float] = time.process_time) -> float:
    """Seconds of ``timer`` to cancel ``n`` pending events of a fresh ``make_scheduler()``.

    The default timer is this process's CPU time: the work is single-threaded,
    and on a shared machine wall time would count other processes' turns too.
    """
    s = make_scheduler()
    events = [s.enterabs(1000.0 + i * 0.001, i % 5, _noop) for i in range(n)]
    random.Random(seed).shuffle(events)
    cancel = s.cancel
    start = timer()
    for event in events:
        cancel(event)
    elapsed = timer() - start
    assert s.empty()
    return elapsed


def bench_cancel_all(n: int = 100_000, seed: int = 0) -> dict[str, Any]:
    """Cancel ``n`` pending events in each scheduler, in one process.

    Returns ``{"n", "stdlib_s", "pysched_s", "speedup", "implementation"}``:
    the CPU seconds each took and stdlib / pysched. The pysched side is the
    best of three runs (it is short, so noise matters); the standard library
    side runs once (at n = 100,000 it takes minutes and noise is negligible).
    """
    pysched_s = min(time_cancel_all(py_sched.scheduler, n, seed) for _ in range(3))
    stdlib_s = time_cancel_all(std_sched.scheduler, n, seed)
    return {
        "n": n,
        "stdlib_s": stdlib_s,
        "pysched_s": pysched_s,
        "speedup": stdlib_s / pysched_s,
        "implementation": pysched.IMPLEMENTATION,
    }


def main(argv: list[str]) -> None:
    n = int(argv[1]) if len(argv) > 1 else 100_000
    r = bench_cancel_all(n)
    print(f"cancel all {r['n']:,} pending events ({r['implementation']} core), CPU seconds:")
    print(f"  stdlib sched   {r['stdlib_s']:10.3f} s  {r['stdlib_s'] / n * 1e6:10.2f} us/cancel")
    print(f"  pysched.sched  {r['pysched_s']:10.3f} s  {r['pysched_s'] / n * 1e6:10.2f} us/cancel")
    print(f"  speedup        {r['speedup']:10.0f}x")


if __name__ == "__main__":
    main(sys.argv)
