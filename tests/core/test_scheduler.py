"""Behaviour of the core Scheduler, on the Cython core and the pure twin alike."""

from __future__ import annotations

import gc
import math
import sys
import weakref
from fractions import Fraction

import pytest

import pysched
from pysched import InvalidTransition


def noop() -> None:
    pass


def drain(sched, now=1e300):
    """Claim and complete every task due by ``now``; return their (id, version)."""
    order = []
    while True:
        task = sched.next(now=now)
        if task is None or isinstance(task, float):
            return order
        order.append((task.task_id, task.version))
        sched.complete(task)


# -- ordering -----------------------------------------------------------------


def test_earliest_first_then_highest_priority_then_fifo(impl):
    s = impl.Scheduler()
    s.schedule("late", 2.0, 100, noop)
    s.schedule("low", 1.0, -5, noop)
    s.schedule("high", 1.0, 7, noop)
    s.schedule("tie1", 1.0, 0, noop)
    s.schedule("tie2", 1.0, 0, noop)
    assert [tid for tid, _ in drain(s)] == ["high", "tie1", "tie2", "low", "late"]


def test_equal_keys_leave_in_submission_order(impl):
    s = impl.Scheduler()
    for i in range(500):
        s.schedule(i, 5.0, 3, noop)
    assert [tid for tid, _ in drain(s)] == list(range(500))
    s._check()


def test_ids_need_not_be_orderable(impl):
    s = impl.Scheduler()
    ids = [object(), (1, "x"), frozenset({2}), None, 3.5]
    for task_id in ids:
        s.schedule(task_id, 0.0, 0, noop)
    assert [tid for tid, _ in drain(s)] == ids


def test_next_never_starts_a_task_early(impl):
    s = impl.Scheduler()
    s.schedule("a", 10.0, 0, noop)
    assert s.next(now=9.5) == 0.5
    wait = s.next(now=math.nextafter(10.0, 0.0))
    assert isinstance(wait, float) and wait > 0
    task = s.next(now=10.0)
    assert task.task_id == "a" and task.state == "running"


def test_float_rounding_at_large_uptimes_never_fires_early(impl):
    # After about 194 days, t + 1e-9 == t: a "due within resolution" rule fires early.
    t0 = 194 * 86400.0
    s = impl.Scheduler()
    s.schedule("a", math.nextafter(t0, math.inf), 0, noop)
    assert s.next(now=t0) > 0
    assert s.next(now=math.nextafter(t0, math.inf)).task_id == "a"


def test_next_returns_none_when_empty_and_uses_the_clock(impl, fake_clock):
    s = impl.Scheduler(clock=fake_clock)
    assert s.next() is None
    s.schedule("a", 3.0, 0, noop)
    assert s.next() == 3.0
    fake_clock.advance(3.0)
    assert s.next().task_id == "a"
    assert s.clock is fake_clock


def test_real_number_times_are_accepted(impl):
    s = impl.Scheduler()
    s.schedule("int", 1, 0, noop)
    s.schedule("fraction", Fraction(1, 2), 0, noop)
    s.schedule("bool-free float", 0.25, 0, noop)
    assert [tid for tid, _ in drain(s)] == ["bool-free float", "fraction", "int"]


def test_priorities_span_the_signed_64_bit_range(impl):
    s = impl.Scheduler()
    s.schedule("min", 1.0, -(2**63), noop)
    s.schedule("max", 1.0, 2**63 - 1, noop)
    s.schedule("zero", 1.0, 0, noop)
    assert [tid for tid, _ in drain(s)] == ["max", "zero", "min"]


# -- versions, replacement, cancellation --------------------------------------


def test_replacement_before_the_old_entry_reaches_the_head(impl):
    s = impl.Scheduler()
    calls = []
    assert s.schedule("job", 5.0, 0, lambda: calls.append(1)) == 1
    s.schedule("other", 1.0, 0, noop)
    assert s.schedule("job", 2.0, 0, lambda: calls.append(2)) == 2
    assert len(s) == 2
    first = s.next(now=10.0)
    assert first.task_id == "other"
    s.complete(first)
    task = s.next(now=10.0)
    assert (task.task_id, task.version) == ("job", 2)
    task.fn()
    s.complete(task)
    assert s.next(now=10.0) is None and calls == [2]
    assert s.stats()["stale_discarded"] == 1


def test_replacing_a_running_task_waits_for_it(impl):
    s = impl.Scheduler()
    s.schedule("job", 1.0, 0, noop)
    old = s.next(now=1.0)
    assert s.schedule("job", 1.0, 0, noop) == 2
    assert s.state("job") == "pending"
    s.schedule("other", 2.0, 0, noop)
    # The due version 2 is parked behind the running version 1; "other" goes first.
    got = s.next(now=5.0)
    assert got.task_id == "other"
    assert s.next(now=5.0) is None and len(s) == 1 and s.stats()["parked"] == 1
    assert not old.cancel_requested  # replacement does not cancel the running version
    s.complete(old)
    new = s.next(now=5.0)
    assert (new.task_id, new.version) == ("job", 2)
    s._check()


