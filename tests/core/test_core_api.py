"""peek(), cancel_pending(), release() and the batch calls, on the core and the twin.

The batch calls are checked against the single calls as their model: the same
inputs through ``schedule()``/``next()`` on a second scheduler give the same
results, stats and states.
"""

from __future__ import annotations

import collections
import math

import pytest

from pysched import InvalidTransition


def noop() -> None:
    pass


# -- peek ---------------------------------------------------------------------


def test_peek_names_what_next_would_claim_first(impl):
    s = impl.Scheduler()
    assert s.peek() is None
    s.schedule("late", 5.0, 0, noop)
    s.schedule("low", 2.0, 0, noop)
    s.schedule("high", 2.0, 9, noop)
    assert s.peek() == (2.0, "high")
    assert s.next(now=2.0).task_id == "high"
    assert s.peek() == (2.0, "low")


def test_peek_gives_the_exact_absolute_time(impl):
    s = impl.Scheduler()
    run_at = 1e9 + 0.1  # now + (run_at - now) need not give run_at back
    s.schedule("a", run_at, 0, noop)
    assert s.peek() == (run_at, "a")
    s.cancel("a")
    s.schedule("b", 2**53, 0, noop)  # an int time comes back equal to itself
    got = s.peek()
    assert got == (2**53, "b") and got[0] == 2**53


def test_peek_skips_stale_entries_and_versions_whose_id_runs(impl):
    s = impl.Scheduler()
    s.schedule("a", 1.0, 0, noop)
    s.schedule("b", 3.0, 0, noop)
    running = s.next(now=1.0)
    s.schedule("a", 2.0, 0, noop)  # due before b, but a's run is not over
    s.schedule("c", 2.5, 0, noop)
    s.cancel("c")  # stale
    assert s.peek() == (3.0, "b")
    assert s.next(now=2.0) == pytest.approx(1.0)  # next() agrees: b's time, not a's
    s.complete(running)
    assert s.peek() == (2.0, "a")
    s._check()


def test_peek_is_none_when_only_parked_versions_are_left(impl):
    s = impl.Scheduler()
    s.schedule("a", 1.0, 0, noop)
    running = s.next(now=1.0)
    s.schedule("a", 1.0, 0, noop)
    assert s.peek() is None and s.next(now=9.0) is None and len(s) == 1
    s.release(running)
    assert s.peek() == (1.0, "a")


# -- cancel_pending -----------------------------------------------------------


def test_cancel_pending_cancels_only_the_pending_version(impl):
    s = impl.Scheduler()
    s.schedule("a", 1.0, 0, noop)
    running = s.next(now=1.0)
    s.schedule("a", 2.0, 0, noop)
    assert s.cancel_pending("a") is True
    assert not running.cancel_requested  # the running version is never flagged
    assert s.state("a") == "running" and len(s) == 0
    assert s.cancel_pending("a") is False  # nothing pending: still running, unflagged
    assert not running.cancel_requested and s.state("a") == "running"
    s.complete(running)
    assert s.state("a") is None and s.next(now=9.0) is None
    assert s.stats()["cancelled"] == 1
    s._check()


def test_cancel_pending_forgets_an_idle_id(impl):
    s = impl.Scheduler()
    assert s.cancel_pending("never") is False
    s.schedule("a", 1.0, 0, noop)
    assert s.cancel_pending("a") is True
    assert s.state("a") is None and s.schedule("a", 1.0, 0, noop) == 1


def test_cancel_pending_of_a_parked_version(impl):
    s = impl.Scheduler()
    s.schedule("a", 1.0, 0, noop)
    running = s.next(now=1.0)
    s.schedule("a", 1.0, 0, noop)
    assert s.next(now=1.0) is None and s.stats()["parked"] == 1
    assert s.cancel_pending("a") is True
    assert s.stats()["parked"] == 0 and len(s) == 0
    s.complete(running)
    assert s.next(now=9.0) is None
    s._check()


def test_cancel_pending_names_an_unhashable_id(impl):
    s = impl.Scheduler()
    with pytest.raises(TypeError, match="task_id"):
        s.cancel_pending(["a"])


# -- release ------------------------------------------------------------------


def test_release_finishes_a_claimed_task_as_cancelled(impl):
    s = impl.Scheduler()
    s.schedule("a", 1.0, 0, noop)
    task = s.next(now=1.0)
    s.release(task)
    assert task.state == "cancelled" and task.exception is None
    stats = s.stats()
    assert (stats["released"], stats["completed"], stats["running"]) == (1, 0, 0)
    assert s.state("a") is None
    s._check()


