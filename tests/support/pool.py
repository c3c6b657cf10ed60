"""Shared fixtures and helpers of the ThreadPoolScheduler tests.

``make_pool`` builds pools on the ``impl`` core (ids ``c`` and ``py``) with a
FakeClock, and closes every pool it made at teardown, checking that its
threads are gone. ``Gate`` lets a task block until the test releases it, with
events on both sides, so tests never sleep and hope. ``WAIT`` is the real-time
guard for results: it only turns a hang into a failure, nothing waits for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pysched.testing import FakeClock
from pysched.threadpool import ThreadPoolScheduler

WAIT = 20.0


class Gate:
    """A task body that reports it started and blocks until released."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.released = threading.Event()
        self.calls = 0

    def __call__(self, value: Any = None) -> Any:
        self.calls += 1
        self.started.set()
        assert self.released.wait(WAIT), "gate never released"
        return value

    def wait_started(self) -> None:
        assert self.started.wait(WAIT), "task never started"

    def release(self) -> None:
        self.released.set()


class Concurrency:
    """Counts the task bodies running at once, under a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


class Interrupt(BaseException):
    """A BaseException of the user's, as KeyboardInterrupt arriving in a callback is."""


def accounted(stats: dict[str, Any]) -> int:
    """Versions in any state: must equal stats["scheduled"]."""
    return sum(stats[k] for k in ("pending", "running", "completed", "failed", "timed_out",
                                  "cancelled", "replaced", "evicted", "idle_wakeups"))


# The conftest files of the folders whose tests use them import these by their
# function names; the fixtures are named ``clock`` and ``make_pool``.
@pytest.fixture(name="clock")
def clock_fixture() -> FakeClock:
    return FakeClock()


@pytest.fixture(name="make_pool")
def make_pool_fixture(impl: Any, clock: FakeClock) -> Iterator[Callable[..., ThreadPoolScheduler]]:
    pools: list[ThreadPoolScheduler] = []

    def make(max_workers: int = 2, **options: Any) -> ThreadPoolScheduler:
        options.setdefault("clock", clock)
        pool = ThreadPoolScheduler(max_workers, _core_factory=impl.Scheduler, **options)
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.close(wait=False, cancel_running=True)
        for thread in pool._threads:
            thread.join(WAIT)
            assert not thread.is_alive(), f"{thread.name} still running after close"
        assert pool.state == "closed"
        stats = pool.stats()
        assert stats["scheduled"] == accounted(stats), stats
        pool._core._check()