def test_cancel_pending_never_starts(impl):
    s = impl.Scheduler()
    s.schedule("a", 1.0, 0, noop)
    s.schedule("b", 1.0, 0, noop)
    assert s.cancel("a") is True
    assert s.state("a") is None and len(s) == 1
    assert [tid for tid, _ in drain(s)] == ["b"]
    assert s.cancel("a") is False
    assert s.cancel("never") is False


def test_cancel_just_before_and_just_after_a_claim(impl):
    s = impl.Scheduler()
    s.schedule("before", 1.0, 0, noop)
    s.schedule("after", 1.0, 0, noop)
    assert s.cancel("before")
    task = s.next(now=1.0)
    assert task.task_id == "after"
    assert s.cancel("after") is True
    assert task.cancel_requested and task.state == "running"
    assert s.state("after") == "running" and s.stats()["running"] == 1
    s.complete(task)
    assert s.state("after") is None and s.cancel("after") is False


def test_cancel_covers_pending_and_running_versions(impl):
    s = impl.Scheduler()
    s.schedule("job", 1.0, 0, noop)
    running = s.next(now=1.0)
    s.schedule("job", 2.0, 0, noop)
    assert s.cancel("job") is True
    assert running.cancel_requested and len(s) == 0 and s.state("job") == "running"
    s.complete(running)
    assert s.next(now=9.0) is None and s.state("job") is None


def test_versions_restart_once_an_id_is_forgotten(impl):
    s = impl.Scheduler()
    assert s.schedule("a", 1.0, 0, noop) == 1
    assert s.schedule("a", 1.0, 0, noop) == 2
    s.cancel("a")
    assert s.schedule("a", 1.0, 0, noop) == 1


def test_finishing_twice_or_a_stale_task_is_refused(impl):
    s = impl.Scheduler()
    s.schedule("a", 0.0, 0, noop)
    task = s.next(now=0.0)
    s.fail(task, ValueError("boom"))
    assert task.state == "failed" and isinstance(task.exception, ValueError)
    before = s.stats()
    with pytest.raises(InvalidTransition):
        s.complete(task)
    with pytest.raises(InvalidTransition):
        s.fail(task, ValueError())
    assert s.stats() == before and task.state == "failed"


def test_a_task_from_another_scheduler_is_refused(impl):
    one, two = impl.Scheduler(), impl.Scheduler()
    one.schedule("a", 0.0, 0, noop)
    two.schedule("a", 0.0, 0, noop)
    task = one.next(now=0.0)
    two.next(now=0.0)
    with pytest.raises(InvalidTransition):
        two.complete(task)
    one.complete(task)
    assert task.state == "completed"


def test_task_attributes_are_read_only(impl):
    s = impl.Scheduler()
    s.schedule("a", 0.0, 4, noop)
    task = s.next(now=0.0)
    expected = ("a", 1, 0.0, 4, noop)
    assert (task.task_id, task.version, task.run_at, task.priority, task.fn) == expected
    for name in ("state", "version", "cancel_requested", "task_id"):
        with pytest.raises(AttributeError):
            setattr(task, name, None)
    assert "running" in repr(task)


# -- stale entries and memory ---------------------------------------------------


def test_stale_entries_stay_bounded_under_replacement(impl):
    s = impl.Scheduler()
    for round_ in range(200):
        for i in range(50):
            s.schedule(i, float(round_), 0, noop)
        stats = s.stats()
        assert stats["stale"] <= max(stats["heap_live"], impl.REBUILD_FLOOR)
    assert s.stats()["heap_size"] <= 2 * 50 + impl.REBUILD_FLOOR
    assert s.stats()["rebuilds"] > 0
    assert len(drain(s)) == 50
    s._check()


def test_stale_entries_stay_bounded_under_cancellation(impl):
    s = impl.Scheduler()
    for i in range(10_000):
        s.schedule(i, float(i), 0, noop)
        if i % 10:
            s.cancel(i)
        stats = s.stats()
        assert stats["stale"] <= max(stats["heap_live"], impl.REBUILD_FLOOR)
    assert len(s) == 1000
    s._check()


def test_references_return_to_where_they_were(impl):
    class Id:
        __slots__ = ("n", "__weakref__")

        def __init__(self, n):
            self.n = n

        def __hash__(self):
            return hash(self.n)

        def __eq__(self, other):
            return isinstance(other, Id) and other.n == self.n

    def make_fn():
        def fn():
            pass

        return fn

    s = impl.Scheduler()
    shared_fn = make_fn()
    base = sys.getrefcount(shared_fn)
    refs = []
    for _cycle in range(3):
        for i in range(300):
            task_id, fn = Id(i), make_fn()
            refs += [weakref.ref(task_id), weakref.ref(fn)]
            s.schedule(task_id, float(i % 7), i % 3, fn if i % 2 else shared_fn)
            if i % 5 == 0:
                s.schedule(Id(i), float(i % 7), 0, shared_fn)
            if i % 4 == 0:
                s.cancel(Id(i))
        del task_id, fn
        drain(s)
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    assert sys.getrefcount(shared_fn) == base
    assert len(s) == 0 and s.stats()["running"] == 0