def test_release_lets_a_parked_version_run(impl):
    s = impl.Scheduler()
    s.schedule("a", 1.0, 0, noop)
    old = s.next(now=1.0)
    assert s.schedule("a", 1.0, 0, noop) == 2
    assert s.next(now=1.0) is None
    s.release(old)
    new = s.next(now=1.0)
    assert (new.task_id, new.version) == ("a", 2)


@pytest.mark.parametrize("first", ["complete", "fail", "release"])
def test_a_task_ends_once(impl, first):
    """running -> completed | failed | cancelled; every other transition is refused."""
    s = impl.Scheduler()
    s.schedule("a", 1.0, 0, noop)
    task = s.next(now=1.0)
    ends = {"complete": lambda: s.complete(task),
            "fail": lambda: s.fail(task, ValueError("x")),
            "release": lambda: s.release(task)}
    ends[first]()
    before = s.stats()
    for again in ends.values():
        with pytest.raises(InvalidTransition):
            again()
    assert s.stats() == before


def test_release_refuses_a_task_of_another_scheduler(impl):
    s, other = impl.Scheduler(), impl.Scheduler()
    other.schedule("a", 1.0, 0, noop)
    task = other.next(now=1.0)
    s.schedule("a", 1.0, 0, noop)
    with pytest.raises(InvalidTransition, match="another scheduler"):
        s.release(task)
    assert task.state == "running" and len(s) == 1
    with pytest.raises(TypeError):
        s.release("a")


# -- schedule_many ------------------------------------------------------------


def items_for(n, fns):
    return [(i % 7, float(i % 5), i % 3, fns[i]) for i in range(n)]


def test_schedule_many_is_schedule_in_a_loop(impl):
    fns = [lambda: None for _ in range(40)]
    items = items_for(40, fns)
    batch, single = impl.Scheduler(), impl.Scheduler()
    assert batch.schedule_many(items) == [single.schedule(*item) for item in items]
    assert batch.stats() == single.stats()
    order = []
    for s in (batch, single):
        claimed = []
        while isinstance(task := s.next(now=9.0), impl.Task):
            claimed.append((task.task_id, task.version, task.fn))
            s.complete(task)
        order.append(claimed)
    assert order[0] == order[1]
    batch._check()


def test_schedule_many_takes_any_iterable(impl):
    s = impl.Scheduler()
    assert s.schedule_many(iter([("a", 1.0, 0, noop), ["b", 2, 1, noop]])) == [1, 1]
    assert s.schedule_many([]) == []
    assert s.peek() == (1.0, "a")


Item = collections.namedtuple("Item", "task_id run_at priority fn")


class SwappingItem(tuple):
    """A tuple whose iteration answers differently the second time."""

    def __iter__(self):
        read_before = getattr(self, "read", False)
        self.read = True
        yield from ("swapped", 9.0, 0, noop) if read_before else tuple.__iter__(self)


def test_schedule_many_takes_tuple_subclasses_and_reads_each_item_once(impl):
    s = impl.Scheduler()
    items = [Item("a", 1.0, 2, noop), SwappingItem(("b", 2.0, 0, noop))]
    assert s.schedule_many(items) == [1, 1]
    assert [s.next(now=5.0).task_id, s.next(now=5.0).task_id] == ["a", "b"]
    assert s.state("swapped") is None
    s._check()


@pytest.mark.parametrize(("bad", "error", "match"), [
    (("x", math.nan, 0, noop), ValueError, r"items\[2\]\.run_at"),
    (("x", "1", 0, noop), TypeError, r"items\[2\]\.run_at"),
    (("x", 1.0, 2**63, noop), OverflowError, r"items\[2\]\.priority"),
    (("x", 1.0, 0.5, noop), TypeError, r"items\[2\]\.priority"),
    ((["x"], 1.0, 0, noop), TypeError, r"items\[2\]\.task_id"),
    (("x", 1.0, 0, "nope"), TypeError, r"items\[2\]\.fn"),
    (("x", 1.0, 0), TypeError, r"items\[2\] must be a"),
    ("abcd", TypeError, r"items\[2\] must be a"),
    (None, TypeError, r"items\[2\] must be a"),
])
def test_schedule_many_checks_every_item_first(impl, bad, error, match):
    s = impl.Scheduler()
    s.schedule("old", 1.0, 0, noop)
    before = (s.stats(), s.state("a"), s.state("old"))
    with pytest.raises(error, match=match):
        s.schedule_many([("a", 1.0, 0, noop), ("old", 2.0, 0, noop), bad])
    assert (s.stats(), s.state("a"), s.state("old")) == before  # all or nothing
    s._check()


