"""Timing helpers: repeat a workload, report the median."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """The median wall time of ``repeats`` calls of ``run``, after one warm-up.

    The collector runs before each call, not during it, so one workload's
    garbage is not charged to the next.
    """
    times = []
    for attempt in range(repeats + 1):
        gc.collect()
        start = time.perf_counter()
        run()
        elapsed = time.perf_counter() - start
        if attempt:  # the first call warms caches and allocators
            times.append(elapsed)
    return statistics.median(times)
