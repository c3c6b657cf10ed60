"""``current_fire().lateness`` is how late the run started, however long it waited to start.

A run decided while another was in progress (``overlap="queue"``) or while
no worker was free starts later than it was decided; its lateness is the
start's, in the series itself, in the thread pool and on the event loop.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from pysched import AsyncScheduler, Every, ThreadPoolScheduler
from pysched.calendar import Fire, Reading, Series, current_fire
from pysched.testing import FakeClock

from support.aio import VirtualTimeLoop, run

WAIT = 20.0


def at(t: float) -> Reading:
    return Reading(1_000_000.0 + t, t)


def test_a_queued_run_starts_with_its_lateness_at_the_start() -> None:
    series = Series("job", Every(1.0, start_at=1.0), at(0.0), misfire_grace=None,
                    overlap="queue")
    assert series.poll(at(1.0)).start == Fire(1.0, 0.0)
    assert series.begin(at(1.0)) == (True, [])
    series.finished(at(3.5))  # 2.0 and 3.0 came due meanwhile: both are queued
    assert series.poll(at(3.5)).start == Fire(2.0, 1.5)
    series.begin(at(3.5))
    series.finished(at(4.5))
    decided = series.poll(at(4.5)).start  # 3.0, queued at 3.5
    assert decided is not None and decided.fire_time == 3.0
    series.begin(at(4.5))
    assert series.running == Fire(3.0, 1.5)
    series.finished(at(4.5))


def test_a_run_that_waited_past_its_grace_has_the_lateness_its_late_event_has() -> None:
    series = Series("job", Every(1.0, start_at=1.0), at(0.0), misfire_grace=0.5)
    decided = series.poll(at(1.1)).start
    assert decided is not None and decided.lateness == pytest.approx(0.1)  # decided 0.1 late
    start, [late] = series.begin(at(1.6))  # and started 0.6 late: a late event
    assert start and late.kind == "late" and late.lateness == pytest.approx(0.6)
    assert series.running == Fire(1.0, late.lateness)


class Runs:
    """A series' function: records (fire time, lateness, clock) as it starts, then blocks
    until the test lets it end."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.starts: list[tuple[float, float, float]] = []
        self.started = threading.Semaphore(0)
        self.ends = threading.Semaphore(0)

    def __call__(self) -> None:
        fire = current_fire()
        assert fire is not None
        self.starts.append((fire.fire_time, fire.lateness, self.clock()))
        self.started.release()
        assert self.ends.acquire(timeout=WAIT)

    def wait_started(self) -> None:
        assert self.started.acquire(timeout=WAIT)


def test_the_pool_gives_a_queued_run_its_lateness_at_the_start(impl) -> None:
    clock = FakeClock()
    pool = ThreadPoolScheduler(1, clock=clock, _core_factory=impl.Scheduler)
    runs = Runs(clock)
    series = pool.schedule_every("job", 1.0, 0, runs, start_at=1.0, overlap="queue")
    clock.wait_for_sleeper(1.0)
    clock.advance(1.0)
    for ran_for in (2.5, 1.0, 0.0):  # the first run outlasts 2.0 and 3.0: both queue
        runs.wait_started()
        clock.advance(ran_for)
        runs.ends.release()
    runs.wait_started()
    series.cancel()
    runs.ends.release()
    assert pool.close(wait=True, timeout=WAIT)
    assert runs.starts == [(1.0, 0.0, 1.0), (2.0, 1.5, 3.5), (3.0, 1.5, 4.5), (4.0, 0.5, 4.5)]


def test_the_event_loop_gives_a_queued_run_its_lateness_at_the_start(impl) -> None:
    async def main() -> list[tuple[float, float, float]]:
        loop = asyncio.get_running_loop()
        scheduler = AsyncScheduler(_core_factory=impl.Scheduler)
        starts: list[tuple[float, float, float]] = []
        durations = iter([2.5, 1.0, 0.0, 0.0])

        async def job() -> None:
            fire = current_fire()
            assert fire is not None
            starts.append((fire.fire_time - t0, fire.lateness, loop.time() - t0))
            await asyncio.sleep(next(durations))

        t0 = loop.time()
        scheduler.schedule_recurring("job", Every(1.0, start_at=t0 + 1.0), 0, job,
                                     misfire_grace=None, overlap="queue")
        await asyncio.sleep(4.6)
        await scheduler.aclose()
        return starts

    starts = run(main, VirtualTimeLoop)
    assert [fire for fire, _, _ in starts] == pytest.approx([1.0, 2.0, 3.0, 4.0])
    assert [late for _, late, _ in starts] == pytest.approx([0.0, 1.5, 1.5, 0.5])
    assert [late for _, late, _ in starts] == pytest.approx(
        [start - fire for fire, _, start in starts])
