"""The drain section: claiming due tasks in batches with ``pop_due`` against a loop of ``next()``.

A scheduler holding n due tasks (random times and priorities, scheduled
before the clock starts) is drained to empty: every task claimed, called and
completed. The core drains with ``pop_due(now, BATCH)`` (a worker's batch,
run and then finished with ``complete_many``: the figure the others are
compared with), with a loop of ``next()`` and ``complete()``, and with
``pop_due(now)`` (every due task in one call, so all n Task objects live at
once); the twin with ``pop_due(now, BATCH)``; "heapq, versioned" with its
``next()``. Before timing, every way must run the same tasks in the same
order. Where the core has no ``pop_due`` the section says so and times
nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from .competitors import (
    BATCH,
    CORE,
    VERSIONED,
    core_available,
    drain_pop_due,
    drain_scheduler,
    drain_versioned,
)
from .plan import Keep, Row, Step, Timed, keep_all, timed_group
from .scheduling import Disagreement
from .workloads import Drain, Fns, Make, noop

SECTION = "drain"
VERIFY_N = 2_000


def drainers() -> list[tuple[str, str, Make, Drain]]:
    """(key, label, scheduler factory, drain) for each way of draining, the core's batches first.

    Empty when the core has no ``pop_due``: the twin alone would compare nothing.
    """
    if not core_available():
        return []
    from pysched._core import Scheduler as CoreScheduler
    from pysched._scheduler_py import Scheduler as PureScheduler

    from .baselines import HeapqVersioned

    if not hasattr(CoreScheduler, "pop_due"):
        return []
    return [
        (CORE, f"pysched, pop_due({BATCH})", CoreScheduler, partial(drain_pop_due, limit=BATCH)),
        ("c_next", "pysched, next()", CoreScheduler, drain_scheduler),
        ("c_all", "pysched, pop_due(all)", CoreScheduler, partial(drain_pop_due, limit=None)),
        (VERSIONED, "heapq, versioned, next()", HeapqVersioned, drain_versioned),
        ("py", f"pure twin, pop_due({BATCH})", PureScheduler, partial(drain_pop_due, limit=BATCH)),
    ]


def filled(make: Make, n: int, seed: int, fns: Fns) -> Any:
    """A fresh scheduler holding n tasks at random times in [0, n) with priorities 0 to 9."""
    rng = random.Random(seed)
    sched = make()
    schedule = sched.schedule
    for i in range(n):
        schedule(i, rng.random() * n, rng.randrange(10), fns[i])
    return sched


def drained(make: Make, drain: Drain, n: int, seed: int) -> Callable[[], int]:
    """A run that drains a freshly filled scheduler (filled here, untimed); it returns n."""
    sched = filled(make, n, seed, [noop] * n)

    def run() -> int:
        drain(sched)
        return n

    return run


def verify(ways: Sequence[tuple[str, str, Make, Drain]], n: int) -> None:
    """Raise Disagreement unless every way of draining runs the same tasks in the same order."""
    orders = {}
    for _, label, make, drain in ways:
        order: list[int] = []
        drain(filled(make, n, 0, [partial(order.append, i) for i in range(n)]))
        orders[label] = order
    if len({tuple(order) for order in orders.values()}) > 1:
        raise Disagreement(f"drain of {n:,} tasks: {', '.join(orders)} disagree")


def steps(n: int, budget: float, keep: Keep = keep_all) -> list[Step]:
    """Verification, then the drains of n tasks timed in turns; nothing without pop_due."""
    ways = [way for way in drainers() if keep(way[0])]
    if not ways:
        return []

    def check() -> list[Row]:
        verify(ways, min(n, VERIFY_N))
        return []

    timed: list[Timed] = [
        ({"section": SECTION, "workload": "drain", "param": "n", "size": n,
          "competitor": key, "label": label}, partial(drained, make, drain, n, 0))
        for key, label, make, drain in ways]
    return [Step("checking that every drain runs the same tasks in order", check),
            timed_group(f"drain n={n:,}", timed, budget)]
