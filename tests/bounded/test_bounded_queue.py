"""StableBoundedPriorityQueue on the Cython core and the pure twin alike.

Every test calls ``_check()`` (all invariants) where the state changed.
"""

from __future__ import annotations

import contextlib
import gc
import weakref
from functools import partial

import pytest


def make(impl, capacity, **kwargs):
    return impl.StableBoundedPriorityQueue(capacity, **kwargs)


def fill(q, priorities):
    for i, priority in enumerate(priorities):
        assert q.push(priority, f"v{i}")
        q._check()


def drain(q):
    out = []
    while q:
        out.append(q.pop())
        q._check()
    return out


def entry_tuple(entry):
    return (entry.priority, entry.seq, entry.value, entry.key, entry.tenant, entry.reason)


# -- the seeds' cases ---------------------------------------------------------


def test_capacity_zero_rejects_everything(impl):
    q = make(impl, 0)
    for priority in (-(2**63), 0, 5, 2**63 - 1):
        assert q.push(priority, "x") is False
        q._check()
    dropped = q.push_or_evict(-1, "y", key="k", tenant="t")
    assert entry_tuple(dropped) == (-1, 5, "y", "k", "t", "capacity")
    assert len(q) == 0 and not q and q.snapshot() == []
    stats = q.stats()
    assert stats["rejected_capacity"] == 5 and stats["accepted"] == 0
    assert stats["dead"] == 0 and stats["tenants"] == 0
    with pytest.raises(KeyError):
        q.remove("k")  # a refused entry leaves no key behind
    q._check()


def test_capacity_one(impl):
    q = make(impl, 1)
    assert q.push(5, "five")
    assert not q.push(5, "equal")  # equal priority, later seq: worse
    assert not q.push(6, "worse")
    dropped = q.push_or_evict(4, "better")
    assert entry_tuple(dropped) == (5, 1, "five", None, None, "evicted")
    q._check()
    assert q.peek() == q.peek_worst() == "better"
    assert q.pop() == "better"
    assert len(q) == 0
    q._check()


def test_empty_queue(impl):
    q = make(impl, 3)
    assert len(q) == 0 and not q and q.snapshot() == []
    for method in (q.pop, q.peek, q.peek_worst, q.pop_entry):
        with pytest.raises(IndexError):
            method()
    q._check()
    assert q.stats()["popped"] == 0


def test_repeated_rejection_changes_nothing_but_counters(impl):
    q = make(impl, 4)
    fill(q, [1, 2, 3, 4])
    before = q.snapshot()
    for i in range(200):
        assert not q.push(4 + i % 3, i)  # equal to the worst, or worse
        q._check()
    assert q.snapshot() == before
    assert q.stats()["rejected_capacity"] == 200
    assert q.stats()["evicted"] == 0


def test_repeated_replacement_evicts_the_worst_each_time(impl):
    q = make(impl, 3)
    fill(q, [100, 101, 102])
    evicted = []
    for priority in range(50, 40, -1):
        dropped = q.push_or_evict(priority, priority)
        evicted.append(dropped.priority)
        q._check()
    assert evicted == [102, 101, 100, 50, 49, 48, 47, 46, 45, 44]
    assert [p for p, _, _ in q.snapshot()] == [41, 42, 43]
    assert q.stats()["evicted"] == 10


def test_worse_equal_better_against_a_full_queue(impl):
    q = make(impl, 3)
    fill(q, [1, 5, 3])
    assert q.push_or_evict(6, "worse").reason == "capacity"
    assert q.push_or_evict(5, "equal").reason == "capacity"
    dropped = q.push_or_evict(4, "better")
    assert (dropped.reason, dropped.value) == ("evicted", "v1")
    q._check()
    assert [v for _, _, v in q.snapshot()] == ["v0", "v2", "better"]


def test_many_equal_priorities_leave_in_fifo_order(impl):
    q = make(impl, 500)
    for i in range(1000):
        assert q.push(7, i) == (i < 500)  # later equals are worse: refused when full
    q._check()
    assert q.peek() == 0 and q.peek_worst() == 499
    assert drain(q) == list(range(500))


