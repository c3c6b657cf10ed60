"""Timing helpers: repeat a workload, report the median.

Single-threaded workloads are timed in CPU time of this process
(``time.process_time``): on a quiet machine it equals wall time for these
loops, and on a shared one it leaves out the time spent waiting for a core,
which is what made wall-time figures swing by 2x while other jobs ran. The
runtime workloads, which wait on threads and clocks, time themselves in wall
time.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Timer = Callable[[], float]


@dataclass(frozen=True)
class Measurement:
    """The samples of one timed workload; ``seconds`` is their median."""

    seconds: float
    samples: tuple[float, ...]
    warmup: float  # the untimed first call (timed anyway, for the record)
    result: Any  # what the last call returned (workloads: their operation count)


def _timed(run: Callable[[], object], timer: Timer) -> tuple[float, Any]:
    # The collector runs before each call, not during it, so one workload's
    # garbage is not charged to the next.
    gc.collect()
    start = timer()
    result = run()
    return timer() - start, result


def measure(run: Callable[[], object], budget: float, *, min_repeats: int = 3,
            max_repeats: int = 15, timer: Timer = time.process_time) -> Measurement:
    """Time ``run`` after one warm-up call, repeating it for about ``budget`` seconds.

    ``run`` is repeated ``budget / warm-up`` times, clamped to
    ``[min_repeats, max_repeats]``. A warm-up that alone takes ``budget`` or
    more is long enough to be its own warm-up: it counts as the first of
    ``min_repeats`` samples, so that one slow or lucky run on a shared machine
    cannot set the figure. A budget of 0 asks for one sample, the warm-up
    (quick looks and tests).
    """
    warmup, result = _timed(run, timer)
    if budget <= 0:
        return Measurement(warmup, (warmup,), warmup, result)
    samples = []
    if warmup >= budget:
        samples.append(warmup)
        repeats = min_repeats - 1
    else:
        repeats = min(max_repeats, max(min_repeats, math.ceil(budget / max(warmup, 1e-9))))
    for _ in range(repeats):
        seconds, result = _timed(run, timer)
        samples.append(seconds)
    return Measurement(statistics.median(samples), tuple(samples), warmup, result)


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """The median wall time of ``repeats`` calls of ``run``, after one warm-up."""
    _timed(run, time.perf_counter)
    return statistics.median(_timed(run, time.perf_counter)[0] for _ in range(repeats))
