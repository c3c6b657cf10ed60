"""Scheduler workloads: what users do with a cancellable scheduler.

Each workload is a function ``(make, drain, n, seed, fns) -> run``: inputs
are drawn before the clock starts, so only scheduler work is timed, and
``run()`` does the work on a fresh ``make()`` scheduler and returns the
number of operations: tasks scheduled and cancelled plus tasks run (each one
claimed, called and completed). ``fns[i]`` is the function of task id ``i``:
``noop`` when timing, a recorder when checking that every competitor runs
the same tasks in the same order.

Tasks known together are scheduled together, with ``schedule_many(items)``,
as a user holding a batch would; the items are built before the clock
starts. Every competitor has ``schedule_many`` (baselines.py gives each the
batch a user would write for it), so all do the same calls. The composite
also runs with single calls only, as servers that arm a timer per request do:
one ``schedule`` per task and one ``next()`` per claim (a workload marked
``single``, drained by each competitor's one-at-a-time drain).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Make = Callable[[], Any]
Drain = Callable[[Any], None]
Fns = Sequence[Callable[[], Any]]


def noop() -> None:
    """The task body: benchmarks measure the scheduler, not the work."""


def composite_inputs(n: int, seed: int) -> tuple[list[float], list[int], list[int], list[int]]:
    """The composite's run_at and priority per id, and the ids it replaces and cancels."""
    rng = random.Random(seed)
    times = [rng.random() * n for _ in range(n)]
    priorities = [rng.randrange(10) for _ in range(n)]
    picked = rng.sample(range(n), n // 5)
    return times, priorities, picked[: n // 10], picked[n // 10 :]


def composite(make: Make, drain: Drain, n: int, seed: int, fns: Fns) -> Callable[[], int]:
    """Schedule n tasks, re-schedule 10% sooner, cancel another 10%, run the rest."""
    times, priorities, replaced, cancelled = composite_inputs(n, seed)
    first = [(i, times[i], priorities[i], fns[i]) for i in range(n)]
    sooner = [(i, times[i] * 0.5, 0, fns[i]) for i in replaced]

    def run() -> int:
        sched = make()
        sched.schedule_many(first)
        sched.schedule_many(sooner)
        cancel = sched.cancel
        for i in cancelled:
            cancel(i)
        drain(sched)
        return n + len(replaced) + len(cancelled) + (n - len(cancelled))

    return run


def composite_single(make: Make, drain: Drain, n: int, seed: int, fns: Fns) -> Callable[[], int]:
    """Schedule n tasks, re-schedule 10% sooner, cancel another 10%, run the rest: one call each."""
    times, priorities, replaced, cancelled = composite_inputs(n, seed)
    sooner = [times[i] * 0.5 for i in replaced]

    def run() -> int:
        sched = make()
        schedule = sched.schedule
        for task_id, run_at, priority, fn in zip(range(n), times, priorities, fns, strict=True):
            schedule(task_id, run_at, priority, fn)
        for task_id, run_at in zip(replaced, sooner, strict=True):
            schedule(task_id, run_at, 0, fns[task_id])
        cancel = sched.cancel
        for task_id in cancelled:
            cancel(task_id)
        drain(sched)
        return n + len(replaced) + len(cancelled) + (n - len(cancelled))

    return run


def cancel_heavy(make: Make, drain: Drain, n: int, seed: int, fns: Fns) -> Callable[[], int]:
    """Arm n timeouts, cancel 90% of them in random order before they are due, run the rest.

    Network timeouts: most replies arrive in time, so most timers never fire.
    """
    rng = random.Random(seed)
    times = [1.0 + rng.random() for _ in range(n)]  # all within one "second"
    cancelled = rng.sample(range(n), n - n // 10)
    armed = [(i, times[i], 0, fns[i]) for i in range(n)]

    def run() -> int:
        sched = make()
        sched.schedule_many(armed)
        cancel = sched.cancel
        for i in cancelled:
            cancel(i)
        drain(sched)
        return n + len(cancelled) + (n - len(cancelled))

    return run


def replace_heavy(make: Make, drain: Drain, n: int, seed: int, fns: Fns) -> Callable[[], int]:
    """n schedule calls over n/10 ids: each id re-armed ten times on average, then run.

    Keep-alive timers pushed back on every message: every re-schedule leaves
    a stale entry behind in a lazy-deletion heap. Messages come one at a
    time, so this workload schedules one call at a time.
    """
    rng = random.Random(seed)
    ids = max(1, n // 10)
    picks = list(range(ids)) + [rng.randrange(ids) for _ in range(n - ids)]
    # Later calls push the deadline later, as a keep-alive does.
    times = [call + rng.random() for call in range(n)]

    def run() -> int:
        sched = make()
        schedule = sched.schedule
        for call in range(n):
            task_id = picks[call]
            schedule(task_id, times[call], 0, fns[task_id])
        drain(sched)
        return n + ids

    return run


def equal_keys(make: Make, drain: Drain, n: int, seed: int, fns: Fns) -> Callable[[], int]:
    """n tasks with the same run_at and priority: they must run first in, first out."""
    items = [(i, 1.0, 0, fns[i]) for i in range(n)]

    def run() -> int:
        sched = make()
        sched.schedule_many(items)
        drain(sched)
        return 2 * n

    return run


@dataclass(frozen=True)
class Workload:
    """A scheduler workload and how the report names it."""

    key: str
    title: str
    build: Callable[[Make, Drain, int, int, Fns], Callable[[], int]]
    cancels: bool  # it cancels or replaces, so sched's O(n) cancel is capped
    single: bool = False  # claims one task a call (next()), not in batches

    @property
    def summary(self) -> str:
        """The first line of the workload function's docstring."""
        return (self.build.__doc__ or "").strip().splitlines()[0]


WORKLOADS = [
    Workload("composite", "composite", composite, cancels=True),
    Workload("composite_single", "composite, single calls", composite_single, cancels=True,
             single=True),
    Workload("cancel_heavy", "cancel-heavy", cancel_heavy, cancels=True),
    Workload("replace_heavy", "replace-heavy", replace_heavy, cancels=True),
    Workload("equal_keys", "equal keys (FIFO)", equal_keys, cancels=False),
]


def run_order(workload: Workload, make: Make, drain: Drain, n: int, seed: int = 0) -> list[int]:
    """The task ids in the order a scheduler runs them in ``workload``.

    Every competitor must give the same list before its time counts.
    """
    order: list[int] = []
    fns = [lambda i=i: order.append(i) for i in range(n)]
    workload.build(make, drain, n, seed, fns)()
    return order