def test_order_is_priority_then_push_order(impl):
    q = make(impl, 10)
    pushes = [(3, "a"), (1, "b"), (3, "c"), (-2, "d"), (1, "e")]
    for priority, value in pushes:
        q.push(priority, value)
    assert q.snapshot() == [(-2, 4, "d"), (1, 2, "b"), (1, 5, "e"), (3, 1, "a"), (3, 3, "c")]
    assert q.peek_worst() == "c"
    assert drain(q) == ["d", "b", "e", "a", "c"]


def test_priorities_at_the_int64_limits(impl):
    q = make(impl, 2)
    q.push(2**63 - 1, "max")
    q.push(-(2**63), "min")
    assert q.peek() == "min" and q.peek_worst() == "max"
    assert not q.push(2**63 - 1, "max again")
    assert q.push_or_evict(2**63 - 2, "below max").value == "max"
    q._check()


def test_values_are_never_compared(impl):
    q = make(impl, 4)
    values = [object(), None, {"a": 1}, [1]]
    for value in values:
        q.push(0, value)
    assert drain(q) == values


def test_priority_may_be_any_index(impl):
    class Level:
        def __index__(self):
            return 3

    q = make(impl, 2)
    q.push(Level(), "three")
    assert q.snapshot() == [(3, 1, "three")]


# -- the rest of the API ------------------------------------------------------


def test_properties_and_repr(impl):
    q = make(impl, 7, tenant_limit=2)
    assert q.capacity == 7 and q.tenant_limit == 2
    assert make(impl, 3).tenant_limit is None
    q.push(1, "x")
    assert "len=1" in repr(q) and "capacity=7" in repr(q)
    entry = q.pop_entry()
    assert entry_tuple(entry) == (1, 1, "x", None, None, "popped")
    assert "popped" in repr(entry)
    with pytest.raises(AttributeError):
        entry.value = "changed"


def test_push_or_evict_returns_none_below_capacity(impl):
    q = make(impl, 2)
    assert q.push_or_evict(3, "a", key="ka", tenant="t") is None
    dropped = q.push_or_evict(9, "b")
    assert dropped is None
    dropped = q.push_or_evict(1, "c", key="kc")
    assert entry_tuple(dropped) == (9, 2, "b", None, None, "evicted")
    dropped = q.push_or_evict(0, "d")
    assert entry_tuple(dropped) == (3, 1, "a", "ka", "t", "evicted")
    q._check()
    assert q.stats()["tenants"] == 0  # the tenant left with its last entry


def test_remove_and_reuse_of_a_key(impl):
    q = make(impl, 5)
    q.push(2, "a", key="a")
    q.push(1, "b", key=("b", 1))
    q.push(3, "c")
    assert q.remove("a") == "a"
    q._check()
    with pytest.raises(KeyError, match="key 'a' is not in the queue"):
        q.remove("a")
    assert q.push(0, "a again", key="a")  # a key is free again once its entry left
    assert q.remove(("b", 1)) == "b"
    assert drain(q) == ["a again", "c"]
    assert q.stats()["removed"] == 2
    q.push(4, "d", key="d")
    q.pop()
    assert q.push(4, "d again", key="d")  # popping frees the key too
    q._check()


def test_duplicate_key_is_refused(impl):
    q = make(impl, 5)
    q.push(2, "a", key="a")
    with pytest.raises(ValueError, match="key 'a' is already in the queue"):
        q.push(1, "b", key="a")
    with pytest.raises(ValueError, match="already"):
        q.push_or_evict(1, "b", key="a")
    q._check()


def test_reprioritize_gives_a_fresh_seq(impl):
    q = make(impl, 5)
    q.push(1, "a", key="a")
    q.push(1, "b", key="b")
    q.push(1, "c", key="c")
    q.reprioritize("a", 1)  # same priority: now behind its equals
    q._check()
    assert q.snapshot() == [(1, 2, "b"), (1, 3, "c"), (1, 4, "a")]
    q.reprioritize("c", 0)
    q.reprioritize("b", 9)
    q._check()
    assert q.snapshot() == [(0, 5, "c"), (1, 4, "a"), (9, 6, "b")]
    assert q.peek_worst() == "b"
    assert q.stats()["reprioritized"] == 3 and len(q) == 3
    assert q.remove("b") == "b"  # the key follows the new entry


