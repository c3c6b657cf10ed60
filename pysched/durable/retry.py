"""Retry: a task's policy for failures (how many runs, how long between, which exceptions)."""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Iterable
from typing import Any

__all__ = ["Retry"]


class Retry:
    """Run a failing version again, up to ``attempts`` runs in all.

    The n-th retry waits ``min(max_backoff, backoff * 2 ** (n - 1))`` seconds,
    scaled by a random factor in [0.5, 1] when ``jitter`` (so that many
    failures at once do not retry at once). Only exceptions that are instances
    of ``on`` are retried; others fail the version at once. Between tries the
    row is pending with the last error kept; after the last it is ``failed``
    with the error and traceback.

    >>> Retry(attempts=5, backoff=2.0, jitter=False).delay(3)
    8.0
    """

    __slots__ = ("attempts", "backoff", "jitter", "max_backoff", "on")

    def __init__(self, attempts: int = 3, *, backoff: float = 1.0, max_backoff: float = 300.0,
                 jitter: bool = True,
                 on: type[BaseException] | Iterable[type[BaseException]] = Exception) -> None:
        if type(attempts) is not int or attempts < 1:
            raise ValueError(f"attempts must be an int >= 1, got {attempts!r}")
        for name, value in (("backoff", backoff), ("max_backoff", max_backoff)):
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        # The longest duration a durable scheduler takes (about 292 years): a retry's run
        # time stays a date a store keeps, where 1e300 s from now is none.
        if max_backoff > threading.TIMEOUT_MAX:
            raise ValueError(f"max_backoff must be at most {threading.TIMEOUT_MAX:.0f} s,"
                             f" got {max_backoff!r}")
        kinds = (on,) if isinstance(on, type) else tuple(on)
        if not kinds or not all(isinstance(k, type) and issubclass(k, BaseException)
                                for k in kinds):
            raise TypeError(f"on must be exception classes, got {on!r}")
        self.attempts = attempts
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.jitter = bool(jitter)
        self.on = kinds

    def retries(self, exc: BaseException, attempt: int) -> bool:
        """Whether a run that raised ``exc`` on try ``attempt`` (1-based) runs again."""
        return attempt < self.attempts and isinstance(exc, self.on)

    def delay(self, attempt: int) -> float:
        """Seconds before the try after ``attempt``."""
        wait = min(self.max_backoff, self.backoff * 2.0 ** min(attempt - 1, 60))
        return wait * random.uniform(0.5, 1.0) if self.jitter else wait

    def __repr__(self) -> str:
        return (f"Retry(attempts={self.attempts}, backoff={self.backoff},"
                f" max_backoff={self.max_backoff}, jitter={self.jitter},"
                f" on={tuple(k.__name__ for k in self.on)})")

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Retry) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]
