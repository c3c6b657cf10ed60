"""MemoryError at any allocation of the compiled core's Scheduler.

MemoryError at any allocation leaves the Scheduler exactly as it was: each
call is retried with allocation number n and later failing, n = 0, 1, ...,
until it succeeds (CPython's _testcapi.set_nomemory), and after every failure
the stats (but for stale-entry housekeeping), sizes, states, the task's state
and ``_check()`` must be unchanged.
Compiled core only: the pure twin cannot reserve list or dict room in advance.

Found this way: complete()/fail() of a task whose id had a newer version parked
lost that version when growing the heap failed (the task was already marked
finished and the parked entry taken out), leaving ``len()`` counting a version
that could never run.
"""

from __future__ import annotations

import pytest

from support.impl import NO_EXTENSIONS, compiled_module

pytestmark = pytest.mark.skipif(NO_EXTENSIONS, reason="compiled core only")


def noop() -> None:
    pass


# Dropping stale heap entries on the way is invisible (they name no pending
# version), so a call may do that before it fails: those counters are left out.
HOUSEKEEPING = ("heap_size", "stale", "stale_discarded", "rebuilds")


def snapshot(s, tasks):
    ids = ["a", "b", 300, 301] + list(range(40))
    stats = {k: v for k, v in s.stats().items() if k not in HOUSEKEEPING}
    return (stats, len(s), [s.state(i) for i in ids],
            [(t.state, t.cancel_requested, t.exception) for t in tasks])


def fail_allocations_until_success(s, tasks, call):
    testcapi = pytest.importorskip("_testcapi")
    for n in range(10_000):
        before = snapshot(s, tasks)
        failed = False
        testcapi.set_nomemory(n, 0)
        try:
            result = call()
        except MemoryError:
            failed = True
        finally:
            testcapi.remove_mem_hooks()
        if not failed:
            s._check()
            return result
        assert snapshot(s, tasks) == before, f"allocation {n} failed mid-update"
        s._check()
    raise AssertionError("never succeeded")


def full_heap_with_parked(core):
    """A running 'a', its newer version parked, and the heap at capacity."""
    s = core.Scheduler(clock=lambda: 0.0)
    s.schedule("a", 0.0, 0, noop)
    task = s.next(now=0.0)
    s.schedule("a", 0.0, 0, noop)
    assert s.next(now=0.0) is None  # the new version is parked behind the running one
    for i in range(16):  # the heap's first capacity
        s.schedule(i, 100.0, 0, noop)
    assert s.stats()["parked"] == 1 and s.stats()["heap_size"] == 16
    return s, task


@pytest.mark.parametrize("how", ["complete", "fail"])
def test_finishing_with_a_parked_version_survives_memory_errors(how):
    s, task = full_heap_with_parked(compiled_module())
    args = (task,) if how == "complete" else (task, ValueError("x"))
    fail_allocations_until_success(s, [task], lambda: getattr(s, how)(*args))
    assert task.state == ("completed" if how == "complete" else "failed")
    again = s.next(now=0.0)
    assert (again.task_id, again.version) == ("a", 2)


def test_every_call_survives_memory_errors():
    core = compiled_module()
    s = core.Scheduler(clock=lambda: 0.0)
    tasks = []
    for i in range(40):
        fail_allocations_until_success(s, tasks, lambda i=i: s.schedule(i, float(i % 3), i, noop))
    for big in (300, 301):  # slots and ids past the small-int cache
        fail_allocations_until_success(s, tasks, lambda b=big: s.schedule(b, 0.0, 0, noop))
    fail_allocations_until_success(s, tasks, lambda: s.schedule(3, 5.0, 0, noop))  # replace
    fail_allocations_until_success(s, tasks, lambda: s.cancel(4))
    for _ in range(6):
        task = fail_allocations_until_success(s, tasks, lambda: s.next(now=1.0))
        tasks.append(task)
    fail_allocations_until_success(s, tasks, lambda: s.schedule(tasks[0].task_id, 0.0, 0, noop))
    fail_allocations_until_success(s, tasks, lambda: s.cancel(tasks[1].task_id))
    fail_allocations_until_success(s, tasks, lambda: s.complete(tasks[0]))
    fail_allocations_until_success(s, tasks, lambda: s.fail(tasks[1], ValueError("x")))
    for task in tasks[2:]:
        fail_allocations_until_success(s, tasks, lambda t=task: s.complete(t))
    while fail_allocations_until_success(s, tasks, lambda: s.next(now=1e9)) is not None:
        pass


def test_the_newer_calls_survive_memory_errors():
    core = compiled_module()
    s = core.Scheduler(clock=lambda: 0.0)
    tasks = []
    for i in range(40):
        s.schedule(i, float(i % 3), i, noop)
    fail_allocations_until_success(s, tasks, lambda: s.peek())
    fail_allocations_until_success(s, tasks, lambda: s.cancel_pending(5))
    tasks += fail_allocations_until_success(s, tasks, lambda: s.pop_due(0.0, 3))
    s.schedule(tasks[0].task_id, 0.0, 0, noop)  # parked behind the running version
    fail_allocations_until_success(s, tasks, lambda: s.cancel_pending(tasks[1].task_id))
    fail_allocations_until_success(s, tasks, lambda: s.release(tasks[0]))
    assert tasks[0].state == "cancelled"


def test_pop_due_never_drops_a_claimed_task():
    """A MemoryError part-way returns the tasks claimed so far; nothing is lost."""
    testcapi = pytest.importorskip("_testcapi")
    core = compiled_module()
    for n in range(60):
        s = core.Scheduler(clock=lambda: 0.0)
        for i in range(20):
            s.schedule(i, 0.0, 0, noop)
        testcapi.set_nomemory(n, 0)
        try:
            claimed = s.pop_due(0.0)
        except MemoryError:
            claimed = []
        finally:
            testcapi.remove_mem_hooks()
        s._check()
        assert len(claimed) + len(s) == 20 and s.stats()["running"] == len(claimed)