def test_reprioritize_in_a_full_queue_never_evicts(impl):
    q = make(impl, 2)
    q.push(1, "a", key="a")
    q.push(2, "b", key="b")
    q.reprioritize("a", 100)
    assert len(q) == 2 and q.peek_worst() == "a"
    assert q.push_or_evict(3, "c").value == "a"  # now the worst, so the next to go
    q._check()


def test_tenant_limit_is_checked_before_capacity(impl):
    q = make(impl, 3, tenant_limit=2)
    assert q.push(5, "a1", tenant="a")
    assert q.push(5, "a2", tenant="a")
    dropped = q.push_or_evict(5, "a3", tenant="a")
    assert entry_tuple(dropped) == (5, 3, "a3", None, "a", "quota")
    assert q.push(6, "b1", tenant="b")  # other tenants, and untenanted, still get in
    # Full now, and tenant a at its limit: a better entry of a is refused for quota.
    assert q.push_or_evict(0, "a4", tenant="a").reason == "quota"
    assert q.push_or_evict(0, "free").value == "b1"  # no tenant: no limit
    q._check()
    assert q.stats()["rejected_quota"] == 2 and q.stats()["rejected_capacity"] == 0
    assert q.stats()["tenants"] == 1
    q.pop()  # "free"
    q.pop()  # a1: a is below its limit again
    assert q.push(1, "a5", tenant="a")
    q._check()


def test_eviction_frees_the_tenant_quota(impl):
    q = make(impl, 2, tenant_limit=1)
    q.push(5, "a1", tenant="a")
    q.push(6, "b1", tenant="b")
    assert q.push_or_evict(1, "c1", tenant="c").tenant == "b"
    assert q.push(2, "b2", tenant="b")  # b's entry was evicted, so b may push again
    q._check()
    assert q.stats()["tenants"] == 2


def test_tenant_limit_zero_refuses_tenants_only(impl):
    q = make(impl, 3, tenant_limit=0)
    assert not q.push(1, "x", tenant="t")
    assert q.push(1, "y")
    assert q.stats()["rejected_quota"] == 1


def test_tenants_and_keys_may_be_any_hashable(impl):
    q = make(impl, 5, tenant_limit=1)
    q.push(1, "a", key=(1, 2), tenant=frozenset({3}))
    q.push(1, "b", key=0, tenant=0.0)
    assert q.push_or_evict(1, "c", tenant=0).reason == "quota"  # 0 == 0.0
    q._check()


def test_counters_add_up(impl):
    q = make(impl, 3, tenant_limit=2)
    for i in range(40):
        q.push_or_evict(i % 7, i, key=i if i % 3 == 0 else None, tenant="t" if i % 2 else None)
        if i % 5 == 0:
            q.pop()
        if i % 9 == 0 and i:
            with contextlib.suppress(KeyError):  # it may have left already
                q.remove(i - 3)
        q._check()
    s = q.stats()
    assert s["accepted"] - s["evicted"] - s["popped"] - s["removed"] == s["length"] == len(q)
    assert s["accepted"] + s["rejected_capacity"] + s["rejected_quota"] == 40


def test_dead_nodes_stay_bounded_and_get_compacted(impl):
    q = make(impl, 200)
    floor = impl.COMPACT_FLOOR
    for i in range(5000):
        q.push((i * 7919) % 1000, i)  # many evictions: dead nodes in the best heap
        if i % 3 == 0:
            q.pop()  # dead nodes in the worst heap
        stats = q.stats()
        assert stats["dead"] <= 2 * max(len(q), floor)
    q._check()
    assert stats["compactions"] > 0 and stats["dead_cleaned"] > 0
    drain(q)
    q._check()
    assert q.stats()["dead"] <= 2 * floor


# -- bad input leaves the queue unchanged --------------------------------------


BAD_PRIORITIES = [
    (1.5, TypeError), ("1", TypeError), (True, TypeError), (None, TypeError),
    (2**63, OverflowError), (-(2**63) - 1, OverflowError),
]


@pytest.mark.parametrize(("capacity", "error"), [
    (-1, ValueError), (1.5, TypeError), ("3", TypeError), (True, TypeError),
    (None, TypeError), (2**63, OverflowError),
])
def test_bad_capacity(impl, capacity, error):
    with pytest.raises(error, match="capacity"):
        make(impl, capacity)
    if capacity is not None:  # tenant_limit=None means no limit
        with pytest.raises(error, match="tenant_limit"):
            make(impl, 3, tenant_limit=capacity)


