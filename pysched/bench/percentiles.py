"""Nearest-rank percentiles of timing samples, in milliseconds, for the benchmark reports."""

from __future__ import annotations

__all__ = ["percentiles"]


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50, p90, p99 and max (nearest rank) of ``samples`` in seconds, as milliseconds;
    and their count. ``samples`` must not be empty."""
    if not samples:
        raise ValueError("samples must not be empty")
    ordered = sorted(samples)
    n = len(ordered)

    def rank(q: float) -> float:  # nearest-rank percentile
        return ordered[min(n - 1, max(0, int(q * n + 0.999999) - 1))]

    return {"p50_ms": rank(0.5) * 1e3, "p90_ms": rank(0.9) * 1e3, "p99_ms": rank(0.99) * 1e3,
            "max_ms": ordered[-1] * 1e3, "count": n}
