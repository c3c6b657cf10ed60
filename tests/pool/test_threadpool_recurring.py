"""Recurring series on a FakeClock: fixed rate and fixed delay, overlap policies, errors, stopping.

Each run records the clock when it starts. After the test lets a run finish,
``clock.wait_for_sleeper(t)`` says the series' next run is pending for ``t``
and nothing else is due, so the list of runs is complete at that point.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading

import pytest

from pysched import SchedulerFull
from pysched.calendar import current_fire

from support.pool import WAIT


class Runs:
    """A series body: records each start time; run ``block_on`` waits for ``release``."""

    def __init__(self, clock, block_on=None, fail_on=()):
        self.clock = clock
        self.starts = []
        self.block_on = block_on
        self.fail_on = fail_on
        self.blocked = threading.Event()
        self.release = threading.Event()
        self.changed = threading.Condition()

    def __call__(self):
        n = len(self.starts)
        with self.changed:
            self.starts.append(self.clock())
            self.changed.notify_all()
        if n == self.block_on:
            self.blocked.set()
            assert self.release.wait(WAIT)
        if n in self.fail_on:
            raise RuntimeError(f"run {n} failed")

    def wait_for(self, count):
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.starts) >= count, WAIT)


def test_fixed_rate_runs_on_its_grid(make_pool, clock):
    pool = make_pool()
    runs = Runs(clock)
    series = pool.schedule_every("tick", 1.0, 0, runs, start_at=0.5)
    for k in range(4):
        clock.wait_for_sleeper(0.5 + k)
        clock.advance(1.0 if k else 0.5)
        runs.wait_for(k + 1)
    assert runs.starts == [0.5, 1.5, 2.5, 3.5]
    assert not series.done() and series.version == 1
    stats = pool.stats()
    assert stats["completed"] == 4 and stats["pending"] == 1


def test_default_start_is_one_interval_from_now(make_pool, clock):
    pool = make_pool()
    clock.advance(10.0)
    pool.schedule_every("tick", 2.0, 0, print)
    clock.wait_for_sleeper(12.0)


@pytest.mark.parametrize("overlap, starts_by_4_5, next_due, skipped, coalesced", [
    # run 0 (due 1) blocks until 4.5: runs due 2, 3 and 4 came due meanwhile
    ("skip", [1.0], 5.0, 3, 0),
    ("coalesce", [1.0, 4.5], 5.0, 0, 2),
    ("queue", [1.0, 4.5, 4.5, 4.5], 5.0, 0, 0),
])
def test_fixed_rate_overlap_policies(make_pool, clock, overlap, starts_by_4_5, next_due,
                                     skipped, coalesced):
    pool = make_pool(2)
    runs = Runs(clock, block_on=0)
    pool.schedule_every("tick", 1.0, 0, runs, start_at=1.0, overlap=overlap)
    clock.advance(1.0)
    assert runs.blocked.wait(WAIT)
    clock.advance(3.5)
    runs.release.set()
    runs.wait_for(len(starts_by_4_5))
    clock.wait_for_sleeper(next_due)  # the next run is pending, nothing else is due
    assert runs.starts == starts_by_4_5  # the runs never overlapped: one worker stayed idle
    stats = pool.stats()
    assert (stats["skipped"], stats["coalesced"]) == (skipped, coalesced)
    assert stats["peak_running"] == 1


def test_a_run_ending_exactly_on_the_next_tick_is_not_skipped(make_pool, clock):
    pool = make_pool()
    runs = Runs(clock, block_on=0)
    pool.schedule_every("tick", 1.0, 0, runs, start_at=1.0, overlap="skip")
    clock.advance(1.0)
    assert runs.blocked.wait(WAIT)
    clock.advance(1.0)  # run 0 returns at 2.0, when run 1 is due
    runs.release.set()
    runs.wait_for(2)
    assert runs.starts == [1.0, 2.0] and pool.stats()["skipped"] == 0


def test_fixed_delay_counts_from_the_end_of_a_run(make_pool, clock):
    pool = make_pool()
    runs = Runs(clock, block_on=0)
    pool.schedule_every("tick", 1.0, 0, runs, start_at=1.0, mode="fixed_delay", overlap="queue")
    clock.advance(1.0)
    assert runs.blocked.wait(WAIT)
    clock.advance(2.5)
    runs.release.set()
    clock.wait_for_sleeper(4.5)  # ended at 3.5: the next is due 1 s later
    clock.advance(1.0)
    runs.wait_for(2)
    assert runs.starts == [1.0, 4.5]


def test_an_exception_stops_the_series_by_default(make_pool, clock):
    pool = make_pool()
    runs = Runs(clock, fail_on=(1,))
    series = pool.schedule_every("tick", 1.0, 0, runs, start_at=1.0)
    clock.advance(1.0)
    runs.wait_for(1)
    clock.wait_for_sleeper(2.0)
    clock.advance(1.0)
    exc = series.exception(WAIT)
    assert isinstance(exc, RuntimeError) and str(exc) == "run 1 failed"
    stats = pool.stats()
    assert (stats["completed"], stats["failed"], stats["pending"]) == (1, 1, 0)


def test_on_error_continue_keeps_running(make_pool, clock):
    pool = make_pool()
    runs = Runs(clock, fail_on=(0, 2))
    series = pool.schedule_every("tick", 1.0, 0, runs, start_at=1.0, on_error="continue")
    for k in range(4):
        clock.advance(1.0)
        runs.wait_for(k + 1)
        clock.wait_for_sleeper(2.0 + k)
    assert not series.done()
    stats = pool.stats()
    assert (stats["completed"], stats["failed"]) == (2, 2)


def test_a_timed_out_run_counts_as_a_failure(make_pool, clock):
    pool = make_pool()

    def run():
        from pysched import current_token
        current_token().wait()

    series = pool.schedule_every("tick", 10.0, 0, run, start_at=0.0, timeout=1.0)
    clock.wait_for_sleeper(1.0)
    clock.advance(1.0)
    assert isinstance(series.exception(WAIT), TimeoutError)
    assert pool.stats()["timed_out"] == 1


@pytest.mark.parametrize("how", ["cancel_id", "cancel_future"])
def test_cancelling_stops_the_series_between_runs(make_pool, clock, how):
    pool = make_pool()
    runs = Runs(clock)
    series = pool.schedule_every("tick", 1.0, 0, runs, start_at=1.0)
    clock.advance(1.0)
    runs.wait_for(1)
    clock.wait_for_sleeper(2.0)
    assert pool.cancel("tick") if how == "cancel_id" else series.cancel()
    assert series.cancelled() and series.cancel_reason == "cancelled"
    probe = pool.schedule("probe", 5.0, 0, abs, (0,))
    clock.advance(4.0)
    probe.result(WAIT)
    assert runs.starts == [1.0] and pool.stats()["pending"] == 0


def test_cancelling_during_a_run_lets_it_finish_and_stops_the_series(make_pool, clock):
    pool = make_pool(1)  # one worker: the probe runs after the series' run has finished
    runs = Runs(clock, block_on=0)
    series = pool.schedule_every("tick", 1.0, 0, runs, start_at=1.0)
    clock.advance(1.0)
    assert runs.blocked.wait(WAIT)
    assert series.cancel() and series.cancelled()
    runs.release.set()
    probe = pool.schedule("probe", 5.0, 0, abs, (0,))
    clock.advance(4.0)
    probe.result(WAIT)
    assert runs.starts == [1.0]
    stats = pool.stats()
    assert (stats["completed"], stats["pending"], stats["running"]) == (2, 0, 0)


def test_scheduling_the_id_replaces_the_series(make_pool, clock):
    pool = make_pool()
    series = pool.schedule_every("tick", 1.0, 0, print, start_at=1.0)
    one_shot = pool.schedule("tick", 0.5, 0, abs, (-3,))
    assert series.cancelled() and series.cancel_reason == "replaced"
    clock.advance(0.5)
    assert one_shot.result(WAIT) == 3


def test_a_full_scheduler_ends_the_series(make_pool, clock):
    pool = make_pool(max_pending=1)
    runs = Runs(clock, block_on=0)
    series = pool.schedule_every("tick", 1.0, 0, runs, start_at=1.0)
    clock.advance(1.0)
    assert runs.blocked.wait(WAIT)
    pool.schedule("other", 9.0, 0, print)  # takes the only pending slot
    runs.release.set()
    assert isinstance(series.exception(WAIT), SchedulerFull)


def test_schedule_every_is_a_recurring_series(make_pool, clock):
    """Its runs know their fire time and its skips are series events, as schedule_recurring's."""
    pool = make_pool()
    events = []
    pool.add_listener(lambda e: events.append(e) if e.series == "tick" else None)  # no jumps
    runs = Runs(clock, block_on=0)
    fires = []

    def body():
        fires.append(current_fire().fire_time)
        runs()

    series = pool.schedule_every("tick", 1.0, 0, body, start_at=1.0)
    clock.advance(1.0)
    assert runs.blocked.wait(WAIT)
    clock.advance(2.5)  # run 0 returns at 3.5: the fire times 2.0 and 3.0 came due meanwhile
    runs.release.set()
    clock.wait_for_sleeper(4.0)
    assert fires == [1.0]
    assert [(e.series, e.kind, e.reason, e.fire_time, e.count) for e in events] == [
        ("tick", "skipped", "overlap", 2.0, 2)]
    stats = pool.stats()
    assert stats["skipped"] == 2 and stats["series_events"]["skipped.overlap"] == 1
    assert pool.cancel("tick") and series.cancelled()
    assert [(e.kind, e.reason) for e in events[1:]] == [("stopped", "cancelled")]