def loaded(impl):
    q = make(impl, 10, tenant_limit=2)
    q.push(1, "a", key="a", tenant="t")
    q.push(2, "b", key="b")
    q.push(3, "c", tenant="t")
    q.pop()
    q.push(0, "d", key="d")
    return q


def assert_unchanged(q, call, error, match):
    before = (q.snapshot(), q.stats())
    with pytest.raises(error, match=match):
        call()
    q._check()
    assert (q.snapshot(), q.stats()) == before
    if len(q) < q.capacity:
        # Nor was a sequence number used up: the next push gets the next one.
        last_seq = max([seq for _, seq, _ in before[0]] + [0])
        best = min([priority for priority, _, _ in before[0]] + [0])
        q.push(best - 1, "probe")
        assert q.snapshot()[0] == (best - 1, last_seq + 1, "probe")


@pytest.mark.parametrize(("priority", "error"), BAD_PRIORITIES)
def test_bad_priority(impl, priority, error):
    q = loaded(impl)
    assert_unchanged(q, lambda: q.push(priority, "x"), error, "priority")
    assert_unchanged(q, lambda: q.push_or_evict(priority, "x", key="x"), error, "priority")
    assert_unchanged(q, lambda: q.reprioritize("b", priority), error, "priority")


@pytest.mark.parametrize("method", ["push", "push_or_evict"])
def test_bad_key_or_tenant(impl, method):
    q = loaded(impl)
    push = getattr(q, method)
    assert_unchanged(q, lambda: push(0, "x", key=[1]), TypeError, "key must be hashable")
    assert_unchanged(q, lambda: push(0, "x", tenant={}), TypeError, "tenant must be hashable")
    assert_unchanged(q, lambda: push(0, "x", key=(1, [2])), TypeError, "key must be hashable")
    assert_unchanged(q, lambda: push(0, "x", key="b"), ValueError, "key 'b' is already")


def test_bad_key_for_remove_and_reprioritize(impl):
    q = loaded(impl)
    for call in (q.remove, lambda key: q.reprioritize(key, 0)):
        assert_unchanged(q, partial(call, "zz"), KeyError, "key 'zz' is not in the queue")
        assert_unchanged(q, partial(call, []), TypeError, "key must be hashable")
        # "c" is the value of an entry without a key.
        assert_unchanged(q, partial(call, "c"), KeyError, "not in the queue")


def test_bad_input_on_an_empty_and_a_zero_queue(impl):
    for q in (make(impl, 3), make(impl, 0)):
        assert_unchanged(q, partial(q.remove, "x"), KeyError, "not in the queue")
        assert_unchanged(q, partial(q.push, "p", "x"), TypeError, "priority")


# -- objects are released once they leave, and never mid-update ---------------


class Value:
    """A weak-referenceable value; its finaliser may run a hook."""

    def __init__(self, name, on_del=None):
        self.name = name
        self.on_del = on_del

    def __del__(self):
        if self.on_del is not None:
            self.on_del(self)


class Key:
    """A weak-referenceable hashable key."""

    def __init__(self, name):
        self.name = name

    def __hash__(self):
        return hash(self.name)

    def __eq__(self, other):
        return isinstance(other, Key) and other.name == self.name


def test_values_keys_and_tenants_are_released(impl):
    q = make(impl, 2)
    value, key, tenant = Value("popped"), Key("k"), Key("t")
    refs = [weakref.ref(o) for o in (value, key, tenant)]
    q.push(1, value, key=key, tenant=tenant)
    del value, key, tenant
    assert all(r() is not None for r in refs)
    q.pop()
    assert all(r() is None for r in refs), "pop"

    value = Value("evicted")
    ref = weakref.ref(value)
    q.push(5, value)
    q.push(4, "x")
    del value
    assert q.push(1, "better")
    assert ref() is None, "push evicting"

    q = make(impl, 1)
    value = Value("evicted, reported")
    ref = weakref.ref(value)
    q.push(5, value)
    del value
    dropped = q.push_or_evict(0, "best")
    assert ref() is dropped.value
    del dropped
    assert ref() is None, "push_or_evict"

    value = Value("refused")
    ref = weakref.ref(value)
    assert not q.push(9, value)
    del value
    assert ref() is None, "refused"

    value, key = Value("removed"), Key("r")
    refs = [weakref.ref(value), weakref.ref(key)]
    q.pop()
    assert q.push(2, value, key=key)
    del value
    assert q.remove(Key("r")).name == "removed"
    del key
    assert all(r() is None for r in refs), "remove"
    q._check()