def test_schedule_many_names_a_non_iterable(impl):
    s = impl.Scheduler()
    with pytest.raises(TypeError, match="items must be iterable"):
        s.schedule_many(3)


# -- pop_due ------------------------------------------------------------------


def test_pop_due_is_next_in_a_loop(impl):
    fns = [lambda: None for _ in range(60)]
    batch, single = impl.Scheduler(), impl.Scheduler()
    for s in (batch, single):
        s.schedule_many(items_for(60, fns))
        s.cancel(3)
        s.next(now=0.0)  # one running id: its newer versions park
        s.schedule(0, 0.0, 0, noop)
    for now, limit in [(1.0, 2), (1.0, None), (3.0, 0), (3.0, 1000), (9.0, None)]:
        got = batch.pop_due(now, limit)
        expected = []
        while limit is None or len(expected) < limit:
            task = single.next(now=now)
            if not isinstance(task, impl.Task):
                break
            expected.append(task)
        assert [(t.task_id, t.version, t.run_at) for t in got] == [
            (t.task_id, t.version, t.run_at) for t in expected]
        assert batch.stats() == single.stats()
        for s, tasks in ((batch, got), (single, expected)):
            for task in tasks[::2]:
                s.complete(task)
        batch._check()


def test_pop_due_reads_the_clock_once(impl, fake_clock):
    s = impl.Scheduler(clock=fake_clock)
    reads = []

    def clock():
        reads.append(fake_clock.now)
        return fake_clock()

    s = impl.Scheduler(clock=clock)
    s.schedule_many([(i, 1.0, 0, noop) for i in range(5)])
    fake_clock.advance(1.0)
    assert [t.task_id for t in s.pop_due()] == [0, 1, 2, 3, 4] and len(reads) == 1
    assert s.pop_due() == []


@pytest.mark.parametrize(("now", "limit", "error", "match"), [
    (math.nan, None, ValueError, "now"), ("1", None, TypeError, "now"),
    (1.0, -1, ValueError, "limit"), (1.0, 1.5, TypeError, "limit"),
    (1.0, True, TypeError, "limit"),
])
def test_pop_due_bad_arguments_change_nothing(impl, now, limit, error, match):
    s = impl.Scheduler()
    s.schedule("a", 0.0, 0, noop)
    before = s.stats()
    with pytest.raises(error, match=match):
        s.pop_due(now, limit)
    assert s.stats() == before and s.state("a") == "pending"


# -- complete_many ---------------------------------------------------------------


def running_mix(impl):
    """A scheduler with five running tasks: one with a newer version parked, one cancelled."""
    s = impl.Scheduler()
    s.schedule_many([(i, float(i), 0, noop) for i in range(6)])
    tasks = s.pop_due(now=4.0)
    s.schedule(1, 0.5, 0, noop)  # parked behind the running version
    s.cancel(2)  # cancel requested while it runs
    return s, tasks


def test_complete_many_is_complete_in_a_loop(impl):
    batch, batch_tasks = running_mix(impl)
    single, single_tasks = running_mix(impl)
    batch.complete_many(batch_tasks[1:])
    for task in single_tasks[1:]:
        single.complete(task)
    assert batch.stats() == single.stats() and batch.stats()["completed"] == 4
    assert [t.state for t in batch_tasks] == ["running"] + ["completed"] * 4
    assert [batch.state(i) for i in range(6)] == [single.state(i) for i in range(6)]
    assert [t.task_id for t in batch.pop_due(9.0)] == [t.task_id for t in single.pop_due(9.0)]
    batch.complete_many([])  # nothing to do
    batch._check()


@pytest.mark.parametrize(("bad", "error", "match"), [
    ("not a task", TypeError, r"tasks\[2\] must be a Task"),
    ("again", InvalidTransition, "twice"),
    ("finished", InvalidTransition, "completed"),
    ("other", InvalidTransition, "another scheduler"),
])
def test_complete_many_checks_every_task_first(impl, bad, error, match):
    s, tasks = running_mix(impl)
    other, other_tasks = running_mix(impl)
    batch = tasks[:2]
    if bad == "not a task":
        batch.append(object())
    elif bad == "again":
        batch.append(tasks[0])
    elif bad == "finished":
        s.complete(tasks[4])
        batch.append(tasks[4])
    else:
        batch.append(other_tasks[3])
    before = s.stats()
    with pytest.raises(error, match=match):
        s.complete_many(batch)
    assert s.stats() == before and [t.state for t in tasks[:4]] == ["running"] * 4
    s._check()


def test_complete_many_names_a_non_iterable(impl):
    s = impl.Scheduler()
    with pytest.raises(TypeError, match="tasks"):
        s.complete_many(3)
