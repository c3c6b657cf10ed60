"""Counters and start-lateness samples of a ThreadPoolScheduler.

Every version a scheduler accepted ends in exactly one of completed, failed,
timed_out, cancelled, replaced, evicted or idle_wakeups, or is still pending
or running, so ``scheduled == pending + running + completed + failed +
timed_out + cancelled + replaced + evicted + idle_wakeups`` at any moment the
lock is held. ``completed`` counts the user's functions that returned: a
one-shot version, or a run of a recurring series; ``idle_wakeups`` counts the
versions that woke a recurring series and ran no function (no fire time
started then: not due yet, paused, or skipped as too late). ``rejected``
counts schedules refused by backpressure (never accepted). ``skipped`` and
``coalesced`` count recurring fire times that never ran on their own.

Lateness (start minus run_at, on the scheduler's clock) keeps an exact count
and maximum and a uniform sample of at most ``size`` values (Vitter's
Algorithm R) for the percentiles, so memory stays bounded however many tasks
run. The owner updates everything under its lock.
"""

from __future__ import annotations

import math
import random
from typing import Any

COUNTERS = ("scheduled", "completed", "failed", "timed_out", "cancelled", "replaced",
            "evicted", "idle_wakeups", "rejected", "skipped", "coalesced")

__all__ = ["COUNTERS", "Counters", "LatenessReservoir"]


class Counters:
    """Plain integer counters, one attribute each (see COUNTERS)."""

    __slots__ = COUNTERS

    def __init__(self) -> None:
        self.scheduled = 0
        self.completed = 0
        self.failed = 0
        self.timed_out = 0
        self.cancelled = 0
        self.replaced = 0
        self.evicted = 0
        self.idle_wakeups = 0
        self.rejected = 0
        self.skipped = 0
        self.coalesced = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTERS}


class LatenessReservoir:
    """Start lateness samples: O(1) per sample, O(size log size) per summary.

    Invariant: ``len(samples) == min(count, size)``, and after ``count``
    samples each of them is kept with probability ``size / count``.
    """

    __slots__ = ("size", "count", "max", "pending", "_samples", "_random")

    def __init__(self, size: int = 4096, seed: int | None = None) -> None:
        self.size = size
        self.count = 0
        self.max = -math.inf
        # Samples appended by the owner's hot path, fed in by absorb() in batches.
        self.pending: list[float] = []
        self._samples: list[float] = []
        self._random = random.Random(seed).random

    def absorb(self) -> None:
        """Feed the samples waiting in ``pending`` into the reservoir."""
        pending = self.pending
        for value in pending:
            self.add(value)
        pending.clear()

    def add(self, value: float) -> None:
        self.count += 1
        if value > self.max:
            self.max = value
        samples = self._samples
        if len(samples) < self.size:
            samples.append(value)
        else:
            slot = int(self._random() * self.count)
            if slot < self.size:
                samples[slot] = value

    def summary(self) -> dict[str, Any]:
        """count, p50, p90, p99 (nearest rank in the sample) and the exact max; None if empty."""
        self.absorb()
        if not self.count:
            return {"count": 0, "p50": None, "p90": None, "p99": None, "max": None}
        ordered = sorted(self._samples)
        n = len(ordered)

        def rank(q: float) -> float:
            return ordered[min(n - 1, max(0, math.ceil(q * n) - 1))]

        return {"count": self.count, "p50": rank(0.50), "p90": rank(0.90), "p99": rank(0.99),
                "max": self.max}
