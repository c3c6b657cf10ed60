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
from collections.abc import Callable, Sequence
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


def _repeats(warmup: float, budget: float, min_repeats: int, max_repeats: int) -> tuple[bool, int]:
    """(whether the warm-up counts as a sample, how many more runs to time)."""
    if budget <= 0:
        return True, 0
    if warmup >= budget:
        return True, min_repeats - 1
    return False, min(max_repeats, max(min_repeats, math.ceil(budget / max(warmup, 1e-9))))


def measure_in_turns(builds: Sequence[Callable[[], Callable[[], object]]], budget: float, *,
                     min_repeats: int = 3, max_repeats: int = 15,
                     timer: Timer = time.process_time) -> list[Measurement]:
    """Time ``build()()`` for each build: a warm-up each, then repeats taken in turns.

    Each workload is repeated ``budget / warm-up`` times, clamped to
    ``[min_repeats, max_repeats]``. A warm-up that alone takes ``budget`` or
    more is long enough to be its own warm-up: it counts as the first of
    ``min_repeats`` samples. A budget of 0 asks for one sample, the warm-up
    (quick looks and tests). Taking the repeats in turns (a, b, a, b, ...)
    spreads a shared machine's slow spells over every workload instead of
    letting one fall on a single workload's samples, which is what moved the
    ratios most here. ``build()`` makes a fresh run, with its inputs, before
    each timed call (untimed), so only one workload's inputs are alive at once.
    """
    warmups: list[float] = []
    results: list[Any] = []
    samples: list[list[float]] = []
    repeats: list[int] = []
    for build in builds:
        warmup, result = _timed(build(), timer)
        counted, more = _repeats(warmup, budget, min_repeats, max_repeats)
        warmups.append(warmup)
        results.append(result)
        samples.append([warmup] if counted else [])
        repeats.append(more)
    for turn in range(max(repeats, default=0)):
        for i, build in enumerate(builds):
            if turn < repeats[i]:
                seconds, results[i] = _timed(build(), timer)
                samples[i].append(seconds)
    return [Measurement(statistics.median(taken), tuple(taken), warmup, result)
            for taken, warmup, result in zip(samples, warmups, results, strict=True)]


def measure(run: Callable[[], object], budget: float, *, min_repeats: int = 3,
            max_repeats: int = 15, timer: Timer = time.process_time) -> Measurement:
    """Time ``run`` alone, as ``measure_in_turns`` does."""
    return measure_in_turns([lambda: run], budget, min_repeats=min_repeats,
                            max_repeats=max_repeats, timer=timer)[0]


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """The median wall time of ``repeats`` calls of ``run``, after one warm-up."""
    _timed(run, time.perf_counter)
    return statistics.median(_timed(run, time.perf_counter)[0] for _ in range(repeats))