def test_a_cycle_through_a_pending_fn_is_collected(impl):
    class Owner:
        def tick(self):
            pass

    owner = Owner()
    owner.sched = impl.Scheduler()
    owner.sched.schedule("a", 1.0, 0, owner.tick)  # owner -> sched -> bound method -> owner
    probe = weakref.ref(owner)
    del owner
    gc.collect()
    assert probe() is None


def test_an_id_whose_eq_edits_the_scheduler_is_handled(impl):
    s = impl.Scheduler()

    class Meddler:
        armed = True

        def __hash__(self):
            return 1

        def __eq__(self, other):
            if Meddler.armed:
                Meddler.armed = False
                for i in range(100):  # forces the id table to grow mid-lookup
                    s.schedule(("filler", i), 1.0, 0, noop)
            return self is other

    first, second = Meddler(), Meddler()
    s.schedule(first, 1.0, 0, noop)
    s.schedule(second, 1.0, 0, noop)  # lookup compares with first, which meddles
    assert s.state(first) == "pending" and s.state(second) == "pending"
    assert len(s) == 102
    s._check()


# -- bad input ----------------------------------------------------------------

BAD_SCHEDULE = [
    ({"run_at": math.nan}, ValueError, "run_at"),
    ({"run_at": math.inf}, ValueError, "run_at"),
    ({"run_at": -math.inf}, ValueError, "run_at"),
    ({"run_at": "1.0"}, TypeError, "run_at"),
    ({"run_at": None}, TypeError, "run_at"),
    ({"run_at": True}, TypeError, "run_at"),
    ({"run_at": 1j}, TypeError, "run_at"),
    ({"run_at": 10**400}, OverflowError, "run_at"),
    ({"priority": 1.0}, TypeError, "priority"),
    ({"priority": "1"}, TypeError, "priority"),
    ({"priority": None}, TypeError, "priority"),
    ({"priority": 2**63}, OverflowError, "priority"),
    ({"priority": -(2**63) - 1}, OverflowError, "priority"),
    ({"task_id": []}, TypeError, "task_id"),
    ({"task_id": {"a": 1}}, TypeError, "task_id"),
    ({"task_id": ([],)}, TypeError, "task_id"),
    ({"fn": None}, TypeError, "fn"),
    ({"fn": 42}, TypeError, "fn"),
]


def snapshot(s):
    return s.stats(), len(s), s.state("existing"), s.state(None)


@pytest.mark.parametrize(("override", "error", "name"), BAD_SCHEDULE)
def test_bad_schedule_arguments_change_nothing(impl, override, error, name):
    s = impl.Scheduler()
    s.schedule("existing", 1.0, 0, noop)
    before = snapshot(s)
    args = {"task_id": "existing", "run_at": 0.5, "priority": 0, "fn": noop} | override
    with pytest.raises(error, match=name):
        s.schedule(**args)
    assert snapshot(s) == before
    s._check()
    task = s.next(now=1.0)
    assert (task.task_id, task.version, task.run_at) == ("existing", 1, 1.0)


@pytest.mark.parametrize(("now", "error"), [(math.nan, ValueError), ("soon", TypeError),
                                            (math.inf, ValueError), ([], TypeError)])
def test_bad_now_changes_nothing(impl, now, error):
    s = impl.Scheduler()
    s.schedule("existing", 1.0, 0, noop)
    before = snapshot(s)
    with pytest.raises(error, match="now"):
        s.next(now=now)
    assert snapshot(s) == before


@pytest.mark.parametrize(("reading", "error"), [(math.nan, ValueError), ("tick", TypeError),
                                                (None, TypeError), (-math.inf, ValueError)])
def test_a_clock_returning_garbage_is_named(impl, reading, error):
    s = impl.Scheduler(clock=lambda: reading)
    s.schedule("existing", 1.0, 0, noop)
    before = snapshot(s)
    with pytest.raises(error, match=r"clock\(\)"):
        s.next()
    assert snapshot(s) == before


def test_a_clock_must_be_callable(impl):
    with pytest.raises(TypeError, match="clock"):
        impl.Scheduler(clock=3.0)


@pytest.mark.parametrize("method", ["cancel", "state"])
def test_unhashable_ids_are_named(impl, method):
    s = impl.Scheduler()
    s.schedule("existing", 1.0, 0, noop)
    before = snapshot(s)
    with pytest.raises(TypeError, match="task_id"):
        getattr(s, method)([1, 2])
    assert snapshot(s) == before


def test_fail_needs_an_exception(impl):
    s = impl.Scheduler()
    s.schedule("a", 0.0, 0, noop)
    task = s.next(now=0.0)
    with pytest.raises(TypeError, match="exception"):
        s.fail(task, "not an exception")
    assert task.state == "running"
    with pytest.raises(TypeError):
        s.complete("not a task")
    s.complete(task)


def test_selected_implementation_matches_the_environment():
    import os

    expected = "python" if os.environ.get("PYSCHED_NO_EXTENSIONS") else "cython"
    assert expected == pysched.IMPLEMENTATION
    assert pysched.Scheduler.__module__ == (
        "pysched._core" if expected == "cython" else "pysched._scheduler_py")
