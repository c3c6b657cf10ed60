"""The batch calls on the core and the twin: schedule_many, complete_many and pop_due.

Versions numbered by the id the core knows, every task checked before a
repeat is named, nothing marked while the caller's code can run, core and twin
in lockstep on random batches, and schedule_many all or nothing when hashing
or an allocation fails or an id's ``__eq__`` calls back in.
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from pysched._errors import InvalidTransition

from support.core_reentrancy import call_with_action_at_construction
from support.examples import examples
from support.impl import NO_EXTENSIONS, compiled_module, pure_namespace


class _LooseId:
    """An id equal to ``hub`` and to itself only: equality that is not transitive.

    Every one hashes alike, so each comparison is really made.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, _LooseId) and "hub" in (self.name, other.name))

    def __repr__(self) -> str:
        return self.name


@pytest.mark.parametrize("hub_running", [False, True], ids=["hub-pending", "hub-running"])
@pytest.mark.parametrize("names", [("x", "y"), ("x", "y", "x"), ("x", "y", "y", "x")])
def test_schedule_many_numbers_versions_by_the_known_id_two_unequal_ids_share(
        impl, hub_running, names):
    # x != y, but both equal the known id hub: as schedule() would one by one,
    # each item is the next version of hub's one slot, and what is returned is
    # what was committed.
    s = impl.Scheduler(clock=lambda: 0.0)
    hub = _LooseId("hub")
    s.schedule(hub, 0.0, 0, print)
    if hub_running:
        running = s.next(now=0.0)
    ids = {name: _LooseId(name) for name in set(names)}
    versions = s.schedule_many([(ids[name], 1.0, 0, print) for name in names])
    assert versions == list(range(2, 2 + len(names)))
    s._check()
    stats = s.stats()
    assert stats["pending"] == 1
    assert stats["replaced"] == len(names) - (1 if hub_running else 0)
    if hub_running:
        s.complete(running)
    (task,) = s.pop_due(now=1.0)
    assert task.version == versions[-1]
    assert task.task_id is ids[names[-1]] or task.task_id is hub


def _running_tasks(impl, n):
    s = impl.Scheduler(clock=lambda: 0.0)
    for task_id in range(n):
        s.schedule(task_id, 0.0, 0, print)
    return s, s.pop_due(now=0.0)


@pytest.mark.parametrize("bad", ["int", "foreign", "finished"])
def test_complete_many_checks_every_task_before_it_names_a_repeat(impl, bad):
    # The twin checks each task's type and state first and looks for a task
    # given twice last: a repeat before a bad task raises as the bad task does.
    s, (a, b) = _running_tasks(impl, 2)
    other, (foreign, finished) = _running_tasks(impl, 2)
    other.complete(finished)
    culprit = {"int": 5, "foreign": foreign, "finished": finished}[bad]
    expected = TypeError if bad == "int" else InvalidTransition
    with pytest.raises(expected) as raised:
        s.complete_many([a, a, culprit])
    assert "twice" not in str(raised.value)
    assert ("tasks[2]" in str(raised.value)) == (bad == "int")
    assert s.stats()["running"] == 2 and a.state == "running"
    s.complete_many([a, b])  # the failed call left no task marked
    assert s.stats()["completed"] == 2


class _CallingBackId:
    """An id whose repr, made for an error message, finishes tasks of ``sched``."""

    def __init__(self) -> None:
        self.sched = None
        self.tasks: list = []

    def __hash__(self) -> int:
        return 11

    def __repr__(self) -> str:
        if self.sched is not None:
            sched, self.sched = self.sched, None
            sched.complete_many(self.tasks)
        return "calling-back"


