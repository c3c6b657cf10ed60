"""Every mutating method, with a finaliser that calls back in at each of its allocations.

For each call under test and each finaliser action, the scenario is run with a
collection at the call's 1st, 2nd, ... tracked allocation, and on the twin also
with the action at its 1st, 2nd, ... object built (tests/support/core_reentrancy.py),
until the call makes no more. The finaliser's action ran inside the call, so
the outcome must be that of one of the two orders, action then call or call
then action, as a plain model computes them: the call's result, and the whole
end state (``_check()``, length, states, and the order in which every pending
version comes out when everything is drained).

Last, finalisers found calling back in from outside, each a test that failed
before its fix: a claim, an eviction and a cancel or replacement they broke.
"""

from __future__ import annotations

import bisect
import gc

import pytest

from support.core_reentrancy import runs_with_user_code_inside
from support.draining import drain_ids
from support.queue_model import Model as QueueModel
from support.reentrancy_schedulers import (
    IDS,
    ModelScheduler,
    RealScheduler,
    base_scheduler,
    fn_named,
    norm,
)


def drain_order(s):
    """Finish every run, then claim and complete everything: the (id, version) order."""
    order = []
    for task_id in IDS:
        task = s.running(task_id)
        if task is not None:
            s.complete(task)
    while True:
        task = s.next(1e300)
        if task is None or isinstance(task, float):
            break
        order.append((task.task_id, task.version))
        s.complete(task)
    return order


MANY = [("n", 0.8, 1, fn_named("n")), ("a", 0.9, 0, fn_named("a2"))]

SCHEDULER_CALLS = {
    "schedule_new": lambda s: s.schedule("n", 0.8, 1, fn_named("n")),
    "schedule_replace": lambda s: s.schedule("a", 0.9, 0, fn_named("a2")),
    "schedule_many": lambda s: s.schedule_many(MANY),
    "cancel": lambda s: s.cancel("a"),
    "cancel_running": lambda s: s.cancel("r"),
    "cancel_pending": lambda s: s.cancel_pending("b"),
    "peek": lambda s: s.peek(),
    "next": lambda s: s.next(1.0),
    "pop_due": lambda s: s.pop_due(2.0),
    "complete": lambda s: s.complete(s.running("r")),
    "complete_many": lambda s: s.complete_many([s.running("r")]),
    "fail": lambda s: s.fail(s.running("r"), ValueError("x")),
    "release": lambda s: s.release(s.running("r")),
}


def claim_one(s):
    task = s.next(1e300)
    if task is not None and not isinstance(task, float):
        s.complete(task)


SCHEDULER_ACTIONS = {
    "schedule_head": lambda s: s.schedule("z", 0.0, 9, fn_named("z")),
    "replace": lambda s: s.schedule("a", 0.1, 0, fn_named("a3")),
    "cancel": lambda s: s.cancel("a"),
    "claim": claim_one,
}



# Batch calls are single calls in a loop: a finaliser may also run between two
# of their items. Each splits into the part before ``split`` items and the rest.
SCHEDULER_BATCHES = {
    "schedule_many": (lambda s, split: s.schedule_many(MANY[:split]),
                      lambda s, split: s.schedule_many(MANY[split:])),
    "pop_due": (lambda s, split: s.pop_due(2.0, split), lambda s, split: s.pop_due(2.0)),
}


def model_scheduler_outcomes(call, action):
    """The outcomes of action-then-call, call-then-action and, for a batch, action inside."""
    call_fn, action_fn = SCHEDULER_CALLS[call], SCHEDULER_ACTIONS[action]

    def action_first(m):
        action_fn(m)
        return norm(call_fn(m))

    def action_last(m):
        result = norm(call_fn(m))
        action_fn(m)
        return result

    def action_inside(m, split):
        before, rest = SCHEDULER_BATCHES[call]
        result = norm(before(m, split))
        action_fn(m)
        return result + norm(rest(m, split))

    orders = [action_first, action_last]
    if call in SCHEDULER_BATCHES:
        orders += [lambda m, split=split: action_inside(m, split) for split in (1, 2)]
    outcomes = []
    for order in orders:
        m = ModelScheduler()
        base_scheduler(m)
        result = order(m)
        outcomes.append((result, drain_order(m)))
    return outcomes


@pytest.mark.parametrize("action", sorted(SCHEDULER_ACTIONS))
@pytest.mark.parametrize("call", sorted(SCHEDULER_CALLS))
def test_scheduler_calls_survive_a_finaliser_at_each_allocation(impl, call, action):
    expected = model_scheduler_outcomes(call, action)

    def make():
        s = RealScheduler(impl)
        base_scheduler(s)
        return s

    for s, result, where in runs_with_user_code_inside(
            impl, make, SCHEDULER_CALLS[call], SCHEDULER_ACTIONS[action]):
        s._check()
        stats = s.stats()
        assert stats["heap_size"] <= max(2 * stats["heap_live"], impl.REBUILD_FLOOR)
        assert stats["stale"] >= 0
        outcome = (norm(result), drain_order(s))
        assert outcome in expected, f"{where}: {outcome} not in {expected}"
        s._check()


