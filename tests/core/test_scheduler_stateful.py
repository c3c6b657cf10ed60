"""The Scheduler against a plain sorted-list model, driven by hypothesis.

The model keeps every pending version in a list and sorts it on each
``next()``; it knows nothing of heaps, slots or stale entries. Ids come from a
small pool and times from a coarse grid, so replacements, ties and parked
versions happen often. Every result of every call is compared.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pysched import InvalidTransition

from support.examples import examples
from support.impl import NO_EXTENSIONS, compiled_module, pure_namespace
from support.scheduler_model import Model

IDS = st.sampled_from(["a", "b", "c", "d", 0, 1, None, (2, 3)])
TIMES = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
PRIORITIES = st.sampled_from([-(2**63), -1, 0, 0, 1, 2**63 - 1])


def make_machine(impl):
    class SchedulerMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.sched = impl.Scheduler(clock=lambda: self.now)
            self.model = Model()
            self.now = 0.0
            self.cancel_requests = set()  # ids whose running task got cancel()

        @rule(task_id=IDS, run_at=TIMES, priority=PRIORITIES)
        def schedule(self, task_id, run_at, priority):
            def fn():
                return None

            expected = self.model.schedule(task_id, self.now + run_at, priority, fn)
            assert self.sched.schedule(task_id, self.now + run_at, priority, fn) == expected

        @rule(count=st.integers(1, 120), offset=TIMES, cancel=st.booleans())
        def burst(self, count, offset, cancel):
            # Enough ids at once to cross REBUILD_FLOOR, so rebuilds happen.
            for i in range(count):
                self.schedule(("bulk", i), offset + (i % 3), i % 2)
            if cancel:
                for i in range(0, count, 2):
                    self.cancel(("bulk", i))

        @rule(task_id=IDS)
        def cancel(self, task_id):
            expected = self.model.cancel(task_id)
            assert self.sched.cancel(task_id) is expected
            if task_id in self.model.running:
                self.cancel_requests.add(task_id)

        @rule(step=st.sampled_from([0.0, 0.0, 0.5, 1.0]), use_clock=st.booleans())
        def next(self, step, use_clock):
            self.now += step
            expected = self.model.next(self.now)
            got = self.sched.next() if use_clock else self.sched.next(now=self.now)
            if expected is None or isinstance(expected, float):
                assert got == expected
                return
            assert (got.task_id, got.version, got.run_at, got.priority, got.fn) == (
                expected.task_id, expected.version, expected.run_at, expected.priority,
                expected.fn)
            assert got.state == "running" and not got.cancel_requested
            self.model.running[got.task_id] = got
            self.cancel_requests.discard(got.task_id)

        @rule(task_id=IDS)
        def cancel_pending(self, task_id):
            running = self.model.running.get(task_id)
            flagged = running is not None and running.cancel_requested
            assert self.sched.cancel_pending(task_id) is self.model.cancel_pending(task_id)
            assert running is None or running.cancel_requested is flagged  # never flags a run

        @rule()
        def peek(self):
            expected = self.model.head()
            got = self.sched.peek()
            assert got == (None if expected is None else (expected.run_at, expected.task_id))

        @rule(step=st.sampled_from([0.0, 0.5, 1.0]), limit=st.sampled_from([None, 0, 1, 2, 5]))
        def pop_due(self, step, limit):
            self.now += step
            got = self.sched.pop_due(self.now, limit)
            assert limit is None or len(got) <= limit
            for task in got:
                expected = self.model.next(self.now)
                assert (task.task_id, task.version, task.run_at) == (
                    expected.task_id, expected.version, expected.run_at)
                self.model.running[task.task_id] = task
                self.cancel_requests.discard(task.task_id)
            if limit is None or len(got) < limit:  # stopped because nothing more is due
                rest = self.model.next(self.now)
                assert rest is None or isinstance(rest, float)

        @rule(items=st.lists(st.tuples(IDS, TIMES, PRIORITIES), max_size=5))
        def schedule_many(self, items):
            fns = [lambda: None for _ in items]
            expected = [self.model.schedule(task_id, self.now + run_at, priority, fn)
                        for (task_id, run_at, priority), fn in zip(items, fns, strict=True)]
            got = self.sched.schedule_many(
                [(task_id, self.now + run_at, priority, fn)
                 for (task_id, run_at, priority), fn in zip(items, fns, strict=True)])
            assert got == expected

        @precondition(lambda self: self.model.running)
        @rule(data=st.data(), how=st.sampled_from(["complete", "fail", "release"]))
        def finish(self, data, how):
            task_id = data.draw(st.sampled_from(sorted(self.model.running, key=repr)))
            task = self.model.running[task_id]
            assert task.cancel_requested is (task_id in self.cancel_requests)
            if how == "complete":
                self.sched.complete(task)
            elif how == "fail":
                self.sched.fail(task, RuntimeError(task_id))
            else:
                self.sched.release(task)
            self.model.finish(task_id)
            assert task.state == {"complete": "completed", "fail": "failed",
                                  "release": "cancelled"}[how]
            with pytest.raises(InvalidTransition):
                self.sched.release(task)

        @rule(bad=st.sampled_from([
            ("run_at", math.nan, ValueError), ("run_at", math.inf, ValueError),
            ("run_at", "1", TypeError), ("priority", 2**63, OverflowError),
            ("priority", 0.5, TypeError), ("task_id", ["list"], TypeError),
            ("fn", "not callable", TypeError)]))
        def bad_schedule(self, bad):
            name, value, error = bad
            args = {"task_id": "a", "run_at": self.now, "priority": 0, "fn": print, name: value}
            before = self.sched.stats()
            with pytest.raises(error, match=name):
                self.sched.schedule(**args)
            assert self.sched.stats() == before

        @invariant()
        def agrees_with_model(self):
            assert len(self.sched) == len(self.model.pending)
            stats = self.sched.stats()
            assert stats["running"] == len(self.model.running)
            assert stats["parked"] == sum(p.parked for p in self.model.pending.values())
            assert stats["heap_size"] <= max(2 * stats["heap_live"], impl.REBUILD_FLOOR)
            for task_id in ["a", "b", "c", "d", 0, 1, None, (2, 3)]:
                expected = ("pending" if task_id in self.model.pending
                            else "running" if task_id in self.model.running else None)
                assert self.sched.state(task_id) == expected
            self.sched._check()

        def teardown(self):
            # Drain: every pending version comes out in the model's order.
            while self.model.running:
                self.finish_one(next(iter(self.model.running)))
            self.now += 10.0
            while (expected := self.model.next(self.now)) is not None:
                got = self.sched.next(now=self.now)
                assert (got.task_id, got.version) == (expected.task_id, expected.version)
                self.sched.complete(got)
            assert self.sched.next(now=self.now) is None and len(self.sched) == 0

        def finish_one(self, task_id):
            self.sched.complete(self.model.running[task_id])
            self.model.finish(task_id)

    return SchedulerMachine


SETTINGS = settings(max_examples=examples(150), stateful_step_count=60, deadline=None)

TestPureScheduler = make_machine(pure_namespace()).TestCase
TestPureScheduler.settings = SETTINGS

if not NO_EXTENSIONS:
    TestCythonScheduler = make_machine(compiled_module()).TestCase
    TestCythonScheduler.settings = SETTINGS
