"""Bursts of run times of the shapes in pysched/bench/shapes.py, for the differential fuzzers.

The shapes are the ones that defeat a pending set that buckets tasks by time
(the core's ladder): see that module. Both implementations of a differential
run get the same calls: the items are deterministic in their arguments.
"""

from __future__ import annotations

import random

from pysched.bench.shapes import SHAPES, shape_items

__all__ = ["SHAPES", "spread_cancels", "spread_items"]


def spread_items(shape: str, count: int, base: int, seed: int,
                 ) -> list[tuple[object, float | int, int]]:
    """``(task_id, run_at, priority)`` for ``count`` tasks of ``shape``, ids ``("spread", i)``.

    About one id in ten repeats an earlier one, so some calls replace a pending version.
    """
    return [(("spread", index), run_at, priority)
            for index, run_at, priority in shape_items(shape, count, base, seed)]


def spread_cancels(count: int, base: int, seed: int) -> list[object]:
    """Ids of ``spread_items`` with the same ``base`` to cancel: about half of ``count``."""
    rng = random.Random(f"cancel:{count}:{base}:{seed}")
    return [("spread", base + k) for k in range(count) if rng.random() < 0.5]
