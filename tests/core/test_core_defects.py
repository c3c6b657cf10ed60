"""Regression tests for contracts that broke at the edges, on the core and the twin.

Each was found by trying the structures from outside; each test failed on the
code before its fix (on the implementations named in its docstring).
"""

from __future__ import annotations

import gc
import math
import sys
import weakref

import pytest

from support.core_reentrancy import call_with_action_at_construction, runs_with_user_code_inside
from support.impl import NO_EXTENSIONS, compiled_module


def noop() -> None:
    pass


def within_bound(s, impl):
    stats = s.stats()
    return stats["heap_size"] <= max(2 * stats["heap_live"], impl.REBUILD_FLOOR)


def drain_ids(s, now=1e300):
    out = []
    while True:
        task = s.next(now=now)
        if task is None or isinstance(task, float):
            return out
        out.append(task.task_id)
        s.complete(task)


def test_parking_keeps_the_heap_within_its_bound(impl):
    """Both: parking versions behind stale entries left 110 entries with 10 live."""
    s = impl.Scheduler()
    for i in range(100):
        s.schedule(i, 0.0, 0, noop)
    running = [s.next(now=0.0) for _ in range(100)]
    for i in range(100):
        s.schedule(i, 1.0, 0, noop)
    for i in range(10):
        s.schedule(("late", i), 50.0, 0, noop)
    for i in range(100):
        s.schedule(("gone", i), 100.0, 0, noop)
    for i in range(100):
        s.cancel(("gone", i))
        assert within_bound(s, impl)
    s.next(now=1.0)
    assert within_bound(s, impl), s.stats()
    s._check()
    for task in running:
        s.complete(task)
        assert within_bound(s, impl)
    assert sorted(drain_ids(s), key=repr) == sorted(
        list(range(100)) + [("late", i) for i in range(10)], key=repr)


def test_a_finaliser_that_schedules_during_a_claim_loses_nothing(impl):
    """Both: the claim popped whatever the finaliser had put at the root.

    The new task was then counted as pending forever and never ran, and
    ``stats()["stale"]`` went negative.
    """
    def make():
        s = impl.Scheduler()
        s.schedule("a", 1.0, 0, noop)
        s.schedule("b", 2.0, 0, noop)
        return s

    for s, task, _where in runs_with_user_code_inside(
            impl, make, lambda s: s.next(now=5.0), lambda s: s.schedule("z", 0.0, 0, noop)):
        assert s.stats()["stale"] >= 0
        s._check()
        assert task.task_id in ("a", "z")
        s.complete(task)
        rest = drain_ids(s)
        assert sorted([task.task_id, *rest]) == ["a", "b", "z"]
        assert len(s) == 0


@pytest.mark.parametrize("keyed", [False, True])
def test_push_or_evict_never_returns_an_empty_entry(impl, keyed):
    """Core: a finaliser that pops during an allocation made the admission loop run twice,
    and the call returned that pass's empty QueueEntry instead of None.
    Twin: it decided "full" before the finaliser freed a place and evicted anyway.
    """
    key = {"key": "n"} if keyed else {}

    def make():
        q = impl.StableBoundedPriorityQueue(3)
        for priority in (5, 3, 7):
            q.push(priority, f"v{priority}")
        return q

    for q, dropped, _where in runs_with_user_code_inside(
            impl, make, lambda q: q.push_or_evict(1, "new", **key), lambda q: q.pop()):
        q._check()
        # The pop came first (3 popped, then room: nothing dropped) or second
        # (7 evicted, then the newcomer popped).
        if dropped is None:
            assert q.snapshot() == [(1, 4, "new"), (5, 1, "v5"), (7, 3, "v7")]
        else:
            assert (dropped.reason, dropped.value) == ("evicted", "v7")
            assert q.snapshot() == [(3, 2, "v3"), (5, 1, "v5")]


class ReschedulingFn:
    """A task fn whose finaliser schedules its id again."""

    def __init__(self, sched, task_id):
        self.sched = sched
        self.task_id = task_id

    def __call__(self):
        pass

    def __del__(self):
        self.sched.schedule(self.task_id, 1.0, 0, noop)


@pytest.mark.parametrize("how", ["cancel", "replace"])
def test_an_old_fn_is_released_once_the_update_is_whole(impl, how):
    """Twin: cancelling or replacing released the old fn in the middle of the update.

    Its finaliser, scheduling the same id, left ``len 1`` with ``state None``
    and a later InvalidTransition.
    """
    s = impl.Scheduler()
    s.schedule("a", 1.0, 0, ReschedulingFn(s, "a"))
    if how == "cancel":
        assert s.cancel("a") is True
    else:
        s.schedule("a", 2.0, 0, noop)
    gc.collect()
    s._check()
    assert len(s) == 1 and s.state("a") == "pending"
    task = s.next(now=5.0)
    assert task.task_id == "a"
    s.complete(task)
    assert len(s) == 0 and s.state("a") is None


class Id:
    __slots__ = ("n", "__weakref__")

    def __init__(self, n):
        self.n = n

    def __hash__(self):
        return hash(self.n)

    def __eq__(self, other):
        return isinstance(other, Id) and other.n == self.n


