"""Counts and histograms by label, kept in memory for a collector to read.

The Prometheus collector (``prometheus``) reads these on each scrape. Every
update is O(1) but for the histogram's bucket search (O(log buckets)), under
one lock held for a few dict operations; reading copies everything under
that lock, so a scrape sees one consistent moment.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Iterable

from .listener import Labels

__all__ = ["DEFAULT_BUCKETS", "HistogramCounts", "Snapshot", "Tally", "check_buckets"]

# Seconds, from half a millisecond (a short task on an idle pool) to five minutes.
DEFAULT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                   5.0, 10.0, 30.0, 60.0, 300.0)


def check_buckets(buckets: Iterable[float]) -> tuple[float, ...]:
    """Finite upper bounds, strictly increasing, at least one; +Inf is implied."""
    try:
        bounds = tuple(float(b) for b in buckets)
    except (TypeError, ValueError):
        raise TypeError("buckets must be an iterable of numbers") from None
    if bounds and bounds[-1] == math.inf:
        bounds = bounds[:-1]
    if not bounds:
        raise ValueError("buckets must hold at least one finite bound")
    if not all(math.isfinite(b) for b in bounds):
        raise ValueError("buckets must be finite numbers (+Inf is implied)")
    if any(a >= b for a, b in zip(bounds, bounds[1:], strict=False)):
        raise ValueError("buckets must be strictly increasing")
    return bounds


class HistogramCounts:
    """Observations per bucket (not cumulative; the last is above every bound) and their sum."""

    __slots__ = ("counts", "sum")

    def __init__(self, size: int) -> None:
        self.counts = [0] * size
        self.sum = 0.0

    def copy(self) -> HistogramCounts:
        other = HistogramCounts(0)
        other.counts = self.counts.copy()
        other.sum = self.sum
        return other


class Snapshot:
    """What a ``Tally`` held at one moment (its own copies)."""

    __slots__ = ("scheduled", "ended", "lateness", "duration")

    def __init__(self, scheduled: dict[Labels, int], ended: dict[tuple[Labels, str], int],
                 lateness: dict[Labels, HistogramCounts],
                 duration: dict[Labels, HistogramCounts]) -> None:
        self.scheduled = scheduled
        self.ended = ended
        self.lateness = lateness
        self.duration = duration


class Tally:
    """A ``Sink`` (``listener``) that counts in memory; thread-safe."""

    def __init__(self, buckets: Iterable[float] = DEFAULT_BUCKETS) -> None:
        self.bounds = check_buckets(buckets)
        self._lock = threading.Lock()
        self._scheduled: dict[Labels, int] = {}
        self._ended: dict[tuple[Labels, str], int] = {}
        self._lateness: dict[Labels, HistogramCounts] = {}
        self._duration: dict[Labels, HistogramCounts] = {}

    def scheduled(self, labels: Labels) -> None:
        with self._lock:
            self._scheduled[labels] = self._scheduled.get(labels, 0) + 1

    def ended(self, labels: Labels, outcome: str) -> None:
        key = (labels, outcome)
        with self._lock:
            self._ended[key] = self._ended.get(key, 0) + 1

    def started(self, labels: Labels, lateness: float) -> None:
        self._observe(self._lateness, labels, lateness)

    def ran(self, labels: Labels, duration: float) -> None:
        self._observe(self._duration, labels, duration)

    def _observe(self, histograms: dict[Labels, HistogramCounts], labels: Labels,
                 value: float) -> None:
        slot = bisect.bisect_left(self.bounds, value)  # bounds are inclusive ("le")
        with self._lock:
            histogram = histograms.get(labels)
            if histogram is None:
                histogram = histograms[labels] = HistogramCounts(len(self.bounds) + 1)
            histogram.counts[slot] += 1
            histogram.sum += value

    def snapshot(self) -> Snapshot:
        with self._lock:
            return Snapshot(dict(self._scheduled), dict(self._ended),
                            {k: h.copy() for k, h in self._lateness.items()},
                            {k: h.copy() for k, h in self._duration.items()})
