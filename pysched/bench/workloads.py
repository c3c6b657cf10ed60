"""Workloads for the core Scheduler, each a function of (Scheduler class, n, seed).

Inputs are drawn before the clock starts, so only scheduler work is timed;
every workload returns the number of operations it performed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any


def noop() -> None:
    """The task body: benchmarks measure the scheduler, not the work."""


def drain(sched: Any) -> int:
    """Claim and complete everything pending; return how many ran."""
    claim, complete = sched.next, sched.complete
    ran = 0
    while True:
        task = claim(1e300)
        if task is None or isinstance(task, float):
            return ran
        complete(task)
        ran += 1


def composite(scheduler_cls: type, n: int, seed: int = 0) -> Callable[[], int]:
    """Schedule n tasks, re-schedule 10%, cancel another 10%, drain with next()."""
    rng = random.Random(seed)
    times = [rng.random() * n for _ in range(n)]
    priorities = [rng.randrange(10) for _ in range(n)]
    picked = rng.sample(range(n), n // 5)
    replaced, cancelled = picked[: n // 10], picked[n // 10 :]

    def run() -> int:
        sched = scheduler_cls()
        schedule = sched.schedule
        for i in range(n):
            schedule(i, times[i], priorities[i], noop)
        for i in replaced:
            schedule(i, times[i] * 0.5, 0, noop)
        cancel = sched.cancel
        for i in cancelled:
            cancel(i)
        drain(sched)
        return n + len(replaced) + len(cancelled) + n

    return run