def test_stale_entries_keep_no_cancelled_id_alive(impl):
    """Twin: its stale heap entries kept 500 of 500 cancelled ids alive."""
    s = impl.Scheduler()
    for i in range(1000):
        s.schedule(("live", i), 10.0, 0, noop)
    refs = []
    for i in range(500):
        task_id = Id(i)
        refs.append(weakref.ref(task_id))
        s.schedule(task_id, 5.0, 0, noop)
    del task_id
    for i in range(500):
        assert s.cancel(Id(i))
    assert s.stats()["stale"] == 500  # the entries are still there, below the rebuild
    gc.collect()
    assert sum(r() is not None for r in refs) == 0


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


def allocations_left_after_a_drain(make, fill, drain):
    """(bytes the core held at its peak, bytes it still holds once drained), by tracemalloc."""
    import tracemalloc

    tracemalloc.start()
    try:
        subject = make()
        base = tracemalloc.get_traced_memory()[0]
        fill(subject)
        peak = tracemalloc.get_traced_memory()[0] - base
        drain(subject)
        gc.collect()
        left = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    return peak, left


@pytest.mark.skipif(NO_EXTENSIONS, reason="the core's own allocations")
def test_the_core_gives_memory_back_after_a_drain():
    """Core: after 200,000 tasks drained to none it still held 22.7 of its 29.1 MB peak."""
    core = compiled_module()

    def fill(s):
        for i in range(200_000):
            s.schedule(i, float(i % 1000), 0, noop)

    def drain(s):
        while (task := s.next(now=1e9)) is not None:
            s.complete(task)
        assert len(s) == 0 and s.stats()["completed"] == 200_000

    peak, left = allocations_left_after_a_drain(core.Scheduler, fill, drain)
    assert left < 0.10 * peak, f"{left} of a {peak}-byte peak kept"


@pytest.mark.skipif(NO_EXTENSIONS, reason="the core's own allocations")
def test_the_core_queue_gives_memory_back_after_a_drain():
    """Core: the bounded queue's arrays, too, stayed at their peak size; then its per-key
    and per-tenant arrays did (1.3 MB of a 21.5 MB peak left; 2.6 kB once they shrink)."""
    core = compiled_module()

    def fill(q):
        for i in range(100_000):
            q.push(i % 1000, i, key=i if i % 2 else None, tenant=i if i % 3 else None)

    def drain(q):
        while q:
            q.pop()
        q._check()

    peak, left = allocations_left_after_a_drain(
        lambda: core.StableBoundedPriorityQueue(100_000), fill, drain)
    assert left < 0.01 * peak, f"{left} of a {peak}-byte peak kept"


def test_stale_entries_of_cut_slots_stay_stale(impl):
    """Core: once its arrays shrink, stale entries may name slots cut off the end."""
    s = impl.Scheduler()
    for i in range(1000):
        s.schedule(i, 10.0, 0, noop)
    for i in range(999, 49, -1):  # the last stale entries name slots 50 and up
        s.cancel(i)
    assert s.stats()["stale"] > 0
    s._check()
    for i in range(1000, 1100):  # slots 50 and up again, with new seqs
        s.schedule(i, 5.0, 0, noop)
    s._check()
    assert drain_ids(s) == list(range(1000, 1100)) + list(range(50))
    s._check()


def test_a_claim_reads_nothing_past_the_cut_slots(impl):
    """Core: after a claim, a stale head naming a cut slot was read past the id table's
    keys (its prefetch). Only a bounds-checking build sees the read: scripts/sanitize.sh."""
    s = impl.Scheduler()
    s.schedule(0, 0.0, 0, noop)
    for i in range(1, 60):  # 59, 58, ... 10 come next after 0, then turn stale
        s.schedule(i, 5.0 if i < 10 else 2.0 - i / 100, 0, noop)
    for i in range(59, 9, -1):
        s.cancel(i)  # the id table shrinks: slots 10 and up are cut
    assert s.stats()["stale"] == 50
    assert s.next(10.0).task_id == 0  # the new head names a cut slot
    s._check()
    assert drain_ids(s) == list(range(1, 10))


# -- schedule_many is all or nothing ------------------------------------------


class CountedId:
    """A task id whose hash raises MemoryError at the ``fail_at``-th hash of any such id."""

    counter = {"calls": 0, "fail_at": 0}

    def __init__(self, n):
        self.n = n

    def __hash__(self):
        CountedId.counter["calls"] += 1
        if CountedId.counter["calls"] == CountedId.counter["fail_at"]:
            raise MemoryError("injected")
        return hash(self.n)

    def __eq__(self, other):
        return isinstance(other, CountedId) and other.n == self.n


