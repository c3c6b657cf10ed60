"""Claim order and due times across every finite time, on the Cython core and the pure twin.

The core keeps each run_at in its heap as an integer in the same order and
picks the best of four children by arithmetic, not by branches; these
properties check both against the plain definition: tasks leave in order of
(run_at, -priority, submission), never early, and with their run_at intact.
"""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.examples import examples

SETTINGS = settings(max_examples=examples(200), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

# Times at the edges of the order: both zeros, the smallest subnormals, the
# largest finite doubles, and neighbours across 0 and 1. Drawn from a small
# pool, many tasks share a time, so ties on run_at reach every compare of a
# pop; drawn from all finite floats, times are distinct.
EDGE_TIMES = [0.0, -0.0, 5e-324, -5e-324, 1e308, -1e308, 1.7976931348623157e308,
              -1.7976931348623157e308, 1.0, math.nextafter(1.0, 2.0),
              math.nextafter(1.0, 0.0), -1.0, 2.2250738585072014e-308]
TIMES = st.one_of(st.sampled_from(EDGE_TIMES), st.floats(allow_nan=False, allow_infinity=False))
PRIORITIES = st.one_of(st.integers(-2, 2), st.integers(-(2**63), 2**63 - 1))
TASKS = st.lists(st.tuples(TIMES, PRIORITIES), max_size=300)


def noop() -> None:
    pass


def expected_order(tasks: list[tuple[float, int]]) -> list[int]:
    """Task indexes in claim order, by the definition."""
    return sorted(range(len(tasks)), key=lambda k: (tasks[k][0], -tasks[k][1], k))


@SETTINGS
@given(tasks=TASKS, limit=st.integers(1, 70), data=st.data())
def test_claims_follow_time_then_priority_then_submission(impl, tasks, limit, data):
    s = impl.Scheduler(clock=lambda: 0.0)
    s.schedule_many([(k, run_at, priority, noop) for k, (run_at, priority) in enumerate(tasks)])
    claimed = []
    while True:
        # Alternate next() and pop_due() batches: both claim in the same order.
        if data.draw(st.booleans(), label="pop_due"):
            batch = s.pop_due(1.7976931348623157e308, limit)
        else:
            task = s.next(now=1.7976931348623157e308)
            batch = [task] if isinstance(task, impl.Task) else []
        if not batch:
            break
        claimed += batch
        s.complete_many(batch)
    s._check()
    assert [task.task_id for task in claimed] == expected_order(tasks)
    # run_at comes back equal to what was scheduled (-0.0 as an equal 0.0).
    assert all(task.run_at == tasks[task.task_id][0] for task in claimed)
    assert all(task.priority == tasks[task.task_id][1] for task in claimed)


@SETTINGS
@given(tasks=TASKS, cancels=st.lists(st.integers(0, 299)), reschedules=st.lists(
    st.tuples(st.integers(0, 299), TIMES, PRIORITIES)))
def test_stale_entries_never_change_the_order(impl, tasks, cancels, reschedules):
    s = impl.Scheduler(clock=lambda: 0.0)
    live = dict(enumerate(tasks))
    order = {k: k for k in live}  # submission rank of each id's pending version
    for k, (run_at, priority) in live.items():
        s.schedule(k, run_at, priority, noop)
    for rank, (k, run_at, priority) in enumerate(reschedules, start=len(tasks)):
        s.schedule(k, run_at, priority, noop)
        live[k] = (run_at, priority)
        order[k] = rank
    for k in cancels:
        assert s.cancel(k) == (k in live)
        live.pop(k, None)
    s._check()
    claimed = s.pop_due(1.7976931348623157e308)
    s._check()
    expected = sorted(live, key=lambda k: (live[k][0], -live[k][1], order[k]))
    assert [task.task_id for task in claimed] == expected


@SETTINGS
@given(run_at=TIMES, priority=PRIORITIES)
def test_a_task_is_due_exactly_at_its_time(impl, run_at, priority):
    s = impl.Scheduler(clock=lambda: 0.0)
    s.schedule("a", run_at, priority, noop)
    before = math.nextafter(run_at, -math.inf)
    if before != run_at and math.isfinite(before) and before < run_at:
        wait = s.next(now=before)
        assert isinstance(wait, float) and wait > 0
        assert s.pop_due(before) == []
    assert s.peek() == (run_at, "a")
    task = s.next(now=run_at)
    assert isinstance(task, impl.Task) and task.run_at == run_at


def test_both_zeros_are_one_time(impl):
    s = impl.Scheduler(clock=lambda: 0.0)
    s.schedule("low", 0.0, 0, noop)
    s.schedule("high", -0.0, 1, noop)
    s.schedule("later", 5e-324, 9, noop)
    s.schedule("sooner", -5e-324, -9, noop)
    assert [task.task_id for task in s.pop_due(-0.0)] == ["sooner", "high", "low"]
    assert s.next(now=0.0) == 5e-324


def test_a_time_of_minus_zero_comes_back_as_zero_from_both(impl):
    s = impl.Scheduler(clock=lambda: 0.0)
    s.schedule("a", -0.0, 0, noop)
    s.schedule_many([("b", -0.0, 0, noop)])
    assert [math.copysign(1.0, run_at) for run_at, _ in [s.peek()]] == [1.0]
    assert [math.copysign(1.0, task.run_at) for task in s.pop_due(1.0)] == [1.0, 1.0]


@pytest.mark.parametrize(("run_at", "now"), [
    (sys.float_info.max, -sys.float_info.max),
    (1e308, -1e308),
])
def test_the_wait_is_finite_across_the_whole_range(impl, run_at, now):
    """Both: run_at 1.7e308 at now -1.7e308 gave a wait of inf."""
    s = impl.Scheduler()
    s.schedule("a", run_at, 0, noop)
    wait = s.next(now=now)
    assert isinstance(wait, float) and wait > 0 and math.isfinite(wait)
