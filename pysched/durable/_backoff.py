"""Backoff: how long a job thread waits before it tries a failed round again."""

from __future__ import annotations

import random

__all__ = ["Backoff"]


class Backoff:
    """Exponential backoff with full jitter between ``base`` and ``cap`` seconds.

    Used by one thread only (each job has its own), so it takes no lock.
    """

    def __init__(self, base: float, cap: float) -> None:
        self.base = base
        self.cap = max(cap, base)
        self._failures = 0

    def failed(self) -> float:
        """Record a failure; the delay before the next try."""
        self._failures += 1
        ceiling = min(self.cap, self.base * 2 ** min(self._failures - 1, 30))
        return random.uniform(ceiling / 2, ceiling)

    def succeeded(self) -> None:
        self._failures = 0