def test_reprioritize_keeps_the_value(impl):
    q = make(impl, 2)
    value = Value("kept")
    ref = weakref.ref(value)
    q.push(2, value, key="k")
    del value
    q.reprioritize("k", 1)
    gc.collect()
    assert ref() is not None and q.pop() is ref()


def test_a_cycle_through_the_queue_is_collected(impl):
    q = make(impl, 2)
    value = Value("cycle")
    value.queue = q
    q.push(1, value, key=Key("k"))
    ref = weakref.ref(value)
    del value, q
    gc.collect()
    assert ref() is None


def test_a_finaliser_may_push_into_the_queue(impl):
    q = make(impl, 2)
    seen = []

    def push_back(value):
        # Runs when the value is released: the queue must already be whole.
        q._check()
        seen.append(q.snapshot())
        q.push(0, "from finaliser")

    q.push(5, Value("doomed", push_back))
    q.push(3, "kept")
    assert q.push(1, "newcomer")  # evicts "doomed", whose finaliser pushes
    q._check()
    assert seen == [[(1, 3, "newcomer"), (3, 2, "kept")]]
    assert [v for _, _, v in q.snapshot()] == ["from finaliser", "newcomer"]


def test_a_finaliser_may_pop_from_the_queue(impl):
    q = make(impl, 3)
    popped = []

    def pop_one(value):
        q._check()
        popped.append(q.pop())

    q.push(1, Value("first", pop_one))
    q.push(2, "second")
    q.push(3, "third")
    q.pop()  # releases "first", whose finaliser pops "second"
    q._check()
    assert popped == ["second"] and q.snapshot() == [(3, 3, "third")]


class DyingKey(Key):
    """A key (or tenant) whose finaliser runs a hook."""

    def __init__(self, name, on_del):
        super().__init__(name)
        self.on_del = on_del

    def __del__(self):
        self.on_del(self)


@pytest.mark.parametrize("leave", ["push", "push_or_evict", "pop", "pop_entry", "remove"])
def test_a_key_and_tenant_released_on_leaving_may_call_back(impl, leave):
    # Every object an entry held is released only once the queue is whole:
    # the key's and the tenant's finalisers check it and push into it.
    q = make(impl, 2)
    seen = []

    def call_back(obj):
        q._check()
        seen.append(obj.name)
        q.push(-1, f"from {obj.name}")

    q.push(5, "doomed", key=DyingKey("k", call_back), tenant=DyingKey("t", call_back))
    q.push(3, "kept")
    if leave.startswith("pop"):
        q.reprioritize(Key("k"), 1)  # the doomed entry is now the best
    calls = {
        "push": lambda: q.push(1, "newcomer"),
        "push_or_evict": lambda: q.push_or_evict(1, "newcomer"),
        "pop": q.pop,
        "pop_entry": q.pop_entry,
        "remove": lambda: q.remove(Key("k")),
    }
    left = calls[leave]()
    assert left is True or getattr(left, "value", left) == "doomed"
    del left
    gc.collect()
    q._check()
    assert sorted(seen) == ["k", "t"]
    assert {"from k", "from t"} & {v for _, _, v in q.snapshot()}


class Meddler:
    """A key whose ``__eq__`` edits the queue once, during a lookup."""

    def __init__(self, name, action):
        self.name = name
        self.action = action

    def __hash__(self):
        return 42  # every Meddler collides, so lookups compare

    def __eq__(self, other):
        action, self.action = self.action, None
        if action is not None:
            action()
        return isinstance(other, Meddler) and other.name == self.name


