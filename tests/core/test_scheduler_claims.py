"""The claim path's housekeeping: the Cython core and the pure twin agree step for step.

pop_due() drops stale entries on the way and rebuilds the heap once a call,
after its claims, as next() does after its one claim: the documented bound
(heap_size <= max(2 * heap_live, REBUILD_FLOOR)) holds after every call, and
the counters that tell how (stale_discarded, rebuilds) are the twin's.
"""

from __future__ import annotations

import pytest

from support.impl import NO_EXTENSIONS, compiled_module, pure_namespace

pytestmark = pytest.mark.skipif(NO_EXTENSIONS, reason="compares the core with the twin")


def noop() -> None:
    pass


def claims_past_the_bound(module):
    """Two due tasks, then 99 stale entries, then 98 later tasks: the second claim
    tips the stale bound, and the same call then drops every stale entry on the way."""
    s = module.Scheduler(clock=lambda: 0.0)
    s.schedule("a", 0.0, 0, noop)
    s.schedule("b", 1.0, 0, noop)
    for k in range(99):
        s.schedule(("stale", k), 2.0 + k, 0, noop)
    for k in range(98):
        s.schedule(("later", k), 200.0 + k, 0, noop)
    for k in range(99):
        s.cancel(("stale", k))
    s._check()
    claimed = s.pop_due(1.5)
    s._check()
    return [task.task_id for task in claimed], s.stats()


def test_pop_due_keeps_house_as_the_twin():
    core_ids, core_stats = claims_past_the_bound(compiled_module())
    twin_ids, twin_stats = claims_past_the_bound(pure_namespace())
    assert core_ids == twin_ids == ["a", "b"]
    assert core_stats == twin_stats
    assert core_stats["stale"] == 0 and core_stats["stale_discarded"] == 99


@pytest.mark.parametrize("limit", [1, 2, 3, 64, None])
def test_pop_due_in_batches_keeps_house_as_the_twin(limit):
    """Batches of every size over stale entries spread through the heap."""
    runs = []
    for module in (compiled_module(), pure_namespace()):
        s = module.Scheduler(clock=lambda: 0.0)
        s.schedule_many([(k, float(k % 97), k % 5, noop) for k in range(400)])
        for k in range(0, 400, 3):
            s.cancel(k)
        for k in range(1, 400, 7):
            s.schedule(k, float(k % 89) + 0.5, 0, noop)
        steps = []
        while True:
            batch = s.pop_due(60.0, limit)
            s._check()
            steps.append(([task.task_id for task in batch], s.stats()))
            if not batch:
                break
            s.complete_many(batch)
        runs.append(steps)
    assert runs[0] == runs[1]
