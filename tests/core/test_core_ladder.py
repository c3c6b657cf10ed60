"""The core's pending set (a ladder queue, docs/core-structure.md) orders exactly.

Each test runs on both implementations: the twin keeps one heap, the core a
ladder of buckets with two heaps as guards, and both must hand out every
version in (run_at, -priority, seq) order, whatever the run times look like.
A plain sorted model is the reference. The shapes come from the fuzzers
(tests/fuzz/spreads.py): they are the ones that defeat bucketing by time.
"""

from __future__ import annotations

import random
import sys
import tracemalloc

import pytest
from fuzz.spreads import SHAPES, spread_items

from support.impl import NO_EXTENSIONS, compiled_module


def noop() -> None:
    pass


def expected_order(calls: list[tuple[object, float | int, int]]) -> list[object]:
    """The ids of ``calls`` (scheduled in this order) in the order they must run."""
    last = {task_id: (float(run_at), -priority, seq)
            for seq, (task_id, run_at, priority) in enumerate(calls)}
    return [task_id for task_id, _ in sorted(last.items(), key=lambda item: item[1])]


def claim_all(s, limit: int | None = None) -> list[object]:
    """Claim and complete up to ``limit`` tasks (all when None), whatever their time; their ids."""
    tasks = s.pop_due(sys.float_info.max, limit)
    s.complete_many(tasks)
    return [task.task_id for task in tasks]


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_drains_in_order(impl, shape):
    calls = spread_items(shape, 3000, 0, 7)
    s = impl.Scheduler(clock=lambda: 0.0)
    for task_id, run_at, priority in calls:
        s.schedule(task_id, run_at, priority, noop)
    s._check()
    assert claim_all(s, 1) + claim_all(s, 999) + claim_all(s) == expected_order(calls)
    s._check()


@pytest.mark.parametrize("shape", SHAPES)
def test_shapes_mixed_into_a_ladder_being_drained(impl, shape):
    """Bursts of each shape land before, inside, between and past the buckets of a
    ladder that is part way through a drain: every claim is the model's next."""
    rng = random.Random(shape)
    s = impl.Scheduler(clock=lambda: 0.0)
    model: dict[object, tuple[float, int, int]] = {}
    seq = 0

    def schedule(calls):
        nonlocal seq
        for task_id, run_at, priority in calls:
            s.schedule(task_id, run_at, priority, noop)
            model[task_id] = (float(run_at), -priority, seq)
            seq += 1

    schedule(spread_items("uniform", 2000, 0, 1))
    for round_ in range(6):
        for _ in range(rng.randrange(4, 12)):
            count = rng.randrange(1, 60)
            first = sorted(model, key=model.__getitem__)[:count]
            assert claim_all(s, count) == first
            for task_id in first:
                del model[task_id]
        schedule(spread_items(shape, rng.randrange(100, 700), 4096 * (round_ + 1), round_))
        for task_id in rng.sample(sorted(model, key=repr), len(model) // 10):
            assert s.cancel(task_id)
            del model[task_id]
        s._check()
    assert claim_all(s) == sorted(model, key=model.__getitem__)
    s._check()


def test_a_timer_wheel_load_in_steady_state(impl):
    """Timeouts armed at now + a random delay while due ones fire, the clock moving on:
    inserts land in every part of the ladder, and every claim is the model's next."""
    rng = random.Random(3)
    s = impl.Scheduler(clock=lambda: 0.0)
    model: dict[int, tuple[float, int, int]] = {}
    now = 1000.0
    for seq in range(12_000):
        run_at = now + rng.choice([rng.random() * 30.0, rng.random() * 0.01, -rng.random()])
        s.schedule(seq % 5000, run_at, seq % 3, noop)
        model[seq % 5000] = (run_at, -(seq % 3), seq)
        if seq % 8 == 0:
            now += 0.01
            due = s.pop_due(now)
            s.complete_many(due)
            expected = sorted((key, task_id) for task_id, key in model.items() if key[0] <= now)
            assert [task.task_id for task in due] == [task_id for _, task_id in expected]
            for task in due:
                del model[task.task_id]
        if seq % 3000 == 0:
            s._check()
    assert claim_all(s) == sorted(model, key=model.__getitem__)


def test_a_flood_of_past_due_tasks_is_spilled_back_in_order(impl):
    """Far more past-due tasks than pending ones, arriving one call at a time."""
    s = impl.Scheduler(clock=lambda: 0.0)
    calls = [(i, 1000.0 + i, 0) for i in range(3000)]
    for task_id, run_at, priority in calls:
        s.schedule(task_id, run_at, priority, noop)
    assert claim_all(s, 10) == list(range(10))
    flood = spread_items("past_due", 8000, 10_000, 1)
    for task_id, run_at, priority in flood:
        s.schedule(task_id, run_at, priority, noop)
    s._check()
    assert claim_all(s) == expected_order(flood + calls[10:])
    assert s.stats()["heap_size"] == 0


@pytest.mark.skipif(NO_EXTENSIONS, reason="the core's own allocations")
@pytest.mark.parametrize("shape", ["uniform", "clusters", "equal_time"])
def test_a_bucket_moved_down_without_memory_is_heapified_in_place(shape):
    """Moving buckets down allocates new rungs; when that fails the core keeps the
    bucket as a heap instead, so peek() and next() never fail for it and the order
    holds. Each allocation of the first peek fails in turn."""
    testcapi = pytest.importorskip("_testcapi")
    core = compiled_module()
    calls = spread_items(shape, 600, 0, 2)
    expected = expected_order(calls)
    for k in range(40):
        s = core.Scheduler(clock=lambda: 0.0)
        for task_id, run_at, priority in calls:
            s.schedule(task_id, run_at, priority, noop)
        testcapi.set_nomemory(k, k + 1)  # only the k-th allocation from here fails
        try:
            head = s.peek()
        except MemoryError:
            head = None  # the tuple peek() returns could not be made
        finally:
            testcapi.remove_mem_hooks()
        s._check()
        assert head is None or head[1] == expected[0]
        assert claim_all(s) == expected, f"allocation {k}"


@pytest.mark.skipif(NO_EXTENSIONS, reason="the core's own allocations")
@pytest.mark.parametrize("shape", ["uniform", "exponential", "past_due", "equal_time"])
def test_memory_follows_the_tasks_out(shape):
    """After a burst is drained, the core holds under a tenth of its peak allocations."""
    core = compiled_module()
    calls = spread_items(shape, 50_000, 0, 3)
    tracemalloc.start()
    try:
        s = core.Scheduler(clock=lambda: 0.0)
        base, _ = tracemalloc.get_traced_memory()
        for task_id, run_at, priority in calls:
            s.schedule(task_id, run_at, priority, noop)
        while claim_all(s, 5000):
            pass
        left, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(s) == 0 and s.stats()["heap_size"] == 0
    assert left - base < (peak - base) / 10