@pytest.mark.parametrize("overlap, fires, skipped", [
    ("skip", [3.0], 2), ("coalesce", [3.0], 2), ("queue", [1.0, 2.0, 3.0], 0)])
def test_fire_times_due_while_no_worker_was_free(make_pool, clock, overlap, fires, skipped):
    """The one worker is busy from 0.5 to 3.5: fire times 1, 2 and 3 wait for it. The newest
    runs and the older are skipped (catch_up_cap); under queue each runs."""
    from support.pool import Gate

    pool = make_pool(1)
    events = []
    pool.add_listener(events.append)
    gate = Gate()
    pool.schedule("busy", 0.5, 0, gate)
    started = []
    pool.schedule_every("tick", 1.0, 0, lambda: started.append(current_fire().fire_time),
                        start_at=1.0, overlap=overlap)
    clock.advance(0.5)
    gate.wait_started()
    clock.advance(3.0)
    gate.release()
    clock.wait_for_sleeper(4.0)
    assert started == fires
    assert pool.stats()["skipped"] == skipped
    # (the wall clock is the real one, the pool's a fake: their jumps are events too)
    assert [(e.reason, e.fire_time, e.count) for e in events if e.series == "tick"] == (
        [("catch_up_cap", 1.0, 2)] if skipped else [])


