"""ThreadPoolScheduler.jobs() and describe(): the snapshots match a plain model after any
sequence of schedule, cancel, replace and run; a series' counters and last runs."""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysched import Every
from pysched.jobs import SeriesInfo, TaskInfo
from pysched.testing import FakeClock
from pysched.threadpool import ThreadPoolScheduler

from support.examples import examples
from support.pool import WAIT, Gate

IDS = st.sampled_from(["a", "b", "c", 7])
OPS = st.lists(st.one_of(
    st.tuples(st.just("schedule"), IDS, st.integers(0, 4), st.integers(-2, 2)),
    st.tuples(st.just("series"), IDS, st.integers(-2, 2)),
    st.tuples(st.just("cancel"), IDS),
    st.tuples(st.just("run"), st.integers(0, 3)),
), max_size=20)


def noop() -> None:
    return None


def settled(pool: ThreadPoolScheduler, pending: int) -> None:
    """Wait until nothing runs and ``pending`` versions wait (a hang guard, not a timing)."""
    deadline = time.monotonic() + WAIT
    while True:
        stats = pool.stats()
        if stats["running"] == 0 and stats["pending"] == pending:
            return
        assert time.monotonic() < deadline, stats
        time.sleep(0.001)


@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_jobs_match_a_model_after_any_sequence(impl: Any, ops: list[tuple[Any, ...]]) -> None:
    clock = FakeClock()
    pool = ThreadPoolScheduler(2, clock=clock, _core_factory=impl.Scheduler)
    # task id -> ("task", due, priority, version, Future) or ("series", priority)
    model: dict[Any, tuple[Any, ...]] = {}
    try:
        for op in ops:
            if op[0] == "schedule":
                _, task_id, delay, priority = op
                fut = pool.schedule(task_id, clock() + delay, priority, noop)
                model[task_id] = ("task", clock() + delay, priority, fut.version, fut)
            elif op[0] == "series":  # fires far later than any run below
                _, task_id, priority = op
                pool.schedule_recurring(task_id, Every(1000.0), priority, noop)
                model[task_id] = ("series", priority)
            elif op[0] == "cancel":
                pool.cancel(op[1])
                model.pop(op[1], None)
            else:
                clock.advance(op[1])
            for task_id, entry in list(model.items()):  # what is due runs
                if entry[0] == "task" and entry[1] <= clock():
                    entry[4].result(WAIT)
                    del model[task_id]
            settled(pool, len(model))
            page = pool.jobs()
            assert page.next is None
            tasks = [j for j in page if isinstance(j, TaskInfo)]
            got = {j.task_id: ("task", j.due, j.priority, j.version) for j in tasks}
            got.update({j.series_id: ("series", j.priority) for j in page
                        if isinstance(j, SeriesInfo)})
            assert got == {k: v[:4] for k, v in model.items()}
            assert [j.due for j in tasks] == sorted(j.due for j in tasks)  # type: ignore[type-var]
            assert all(j.state == "pending" and j.attempts == 0 for j in tasks)
            for task_id, entry in model.items():
                described = pool.describe(task_id)
                assert described is not None and described.kind == entry[0]
            assert pool.describe("never") is None
            assert len(pool.jobs(state="pending")) == len(tasks)
            assert len(pool.jobs(state="active")) == len(model) - len(tasks)
    finally:
        pool.close()


def test_describe_a_series_after_skipped_late_and_failed_runs(make_pool: Any,
                                                              clock: FakeClock) -> None:
    pool = make_pool(1, history=50)
    gate = Gate()
    calls: list[int] = []

    def body() -> None:
        calls.append(1)
        if len(calls) == 1:
            gate()  # the first run is held while fire times 2.0 and 3.0 come due
        elif len(calls) == 3:
            raise ValueError("third run broke")

    handle = pool.schedule_recurring("tick", Every(1.0, start_at=1.0), 5, body,
                                     misfire_grace=0.25, overlap="skip")
    clock.advance(1.0)
    gate.wait_started()
    clock.advance(2.5)  # 3.5: fire times 2.0 and 3.0 came due during the run
    gate.release()
    clock.wait_for_sleeper(4.0)
    busy = Gate()  # the one worker is busy from 3.5 to 4.5: fire time 4.0 starts 0.5 late
    pool.schedule("busy", clock(), 9, busy)
    busy.wait_started()
    clock.advance(1.0)
    busy.release()
    clock.wait_for_sleeper(5.0)
    clock.advance(0.5)  # 5.0 runs on time and fails
    clock.wait_for_sleeper(6.0)
    handle.pause(note="disk full")
    info = pool.describe("tick")
    assert isinstance(info, SeriesInfo)
    assert (info.skipped, info.coalesced, info.late, info.overlapped) == (2, 0, 1, 2)
    assert info.paused and info.state == "paused" and info.note == "disk full"
    assert info.priority == 5 and info.timeline == "monotonic" and not info.running
    assert [(r.fire_time, r.outcome, r.error) for r in info.last_runs] == [
        (5.0, "failed", "ValueError: third run broke"), (4.0, "succeeded", None),
        (1.0, "succeeded", None)]
    run = info.last_runs[-1]
    assert run.started is not None and run.finished is not None and run.started <= run.finished
    assert info.next_fires[0] == 6.0 and len(info.next_fires) == 10
    assert all(isinstance(w, datetime.datetime) for w in info.next_fires_wall)
    handle.resume()
    assert pool.describe("tick").note is None  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="note"):
        handle.pause(note="x" * 3000)
    assert not handle.paused  # a refused note pauses nothing


def test_the_ring_of_runs_is_bounded_across_series(make_pool: Any, clock: FakeClock) -> None:
    pool = make_pool(2, history=3)
    pool.schedule_recurring("a", Every(1.0, start_at=1.0), 0, noop)
    pool.schedule_recurring("b", Every(1.0, start_at=1.0), 0, noop)
    for t in range(1, 4):
        clock.advance(1.0)
        clock.wait_for_sleeper(t + 1.0)
    runs = [pool.describe(s).last_runs for s in ("a", "b")]  # type: ignore[union-attr]
    assert sum(len(r) for r in runs) == 3  # six runs ended; the ring keeps three in all
    assert max(r[0].fire_time for r in runs if r) == 3.0  # type: ignore[type-var]
    with pytest.raises(ValueError, match="history"):
        make_pool(1, history=-1)
    with pytest.raises(ValueError, match="state"):
        pool.jobs(state="done")
