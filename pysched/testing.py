"""Test helpers: a clock that moves only when the test says so.

``FakeClock`` implements the waiting hook of ``pysched.pool.clocks``: a thread
blocked in ``wait_until(condition, deadline)`` is woken by the ``advance()``
that brings the clock to its deadline. Pass it as ``clock=`` to a
``ThreadPoolScheduler`` and the dispatcher, task timeouts, ``CancelToken.wait``
and ``close(timeout=...)`` all run on fake time, deterministically.

Lock order: a FakeClock's own lock is a leaf. ``wait_until`` takes it while
its caller holds the condition's lock; ``advance`` releases it before it
takes any condition's lock to notify.
"""

from __future__ import annotations

import itertools
import threading
import time

from ._validate import check_time

__all__ = ["FakeClock"]


class FakeClock:
    """A monotonic clock for tests: time moves only through ``advance()``.

    >>> clock = FakeClock()
    >>> clock()
    0.0
    >>> clock.advance(2.5)
    >>> clock()
    2.5

    Reading it is O(1) and takes no lock. ``advance`` wakes every thread whose
    ``wait_until`` deadline it reaches (O(waiters)).
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = check_time(start, "start")
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # waiters came or went
        self._keys = itertools.count()
        # key -> (condition, deadline) for each thread now blocked in wait_until
        self._sleepers: dict[int, tuple[threading.Condition, float | None]] = {}

    def __call__(self) -> float:
        return self._now

    @property
    def now(self) -> float:
        """The current reading."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` (>= 0) and wake whoever is now due."""
        seconds = check_time(seconds, "seconds")
        if seconds < 0:
            raise ValueError(f"seconds must be >= 0 (a monotonic clock never goes back),"
                             f" got {seconds!r}")
        with self._lock:
            self._now += seconds
            due = {id(cond): cond for cond, deadline in self._sleepers.values()
                   if deadline is not None and deadline <= self._now}
        for cond in due.values():  # outside our lock: the leaf rule above
            with cond:
                cond.notify_all()

    def wait_until(self, condition: threading.Condition, deadline: float | None) -> None:
        """Block on ``condition`` (lock held) until notified or this clock reaches ``deadline``."""
        with self._lock:
            if deadline is not None and self._now >= deadline:
                return
            key = next(self._keys)
            self._sleepers[key] = (condition, deadline)
            self._changed.notify_all()
        # No lost wake-up: an advance() after the registration above must take
        # the condition's lock to notify, and condition.wait() releases it.
        try:
            condition.wait()
        finally:
            with self._lock:
                del self._sleepers[key]
                self._changed.notify_all()

    def deadlines(self) -> list[float]:
        """The deadlines that blocked threads now wait for, earliest first."""
        with self._lock:
            return sorted(d for _, d in self._sleepers.values() if d is not None)

    def wait_for_sleeper(self, deadline: float, timeout: float = 10.0) -> None:
        """Block until some thread waits on this clock for ``deadline``.

        Tests use it to know that a scheduler reached its wait before they
        advance the clock or act. ``timeout`` is in real seconds and only
        guards against a test that would otherwise hang: TimeoutError.
        """
        deadline = check_time(deadline, "deadline")
        limit = time.monotonic() + timeout
        with self._lock:
            while not any(d == deadline for _, d in self._sleepers.values()):
                remaining = limit - time.monotonic()
                if remaining <= 0:
                    waiting = sorted(d for _, d in self._sleepers.values() if d is not None)
                    raise TimeoutError(f"no thread waits for {deadline!r};"
                                       f" deadlines waited for: {waiting}")
                self._changed.wait(remaining)

    def __repr__(self) -> str:
        return f"<FakeClock now={self._now!r} sleepers={len(self._sleepers)}>"