def test_a_key_eq_that_edits_the_queue_during_push(impl):
    q = make(impl, 2)
    stored = Meddler("a", None)
    q.push(1, "a", key=stored)
    q.push(2, "b")
    # The lookup of the new key compares "a"'s key with it, which pops "a" and
    # fills the free place: the push must then see a full queue, not the old one.
    stored.action = lambda: (q.pop(), q.push(0, "c"))
    assert q.push_or_evict(1, "n", key=Meddler("n", None)).value == "b"
    q._check()
    assert [v for _, _, v in q.snapshot()] == ["c", "n"]


def test_a_key_eq_that_removes_the_entry_during_remove(impl):
    q = make(impl, 3)
    q.push(1, "a", key=Meddler("a", None))
    stored = Meddler("b", None)
    q.push(2, "b", key=stored)
    stored.action = q.pop  # pops "a" while remove() looks "b" up
    assert q.remove(Meddler("b", None)) == "b"
    q._check()
    assert len(q) == 0


# -- MemoryError leaves the core unchanged --------------------------------------


def fail_allocations_until_success(q, call):
    """Run ``call`` with allocation number n and later failing, n = 0, 1, ... until it succeeds.

    Every MemoryError on the way must leave ``q`` exactly as it was.
    """
    testcapi = pytest.importorskip("_testcapi")
    before = (q.snapshot(), q.stats())
    for n in range(10_000):
        testcapi.set_nomemory(n, 0)
        try:
            return call()
        except MemoryError:
            pass
        finally:
            testcapi.remove_mem_hooks()
        q._check()
        assert (q.snapshot(), q.stats()) == before, f"allocation {n} failed mid-update"
    raise AssertionError("the call never succeeded")


def test_memory_errors_leave_the_core_unchanged():
    # The core grows every array and allocates every object before it changes
    # anything. The pure twin cannot promise that: any Python step may raise
    # MemoryError, and dicts cannot reserve room in advance.
    from support.impl import NO_EXTENSIONS, compiled_module

    if NO_EXTENSIONS:
        pytest.skip("PYSCHED_NO_EXTENSIONS is set: pure install")
    q = compiled_module().StableBoundedPriorityQueue(16, tenant_limit=20)
    # First push: records, heaps and both tables are allocated lazily.
    assert fail_allocations_until_success(q, partial(q.push, 50, "v0", key="k0", tenant="t0"))
    for i in range(1, 16):
        # Growth boundaries on the way (records and heaps at 16, tables doubling).
        assert fail_allocations_until_success(
            q, partial(q.push, 50 + i, f"v{i}", key=f"k{i}", tenant=f"t{i % 5}"))
    q._check()
    # Full: an eviction allocates the entry that carries the evicted objects.
    assert fail_allocations_until_success(q, partial(q.push, 0, "new", key="new", tenant="t9"))
    assert fail_allocations_until_success(q, partial(q.push_or_evict, 99, "refused")).reason \
        == "capacity"
    # Every record in use: reprioritize needs a new one.
    fail_allocations_until_success(q, partial(q.reprioritize, "k3", -5))
    assert fail_allocations_until_success(q, partial(q.remove, "k4")) == "v4"
    assert fail_allocations_until_success(q, q.pop) == "v3"
    assert fail_allocations_until_success(q, q.pop_entry).value == "new"
    q._check()


def test_capacity_zero_allocates_nothing():
    from support.impl import NO_EXTENSIONS, compiled_module

    if NO_EXTENSIONS:
        pytest.skip("PYSCHED_NO_EXTENSIONS is set: pure install")
    testcapi = pytest.importorskip("_testcapi")
    q = compiled_module().StableBoundedPriorityQueue(0, tenant_limit=3)
    key, tenant = "k", "t"
    hash(key), hash(tenant)  # cached: hashing them allocates nothing either
    # Bound before the window: Python 3.10 compiles `q.push(..., key=...)` to
    # LOAD_ATTR + CALL_FUNCTION_KW, which allocates a bound method on each call
    # (3.11+ call the method without one). The window then holds the core's work only.
    push = q.push
    testcapi.set_nomemory(0, 0)  # every allocation from here on fails
    try:
        first = push(1, None, key=key, tenant=tenant)
        second = push(2, None, key=key)
    finally:
        testcapi.remove_mem_hooks()
    assert first is second is False
    assert q.stats()["rejected_capacity"] == 2
    q._check()