def test_cancelling_a_series_as_its_failing_run_ends_it_keeps_the_failure(make_pool, clock):
    # A run fails and ends its series (on_error="stop"); its worker has left the
    # book and is about to fail the series' Future. A cancel() in that window
    # used to find a PENDING Future nobody held: it cancelled it without telling
    # concurrent.futures.wait() (which then waited forever) and lost the failure.
    pool = make_pool(1)
    failure = ValueError("the run that ends the series")

    def boom():
        raise failure

    series = pool.schedule_every("s", 1.0, 0, boom, start_at=1.0)
    in_window = threading.Event()
    proceed = threading.Event()
    settle = series.settle

    def held(result, exception):  # the worker's next step, held at the window
        in_window.set()
        assert proceed.wait(WAIT)
        return settle(result, exception)

    series.settle = held
    waited = []
    waiter = threading.Thread(target=lambda: waited.append(cf.wait([series], timeout=WAIT)))
    waiter.start()
    clock.advance(1.0)
    assert in_window.wait(WAIT)
    cancelled = series.cancel()
    proceed.set()
    waiter.join(WAIT)
    assert waited and not waited[0].not_done, "concurrent.futures.wait() was never told"
    assert not cancelled, "cancel() stopped a series that had already ended"
    assert series.exception(0) is failure
