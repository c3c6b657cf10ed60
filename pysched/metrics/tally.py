"""Counts and histograms by label, kept in memory for a collector to read.

The Prometheus collector (``prometheus``) reads these on each scrape. Each
set of labels has its ``SeriesCounts``, which a listener keeps, so an update
is a few attribute changes (and a bucket search, O(log buckets)) under one
lock shared by all; reading copies everything under that lock, so a scrape
sees one consistent moment.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Iterable

from .listener import Labels

__all__ = ["DEFAULT_BUCKETS", "HistogramCounts", "SeriesCounts", "Tally", "check_buckets"]

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

    @property
    def count(self) -> int:
        return sum(self.counts)


class SeriesCounts:
    """The counts of one set of labels: a ``Recorder`` (``listener``).

    Every change and every copy holds the owning Tally's lock, so a scrape
    reads all series as of one moment.
    """

    __slots__ = ("labels", "scheduled_count", "outcomes", "lateness", "duration", "_lock",
                 "_bounds")

    def __init__(self, labels: Labels, bounds: tuple[float, ...], lock: threading.Lock) -> None:
        self.labels = labels
        self.scheduled_count = 0
        self.outcomes: dict[str, int] = {}
        self.lateness = HistogramCounts(len(bounds) + 1)
        self.duration = HistogramCounts(len(bounds) + 1)
        self._lock = lock
        self._bounds = bounds

    def scheduled(self) -> None:
        with self._lock:
            self.scheduled_count += 1

    def ended(self, outcome: str) -> None:
        outcomes = self.outcomes
        with self._lock:
            outcomes[outcome] = outcomes.get(outcome, 0) + 1

    def started(self, lateness: float) -> None:
        self._observe(self.lateness, lateness)

    def ran(self, duration: float) -> None:
        self._observe(self.duration, duration)

    def _observe(self, histogram: HistogramCounts, value: float) -> None:
        slot = bisect.bisect_left(self._bounds, value)  # bounds are inclusive ("le")
        with self._lock:
            histogram.counts[slot] += 1
            histogram.sum += value

    def copy(self) -> SeriesCounts:
        """A copy to read at leisure; the caller holds the lock."""
        other = SeriesCounts(self.labels, self._bounds, self._lock)
        other.scheduled_count = self.scheduled_count
        other.outcomes = dict(self.outcomes)
        other.lateness = self.lateness.copy()
        other.duration = self.duration.copy()
        return other


class Tally:
    """A ``Sink`` (``listener``) that counts in memory; thread-safe."""

    def __init__(self, buckets: Iterable[float] = DEFAULT_BUCKETS) -> None:
        self.bounds = check_buckets(buckets)
        self._lock = threading.Lock()
        self._series: dict[Labels, SeriesCounts] = {}

    def recorder(self, labels: Labels) -> SeriesCounts:
        """The counts of ``labels``, made on first use."""
        with self._lock:
            found = self._series.get(labels)
            if found is None:
                found = self._series[labels] = SeriesCounts(labels, self.bounds, self._lock)
            return found

    def snapshot(self) -> list[SeriesCounts]:
        """Copies of every series' counts as of now, sorted by labels."""
        with self._lock:
            return [self._series[labels].copy() for labels in sorted(self._series)]
