"""Run times drawn from the shapes that are hard for a bucketed pending set.

A ladder queue spreads tasks over buckets by time. These shapes are the ones
that defeat that (or that any exact structure must get right): every task at
one time, ties broken by priority alone, one far outlier stretching the range,
times spread over orders of magnitude, times bunched inside one binade, floods
of tasks already due, and the extremes of the double range. ``spread_items``
is deterministic in its arguments, so the compiled core and the pure twin of a
differential run get the same calls.
"""

from __future__ import annotations

import math
import random

SHAPES = ("uniform", "equal", "equal_time", "outlier", "exponential", "within_binade",
          "past_due", "extremes", "clusters", "integers")

EXTREMES = [5e-324, -5e-324, 1e-300, -1e-300, 2.0**-1022, 0.0, -0.0, 1.0, -1.0,
            1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308]

PRIORITIES = [0, 0, 0, 1, -1, 7, 2**63 - 1, -(2**63)]


def spread_time(shape: str, rng: random.Random, k: int, count: int) -> float | int:
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
    if shape == "past_due":  # all before every other shape's times: a flood of due tasks
        return -1e6 * rng.random() - 1.0
    if shape == "extremes":
        return rng.choice(EXTREMES)
    if shape == "clusters":  # a few instants, each smeared over a nanosecond
        return rng.choice([3.0, 1e9, 1e9 + 1.0, 2e15]) + rng.random() * 1e-9
    if shape == "integers":  # large ints: converted to doubles, many equal after rounding
        return 10**17 + rng.randrange(1000) * rng.choice([1, 7, 1000])
    raise ValueError(f"unknown shape {shape!r}")


def spread_items(shape: str, count: int, base: int, seed: int,
                 ) -> list[tuple[object, float | int, int]]:
    """``(task_id, run_at, priority)`` for ``count`` tasks of ``shape``.

    Ids are ``("spread", base + i)``; about one in ten repeats an earlier one,
    so some calls replace a pending version.
    """
    rng = random.Random(f"{shape}:{count}:{base}:{seed}")
    items = []
    for k in range(count):
        index = base + (k if rng.random() < 0.9 else rng.randrange(k + 1))
        priority = 0 if shape == "equal" else rng.choice(PRIORITIES)
        items.append((("spread", index), spread_time(shape, rng, k, count), priority))
    return items


def spread_cancels(count: int, base: int, seed: int) -> list[object]:
    """Ids of ``spread_items`` with the same ``base`` to cancel: about half of ``count``."""
    rng = random.Random(f"cancel:{count}:{base}:{seed}")
    return [("spread", base + k) for k in range(count) if rng.random() < 0.5]
