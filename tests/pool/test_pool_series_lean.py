"""What a pool's recurring series leaves for the garbage collector: few objects, no cycles.

Counts, not timings: the objects the collector tracks per series, the ones a
fire leaves behind once the series' objects were frozen (``gc.freeze()``, the
documented way to keep many long-lived series out of full collections), and
that a cancelled series is freed by reference counting alone.
"""

from __future__ import annotations

import gc
import time
import weakref

from pysched import Every
from pysched.jobs import DEFAULT_HISTORY

from support.pool import WAIT

SERIES = 5_000


class Job:
    """A no-op job that counts its runs; weakly referenceable, to see when it is freed."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self) -> None:
        self.runs += 1


def tracked() -> int:
    gc.collect()
    return len(gc.get_objects())


def wait_until(check) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_series_adds_few_tracked_objects(make_pool, impl):
    pool = make_pool(2)
    job = Job()
    triggers = [Every(1.0 + i % 60) for i in range(SERIES)]  # the caller's, made before
    before = tracked()
    for i, trigger in enumerate(triggers):
        pool.schedule_recurring(i, trigger, 0, job)
    grown = tracked() - before
    # the series, its fire-time grid (which is its trigger too), the pool's record, and the
    # Future (the series' Futures share one lock); the pure-Python core keeps more per task id
    per_series = 6 if pure(impl) else 4
    assert grown <= per_series * SERIES + 200, grown / SERIES


def pure(impl) -> bool:
    return impl.Scheduler.__module__.endswith("_py")


def test_firing_leaves_no_tracked_object_per_series(make_pool, clock, impl):
    pool = make_pool(2)
    job = Job()
    for i in range(SERIES):
        pool.schedule_recurring(i, Every(1.0), 0, job, misfire_grace=None)
    gc.collect()
    gc.freeze()  # what the series hold now is out of the count
    try:
        before = tracked()
        clock.advance(1.0)
        wait_until(lambda: pool.stats()["completed"] >= SERIES)
        wait_until(lambda: pool.stats()["running"] == 0)
        grown = tracked() - before
    finally:
        gc.unfreeze()
    assert job.runs == SERIES
    # a fire replaces what its series holds by untracked values (floats), and its
    # record drops the core's Task once its run ended
    # (the pure-Python core keeps a Task and its entry per task id, made by the fire);
    # the scheduler's ring of recent runs holds at most DEFAULT_HISTORY, whatever the
    # number of series
    allowed = (2 * SERIES if pure(impl) else 0) + SERIES // 100 + 200 + DEFAULT_HISTORY
    assert grown <= allowed, grown / SERIES


def test_a_cancelled_series_is_freed_without_the_cycle_collector(make_pool, clock):
    pool = make_pool(1)
    job = Job()
    alive = weakref.ref(job)
    handle = pool.schedule_recurring("s", Every(1.0), 0, job)
    clock.advance(1.0)
    wait_until(lambda job=job: job.runs == 1 and pool.stats()["running"] == 0)
    gc.collect()
    gc.disable()
    try:
        assert handle.cancel()
        del handle, job
        assert alive() is None, gc.get_referrers(alive())
    finally:
        gc.enable()