def batch_scheduler(impl, make_id):
    """Ten pending ids, one running with its newer version parked; and a batch that
    replaces some, adds new ones past the first growth of every array, names one new
    id twice and reschedules the running one."""
    s = impl.Scheduler(clock=lambda: 0.0)
    for i in range(10):
        s.schedule(make_id(i), 5.0, 0, noop)
    s.schedule(make_id("run"), 0.0, 9, noop)
    running = s.next(now=0.0)
    s.schedule(make_id("run"), 1.0, 0, noop)
    assert s.next(now=0.0) == 5.0 and s.stats()["parked"] == 1
    batch = ([(make_id(i), 1.0, i % 3, noop) for i in range(5, 90)]
             + [(make_id("twice"), 2.0, 0, noop), (make_id(7), 3.0, 1, noop),
                (make_id("twice"), 4.0, 0, noop), (make_id("run"), 0.5, 0, noop)])
    return s, running, batch


def batch_snapshot(s, ids):
    stats = {k: v for k, v in s.stats().items() if k not in ("heap_size", "stale",
                                                             "stale_discarded", "rebuilds")}
    return stats, len(s), [s.state(i) for i in ids], s.peek()


def expected_after_batch(impl, make_id):
    s, running, batch = batch_scheduler(impl, make_id)
    versions = [s.schedule(*item) for item in batch]
    return versions, batch_snapshot(s, [item[0] for item in batch])


def check_all_or_nothing(impl, make_id, run_with_failure_at):
    """``run_with_failure_at(k, call)`` runs ``call`` with a MemoryError at its k-th
    allocation (or hash); k = 1, 2, ... until the call succeeds. Each failure must
    leave the scheduler as it was; the success must equal schedule() in a loop."""
    expected = expected_after_batch(impl, make_id)
    failures = 0
    for k in range(1, 100_000):
        s, running, batch = batch_scheduler(impl, make_id)
        ids = [item[0] for item in batch]
        before = batch_snapshot(s, ids)
        try:
            versions = run_with_failure_at(k, lambda s=s, batch=batch: s.schedule_many(batch))
        except MemoryError:
            failures += 1
            s._check()
            assert batch_snapshot(s, ids) == before, f"a MemoryError at {k} left a part scheduled"
            continue
        s._check()
        assert (versions, batch_snapshot(s, ids)) == expected
        s.complete(running)
        return failures
    raise AssertionError("never succeeded")


def fail_at_hash(k, call):
    CountedId.counter.update(calls=0, fail_at=k)
    try:
        return call()
    finally:
        CountedId.counter["fail_at"] = 0


def test_schedule_many_is_all_or_nothing_when_hashing_fails(impl):
    """Both: a MemoryError where an id is hashed (the twin's dict inserts) left the items
    before it scheduled."""
    assert check_all_or_nothing(impl, CountedId, fail_at_hash) > 0


def test_schedule_many_is_all_or_nothing_when_the_twin_allocates():
    """Twin: a MemoryError building the slot of a later new id left earlier items scheduled."""
    from pysched import _scheduler_py

    def boom():
        raise MemoryError("injected")

    def fail_at_construction(k, call):
        return call_with_action_at_construction(k, call, boom)[0]

    assert check_all_or_nothing(_scheduler_py, lambda i: i, fail_at_construction) > 0


@pytest.mark.skipif(NO_EXTENSIONS, reason="the core's own allocations")
def test_schedule_many_is_all_or_nothing_when_the_core_allocates():
    """Core: a MemoryError growing the heap, the slots or the id table part-way left the
    earlier items scheduled."""
    testcapi = pytest.importorskip("_testcapi")

    def fail_at_allocation(k, call):
        testcapi.set_nomemory(k - 1, 0)
        try:
            return call()
        finally:
            testcapi.remove_mem_hooks()

    # Ids past the small-int cache and strings: boxing and hashing them allocates.
    assert check_all_or_nothing(compiled_module(), lambda i: (i, "id"),
                                fail_at_allocation) > 0


class CallingBackId:
    """An id whose first comparison with an equal id schedules another id, through ``hook``."""

    hook = None

    def __init__(self, n):
        self.n = n

    def __hash__(self):
        return hash(self.n)

    def __eq__(self, other):
        hook, CallingBackId.hook = CallingBackId.hook, None
        if hook is not None:
            hook()
        return isinstance(other, CallingBackId) and other.n == self.n


def test_schedule_many_looks_again_when_an_ids_eq_calls_back(impl):
    """A batch naming one new id twice compares the two: an __eq__ that schedules that
    very id in the middle must leave the outcome of the callback, then the batch."""
    s = impl.Scheduler()
    first, again = CallingBackId(1), CallingBackId(1)
    CallingBackId.hook = lambda: s.schedule(CallingBackId(1), 0.5, 0, noop)
    versions = s.schedule_many([(first, 2.0, 0, noop), ("x", 1.0, 0, noop), (again, 3.0, 0, noop)])
    assert CallingBackId.hook is None  # it ran
    assert versions == [2, 1, 3]
    s._check()
    assert len(s) == 2 and s.stats()["replaced"] == 2
    claimed = [s.next(now=9.0) for _ in range(2)]
    assert [(t.task_id.n if t.task_id != "x" else "x", t.version, t.run_at) for t in claimed] == [
        ("x", 1, 1.0), (1, 3, 3.0)]
    assert s.next(now=9.0) is None