def test_complete_many_marks_nothing_while_code_of_the_caller_can_run(impl):
    # The error for a task of another scheduler formats its id's repr, which
    # finishes the batch's first task in a call of its own: that call sees the
    # task as a running one, not as one the outer call holds, and the outer
    # call raises its own error.
    s, (a, b) = _running_tasks(impl, 2)
    other = impl.Scheduler(clock=lambda: 0.0)
    odd = _CallingBackId()
    other.schedule(odd, 0.0, 0, print)
    foreign = other.next(now=0.0)
    odd.sched, odd.tasks = s, [a]
    with pytest.raises(InvalidTransition, match="calling-back.*another scheduler"):
        s.complete_many([a, foreign, b])
    assert a.state == "completed" and b.state == "running"
    s.complete_many([b])
    s._check()


# Core and twin side by side through the batch calls: schedule_many with
# repeats, pop_due with limits, complete_many with repeats and tasks of the
# other scheduler. Every result, exception and stats() must agree; stats()
# counts stale entries, rebuilds and replacements, which a model-based test
# cannot see. Ids come from a pool small enough for repeats and large enough
# to pass REBUILD_FLOOR.
BATCH_IDS = st.integers(0, 150)
BATCH_TIMES = st.sampled_from([-1.0, -0.0, 0.0, 0.5, 1.0, 2.0])
BATCH_PRIORITIES = st.sampled_from([-(2**63), 0, 1, 2**63 - 1])


def _task_view(task):
    return (task.task_id, task.version, task.run_at, task.priority, task.state,
            task.cancel_requested)


class _BatchLockstep(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.impls = (compiled_module(), pure_namespace())
        self.scheds = [impl.Scheduler(clock=lambda: 0.0) for impl in self.impls]
        self.running: list[list] = [[], []]

    def both(self, call):
        outcomes = []
        for side in (0, 1):
            try:
                outcomes.append(("returned", call(side)))
            except Exception as exc:  # compared across the two sides
                outcomes.append((type(exc).__name__, str(exc)))
        assert outcomes[0] == outcomes[1]

    @rule(items=st.lists(st.tuples(BATCH_IDS, BATCH_TIMES, BATCH_PRIORITIES), max_size=120))
    def schedule_many(self, items):
        self.both(lambda side: self.scheds[side].schedule_many(
            [(task_id, run_at, priority, print) for task_id, run_at, priority in items]))

    @rule(ids=st.lists(BATCH_IDS, max_size=60), pending_only=st.booleans())
    def cancel(self, ids, pending_only):
        for task_id in ids:
            self.both(lambda side, task_id=task_id: getattr(
                self.scheds[side], "cancel_pending" if pending_only else "cancel")(task_id))

    @rule(now=BATCH_TIMES, limit=st.sampled_from([None, 0, 1, 3, 40]))
    def pop_due(self, now, limit):
        def call(side):
            claimed = self.scheds[side].pop_due(now=now, limit=limit)
            self.running[side] += claimed
            return [_task_view(task) for task in claimed]
        self.both(call)

    @rule(data=st.data(), repeat=st.booleans(), foreign=st.booleans())
    def complete_many(self, data, repeat, foreign):
        if not self.running[0]:
            return
        picks = data.draw(st.lists(st.integers(0, len(self.running[0]) - 1), min_size=1,
                                   unique=True))

        def call(side):
            tasks = [self.running[side][k] for k in picks]
            batch = tasks + tasks[:1] if repeat else list(tasks)
            if foreign:  # last, after any repeat: the other side's task, not a Task here
                batch.append(self.running[1 - side][picks[0]])
            self.scheds[side].complete_many(batch)
            return [_task_view(task) for task in tasks]
        self.both(call)
        for side in (0, 1):
            self.running[side] = [task for task in self.running[side] if task.state == "running"]

    @invariant()
    def agree(self):
        core, twin = self.scheds
        assert core.stats() == twin.stats()
        assert core.peek() == twin.peek()
        core._check()
        twin._check()


_BatchLockstep.TestCase.settings = settings(max_examples=examples(150), stateful_step_count=40,
                                            deadline=None)
if not NO_EXTENSIONS:
    TestBatchLockstep = _BatchLockstep.TestCase


def noop() -> None:
    pass


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
