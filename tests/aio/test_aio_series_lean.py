"""What AsyncScheduler's recurring series leave for the garbage collector.

Counts, not timings: the objects the collector tracks per series (the
series and its fire-time grid), and that a cancelled series is freed by
reference counting alone, with the cycle collector off.
"""

from __future__ import annotations

import asyncio
import gc
import weakref

from pysched import Every

from support.aio import VirtualTimeLoop, run

SERIES = 5_000


class Job:
    """A no-op job that counts its runs; weakly referenceable, to see when it is freed."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, *args: object) -> None:
        self.runs += 1


def tracked() -> int:
    gc.collect()
    return len(gc.get_objects())


def test_a_series_adds_two_tracked_objects(make_scheduler):
    async def main():
        s = make_scheduler()
        job = Job()
        triggers = [Every(1.0 + i % 60) for i in range(SERIES)]  # the caller's, made before
        s.schedule_recurring(-1, triggers[0], 0, job)  # the book and its timer, made once
        before = tracked()
        for i, trigger in enumerate(triggers):
            s.schedule_recurring(i, trigger, 0, job, (i,))
        grown = tracked() - before
        await s.aclose()
        return grown

    grown = run(main, VirtualTimeLoop)
    assert grown <= 2 * SERIES + 200, grown / SERIES


def test_a_cancelled_series_is_freed_without_the_cycle_collector(make_scheduler):
    async def main():
        s = make_scheduler()
        job = Job()
        alive = weakref.ref(job)
        handle = s.schedule_recurring("s", Every(1.0), 0, job)
        await asyncio.sleep(1.5)
        assert job.runs == 1
        gc.collect()
        gc.disable()
        try:
            assert handle.cancel()
            del handle, job
            freed = alive() is None
        finally:
            gc.enable()
        await s.aclose()
        return freed

    assert run(main, VirtualTimeLoop)
