"""Run times of the shapes that are hard for a pending set that buckets tasks by time.

The core keeps its pending tasks in a ladder of buckets by time
(docs/core-structure.md). These shapes are the ones that defeat bucketing, or
that any exact structure must get right: every task at one time, ties broken
by priority alone, one far outlier stretching the range, times spread over
orders of magnitude, times bunched inside one binade, floods of tasks already
due, the extremes of the double range, tight clusters, and large integers
that round to equal doubles. ``shape_items`` is deterministic in its
arguments: the differential fuzzers (tests/fuzz/spreads.py) give the core and
the twin the same calls, and ``shape_workload`` gives every build the same.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

SHAPES = ("uniform", "equal", "equal_time", "outlier", "exponential", "within_binade",
          "past_due", "extremes", "clusters", "integers")

EXTREMES = [5e-324, -5e-324, 1e-300, -1e-300, 2.0**-1022, 0.0, -0.0, 1.0, -1.0,
            1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308]

PRIORITIES = [0, 0, 0, 1, -1, 7, 2**63 - 1, -(2**63)]

Item = tuple[int, "float | int", int]  # (index, run_at, priority)


def shape_time(shape: str, rng: random.Random, k: int, count: int) -> float | int:
    """The run time of the ``k``-th of ``count`` tasks of ``shape``."""
    if shape == "uniform":
        return rng.random() * 1000.0
    if shape in ("equal", "equal_time"):
        return 5.0
    if shape == "outlier":  # one task far past all the others
        return 1e300 if k == count // 2 else 10.0 + rng.random()
    if shape == "exponential":  # every binade equally likely: 2**-1074 to 2**1023
        return math.copysign(math.ldexp(1.0 + rng.random(), rng.randint(-1075, 1022)),
                             -1.0 if rng.random() < 0.1 else 1.0)
    if shape == "within_binade":  # exponentially close to 1.0, inside one binade
        return 1.0 + math.ldexp(1.0, -rng.randint(1, 52))
    if shape == "past_due":  # before every other shape's times: a flood of due tasks
        return -1e6 * rng.random() - 1.0
    if shape == "extremes":
        return rng.choice(EXTREMES)
    if shape == "clusters":  # a few instants, each smeared over a nanosecond
        return rng.choice([3.0, 1e9, 1e9 + 1.0, 2e15]) + rng.random() * 1e-9
    if shape == "integers":  # large ints: converted to doubles, many equal after rounding
        return 10**17 + rng.randrange(1000) * rng.choice([1, 7, 1000])
    raise ValueError(f"unknown shape {shape!r}")


def shape_items(shape: str, count: int, base: int, seed: int) -> list[Item]:
    """``(index, run_at, priority)`` for ``count`` tasks of ``shape``.

    Indexes start at ``base``; about one in ten repeats an earlier one, so some
    calls replace a pending version. Priorities are 0 for "equal".
    """
    rng = random.Random(f"{shape}:{count}:{base}:{seed}")
    items = []
    for k in range(count):
        index = base + (k if rng.random() < 0.9 else rng.randrange(k + 1))
        priority = 0 if shape == "equal" else rng.choice(PRIORITIES)
        items.append((index, shape_time(shape, rng, k, count), priority))
    return items


def shape_workload(shape: str, n: int, seed: int = 0) -> Callable[[Any], int]:
    """A run on a Scheduler class: n tasks of ``shape`` one call each, half claimed one
    ``next()`` at a time, n/2 more of the shape landing among them, then the rest.

    Returns ``run(scheduler_class) -> operations`` (schedules and claims); the
    inputs are drawn here, before any clock starts.
    """
    first = shape_items(shape, n, 0, seed)
    later = shape_items(shape, n // 2, n, seed + 1)

    def noop() -> None:
        pass

    def claim(s: Any, limit: int) -> int:
        claimed = 0
        next_, complete = s.next, s.complete
        while claimed != limit:
            task = next_(1.7976931348623157e308)
            if task is None or task.__class__ is float:
                break
            task.fn()
            complete(task)
            claimed += 1
        return claimed

    def run(scheduler: Any) -> int:
        s = scheduler()
        schedule = s.schedule
        for index, run_at, priority in first:
            schedule(index, run_at, priority, noop)
        claimed = claim(s, n // 2)
        for index, run_at, priority in later:
            schedule(index, run_at, priority, noop)
        return len(first) + len(later) + claimed + claim(s, -1)

    return run