# -- StableBoundedPriorityQueue ---------------------------------------------------


class ModelQueue:
    """The bounded queue's plain model: a sorted list, cut to the capacity."""

    def __init__(self, capacity):
        self.m = QueueModel(capacity, None)

    def push(self, priority, value, key=None, tenant=None):
        dropped = self.m.push(priority, value, key, tenant)
        return dropped is None or dropped[-1] == "evicted"

    def push_or_evict(self, priority, value, key=None, tenant=None):
        return self.m.push(priority, value, key, tenant)

    def pop_entry(self):
        if not self.m.entries:
            return IndexError
        self.m.stats["popped"] += 1
        return self.m.entries.pop(0) + ("popped",)

    def pop(self):
        entry = self.pop_entry()
        return entry if entry is IndexError else entry[2]

    def remove(self, key):
        if not self.m.has_key(key):
            return KeyError
        self.m.stats["removed"] += 1
        return self.m.entries.pop(self.m.find(key))[2]

    def reprioritize(self, key, priority):
        if not self.m.has_key(key):
            return KeyError
        old = self.m.entries.pop(self.m.find(key))
        self.m.seq += 1
        bisect.insort(self.m.entries, (priority, self.m.seq) + old[2:], key=lambda e: e[:2])
        self.m.stats["reprioritized"] += 1
        return None

    def snapshot(self):
        return [e[:3] for e in self.m.entries]

    def counters(self):
        return dict(self.m.stats)


class RealQueue:
    def __init__(self, impl, capacity):
        self.q = impl.StableBoundedPriorityQueue(capacity)

    def __getattr__(self, name):
        method = getattr(self.q, name)

        def call(*args, **kwargs):
            try:
                return method(*args, **kwargs)
            except IndexError:
                return IndexError
            except KeyError:
                return KeyError

        return call

    def push(self, priority, value, key=None, tenant=None):
        return self.q.push(priority, value, key=key, tenant=tenant)

    def push_or_evict(self, priority, value, key=None, tenant=None):
        return self.q.push_or_evict(priority, value, key=key, tenant=tenant)

    def snapshot(self):
        return self.q.snapshot()

    def counters(self):
        stats = self.q.stats()
        return {k: stats[k] for k in QueueModel(0, None).stats}


def entry_norm(result):
    if hasattr(result, "reason"):
        return (result.priority, result.seq, result.value, result.key, result.tenant,
                result.reason)
    return result


def base_queue(q):
    """Full at capacity 4: a, b, c keyed; one removed, so seqs and dead nodes vary."""
    q.push(5, "v5", key="a")
    q.push(3, "v3", key="b")
    q.push(7, "v7", key="c")
    q.push(1, "v1")
    q.push(4, "v4", key="d")
    q.remove("d")
    q.push(6, "v6")


QUEUE_CALLS = {
    "push_better": lambda q: q.push(2, "new"),
    "push_better_keyed": lambda q: q.push(2, "new", key="n", tenant="t"),
    "push_worse": lambda q: q.push(9, "new"),
    "push_or_evict_better": lambda q: q.push_or_evict(2, "new"),
    "push_or_evict_better_keyed": lambda q: q.push_or_evict(2, "new", key="n", tenant="t"),
    "push_or_evict_worse": lambda q: q.push_or_evict(9, "new"),
    "pop": lambda q: q.pop(),
    "pop_entry": lambda q: q.pop_entry(),
    "remove": lambda q: q.remove("a"),
    "reprioritize": lambda q: q.reprioritize("c", 0),
}

QUEUE_ACTIONS = {
    "pop": lambda q: q.pop(),
    "push": lambda q: q.push(0, "fin", key="f"),
    "remove": lambda q: q.remove("a"),
    "reprioritize": lambda q: q.reprioritize("b", 8),
}


def model_queue_outcomes(call, action):
    outcomes = []
    for first_action in (True, False):
        m = ModelQueue(4)
        base_queue(m)
        if first_action:
            action(m)
        result = entry_norm(call(m))
        if not first_action:
            action(m)
        outcomes.append((result, m.snapshot(), m.counters()))
    return outcomes


@pytest.mark.parametrize("action", sorted(QUEUE_ACTIONS))
@pytest.mark.parametrize("call", sorted(QUEUE_CALLS))
def test_queue_calls_survive_a_finaliser_at_each_allocation(impl, call, action):
    call_fn, action_fn = QUEUE_CALLS[call], QUEUE_ACTIONS[action]
    expected = model_queue_outcomes(call_fn, action_fn)

    def make():
        q = RealQueue(impl, 4)
        base_queue(q)
        return q

    for q, result, where in runs_with_user_code_inside(impl, make, call_fn, action_fn):
        q.q._check()
        outcome = (entry_norm(result), q.snapshot(), q.counters())
        assert outcome in expected, f"{where}: {outcome} not in {expected}"


# -- finalisers that called back in and broke a call, found from outside ---------


def noop() -> None:
    pass


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
