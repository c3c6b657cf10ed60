"""Bad input on every public entry point, both implementations: the table of docs/bad-input.md.

Each case calls one entry point with one bad value on a structure that already
holds work, and checks on the Cython core and on the pure twin: the exception
type, a fragment of its message (it names the argument), and that nothing
changed (same stats, size and states before and after). The docs table is
rendered from CASES and compared with docs/bad-input.md, so the two cannot
drift; regenerate it with ``python tests/package/test_bad_input.py > docs/bad-input.md``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import pysched

DOC = Path(__file__).resolve().parents[2] / "docs" / "bad-input.md"
FAR = 1e9  # run_at of the work already held: never due during a test


def noop() -> None:
    pass


class HashRaises:
    def __hash__(self) -> int:
        raise TypeError("no hash")


@dataclass(frozen=True)
class Case:
    entry: str  # the entry point, as the docs show it
    bad: str  # the bad value, as the docs show it
    error: type[BaseException]
    fragment: str  # in the message on both implementations...
    call: Callable[[Any], Any]  # call(subject) makes the bad call
    c_fragment: str | None = None  # ...unless the compiled core words it differently


# -- Scheduler ---------------------------------------------------------------------

def sched_args(**override: Any) -> Callable[[Any], Any]:
    args = {"task_id": "new", "run_at": 1.0, "priority": 0, "fn": noop} | override
    return lambda s: s.schedule(**args)


def finish_twice(s: Any) -> None:
    s.complete(s.finished)


def finish_foreign(s: Any) -> None:
    s.complete(s.foreign)


def bad_clock(reading: Any) -> Callable[[Any], Any]:
    def call(s: Any) -> None:
        s.clock_reading = reading
        try:
            s.next()
        finally:
            s.clock_reading = 0.0
    return call


SCHEDULER = [
    Case("Scheduler(clock=)", "3.0", TypeError, "clock must be callable",
         lambda s: type(s.core)(clock=3.0)),
    Case("Scheduler(clock=)", "None", TypeError, "clock must be callable",
         lambda s: type(s.core)(clock=None)),
    Case("schedule(task_id=)", "[]", TypeError, "task_id must be hashable", sched_args(task_id=[])),
    Case("schedule(task_id=)", "([],)", TypeError, "task_id must be hashable",
         sched_args(task_id=([],))),
    Case("schedule(task_id=)", "object whose hash() raises TypeError", TypeError,
         "task_id must be hashable", sched_args(task_id=HashRaises())),
    Case("schedule(run_at=)", "nan", ValueError, "run_at must be finite",
         sched_args(run_at=math.nan)),
    Case("schedule(run_at=)", "inf", ValueError, "run_at must be finite",
         sched_args(run_at=math.inf)),
    Case("schedule(run_at=)", "'1.0'", TypeError, "run_at must be a real number",
         sched_args(run_at="1.0")),
    Case("schedule(run_at=)", "None", TypeError, "run_at must be a real number",
         sched_args(run_at=None)),
    Case("schedule(run_at=)", "True", TypeError, "run_at must be a real number",
         sched_args(run_at=True)),
    Case("schedule(run_at=)", "1j", TypeError, "run_at must be a real number",
         sched_args(run_at=1j)),
    Case("schedule(run_at=)", "10**400", OverflowError, "run_at is too large",
         sched_args(run_at=10**400)),
    Case("schedule(priority=)", "1.0", TypeError, "priority must be an int",
         sched_args(priority=1.0)),
    Case("schedule(priority=)", "True", TypeError, "priority must be an int",
         sched_args(priority=True)),
    Case("schedule(priority=)", "2**63", OverflowError, "priority must fit in a signed 64-bit",
         sched_args(priority=2**63)),
    Case("schedule(priority=)", "-2**63 - 1", OverflowError,
         "priority must fit in a signed 64-bit", sched_args(priority=-(2**63) - 1)),
    Case("schedule(fn=)", "None", TypeError, "fn must be callable", sched_args(fn=None)),
    Case("cancel(task_id=)", "[]", TypeError, "task_id must be hashable",
         lambda s: s.cancel([])),
    Case("state(task_id=)", "{}", TypeError, "task_id must be hashable", lambda s: s.state({})),
    Case("next(now=)", "nan", ValueError, "now must be finite", lambda s: s.next(now=math.nan)),
    Case("next(now=)", "'soon'", TypeError, "now must be a real number",
         lambda s: s.next(now="soon")),
    Case("next()", "clock() returns 'tick'", TypeError, "clock() must be a real number",
         bad_clock("tick")),
    Case("next()", "clock() returns -inf", ValueError, "clock() must be finite",
         bad_clock(-math.inf)),
    Case("complete(task=)", "'a task'", TypeError, "task must be a Task",
         lambda s: s.complete("a task"), c_fragment="Argument 'task' has incorrect type"),
    Case("complete(task=)", "a task already finished", pysched.InvalidTransition,
         "it is completed", finish_twice),
    Case("complete(task=)", "a task of another scheduler", pysched.InvalidTransition,
         "in another scheduler", finish_foreign),
    Case("fail(task=, exception=)", "exception='boom'", TypeError,
         "exception must be an exception", lambda s: s.fail(s.running, "boom")),
    Case("fail(task=, exception=)", "exception=ValueError (the class)", TypeError,
         "exception must be an exception", lambda s: s.fail(s.running, ValueError)),
    Case("release(task=)", "a task already finished", pysched.InvalidTransition,
         "it is completed", lambda s: s.release(s.finished)),
    Case("cancel_pending(task_id=)", "[]", TypeError, "task_id must be hashable",
         lambda s: s.cancel_pending([])),
    Case("schedule_many(items=)", "3", TypeError, "items must be iterable",
         lambda s: s.schedule_many(3)),
    Case("schedule_many(items=)", "[good, ('x', nan, 0, fn)]", ValueError,
         "items[1].run_at must be finite",
         lambda s: s.schedule_many([("new", 1.0, 0, noop), ("x", math.nan, 0, noop)])),
    Case("schedule_many(items=)", "[good, ('x', 1.0)]", TypeError,
         "items[1] must be a (task_id, run_at, priority, fn) tuple",
         lambda s: s.schedule_many([("new", 1.0, 0, noop), ("x", 1.0)])),
    Case("pop_due(now=)", "nan", ValueError, "now must be finite",
         lambda s: s.pop_due(math.nan)),
    Case("pop_due(limit=)", "-1", ValueError, "limit must be >= 0",
         lambda s: s.pop_due(0.0, -1)),
    Case("pop_due(limit=)", "1.5", TypeError, "limit must be an int",
         lambda s: s.pop_due(0.0, 1.5)),
]


class SchedulerSubject:
    """A Scheduler holding pending work, a running task and a finished one."""

    def __init__(self, impl: Any) -> None:
        self.clock_reading: Any = 0.0
        self.core = impl.Scheduler(clock=lambda: self.clock_reading)
        self.core.schedule("done", 0.0, 0, noop)
        self.finished = self.core.next(now=0.0)
        self.core.complete(self.finished)
        self.core.schedule("run", 0.0, 0, noop)
        self.running = self.core.next(now=0.0)
        self.core.schedule("pending", FAR, 0, noop)
        other = impl.Scheduler()
        other.schedule("run", 0.0, 0, noop)
        self.foreign = other.next(now=0.0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.core, name)

    def snapshot(self) -> Any:
        s = self.core
        return (s.stats(), len(s), [s.state(i) for i in ("done", "run", "pending", "new")],
                self.running.state, self.finished.state)

    def check(self) -> None:
        self.core._check()


# -- StableBoundedPriorityQueue ---------------------------------------------------------

QUEUE = [
    Case("StableBoundedPriorityQueue(capacity=)", "-1", ValueError, "capacity must be >= 0",
         lambda q: type(q.core)(-1)),
    Case("StableBoundedPriorityQueue(capacity=)", "1.5", TypeError, "capacity must be an int",
         lambda q: type(q.core)(1.5)),
    Case("StableBoundedPriorityQueue(capacity=)", "True", TypeError, "capacity must be an int",
         lambda q: type(q.core)(True)),
    Case("StableBoundedPriorityQueue(capacity=)", "2**64", OverflowError, "capacity is too large",
         lambda q: type(q.core)(2**64)),
    Case("StableBoundedPriorityQueue(tenant_limit=)", "-1", ValueError,
         "tenant_limit must be >= 0", lambda q: type(q.core)(4, tenant_limit=-1)),
    Case("push(priority=)", "'1'", TypeError, "priority must be an int",
         lambda q: q.push("1", "v")),
    Case("push(priority=)", "2**63", OverflowError, "priority must fit in a signed 64-bit",
         lambda q: q.push(2**63, "v")),
    Case("push(key=)", "[]", TypeError, "key must be hashable", lambda q: q.push(1, "v", key=[])),
    Case("push(key=)", "a key already in the queue", ValueError, "is already in the queue",
         lambda q: q.push(1, "v", key="k")),
    Case("push(tenant=)", "[]", TypeError, "tenant must be hashable",
         lambda q: q.push(1, "v", tenant=[])),
    Case("push_or_evict(priority=)", "None", TypeError, "priority must be an int",
         lambda q: q.push_or_evict(None, "v")),
    Case("push_or_evict(key=)", "a key already in the queue", ValueError,
         "is already in the queue", lambda q: q.push_or_evict(1, "v", key="k")),
    Case("pop()", "on an empty queue", IndexError, "empty queue", lambda q: q.empty.pop()),
    Case("pop_entry()", "on an empty queue", IndexError, "empty queue",
         lambda q: q.empty.pop_entry()),
    Case("peek()", "on an empty queue", IndexError, "empty queue", lambda q: q.empty.peek()),
    Case("peek_worst()", "on an empty queue", IndexError, "empty queue",
         lambda q: q.empty.peek_worst()),
    Case("remove(key=)", "a key not in the queue", KeyError, "is not in the queue",
         lambda q: q.remove("missing")),
    Case("remove(key=)", "[]", TypeError, "key must be hashable", lambda q: q.remove([])),
    Case("reprioritize(key=)", "a key not in the queue", KeyError, "is not in the queue",
         lambda q: q.reprioritize("missing", 1)),
    Case("reprioritize(priority=)", "1.5", TypeError, "priority must be an int",
         lambda q: q.reprioritize("k", 1.5)),
]


class QueueSubject:
    """A bounded queue holding a keyed entry and a tenant's entry, plus an empty one."""

    def __init__(self, impl: Any) -> None:
        self.core = impl.StableBoundedPriorityQueue(4, tenant_limit=2)
        self.core.push(1, "v", key="k")
        self.core.push(2, "w", tenant="t")
        self.empty = impl.StableBoundedPriorityQueue(4)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.core, name)

    def snapshot(self) -> Any:
        return self.core.stats(), self.core.snapshot(), len(self.empty)

    def check(self) -> None:
        self.core._check()


# -- ThreadPoolScheduler -----------------------------------------------------------------

def new_pool(**kwargs: Any) -> Callable[[Any], Any]:
    def call(p: Any) -> None:
        from pysched.threadpool import ThreadPoolScheduler

        ThreadPoolScheduler(_core_factory=p.impl.Scheduler, **kwargs).close()
    return call


POOL = [
    Case("ThreadPoolScheduler(max_workers=)", "0", ValueError, "max_workers must be greater than 0",
         new_pool(max_workers=0)),
    Case("ThreadPoolScheduler(max_workers=)", "'2'", TypeError, "max_workers must be an int",
         new_pool(max_workers="2")),
    Case("ThreadPoolScheduler(overflow=)", "'drop'", ValueError, "overflow must be one of",
         new_pool(overflow="drop")),
    Case("ThreadPoolScheduler(max_pending=)", "-1", ValueError, "max_pending must be >= 0",
         new_pool(max_pending=-1)),
    Case("ThreadPoolScheduler(aging=)", "0", ValueError, "aging must be > 0", new_pool(aging=0)),
    Case("ThreadPoolScheduler(lateness_samples=)", "0", ValueError,
         "lateness_samples must be >= 1", new_pool(lateness_samples=0)),
    Case("ThreadPoolScheduler(clock=)", "None", TypeError, "clock", new_pool(clock=None)),
    Case("schedule(task_id=)", "[]", TypeError, "task_id must be hashable",
         lambda p: p.pool.schedule([], FAR, 0, noop)),
    Case("schedule(run_at=)", "nan", ValueError, "run_at must be finite",
         lambda p: p.pool.schedule("new", math.nan, 0, noop)),
    Case("schedule(priority=)", "2**63", OverflowError, "priority must fit in a signed 64-bit",
         lambda p: p.pool.schedule("new", FAR, 2**63, noop)),
    Case("schedule(fn=)", "42", TypeError, "fn must be callable",
         lambda p: p.pool.schedule("new", FAR, 0, 42)),
    Case("schedule(args=)", "5", TypeError, "args must be an iterable",
         lambda p: p.pool.schedule("new", FAR, 0, noop, args=5)),
    Case("schedule(timeout=)", "0", ValueError, "timeout must be > 0",
         lambda p: p.pool.schedule("new", FAR, 0, noop, timeout=0)),
    Case("schedule_in(delay=)", "-1", ValueError, "delay must be >= 0",
         lambda p: p.pool.schedule_in("new", -1, 0, noop)),
    Case("schedule_every(interval=)", "0", ValueError, "interval must be > 0",
         lambda p: p.pool.schedule_every("new", 0, 0, noop)),
    Case("schedule_every(mode=)", "'x'", ValueError, "mode must be one of",
         lambda p: p.pool.schedule_every("new", 1.0, 0, noop, mode="x")),
    Case("cancel(task_id=)", "[]", TypeError, "task_id must be hashable",
         lambda p: p.pool.cancel([])),
    Case("close(timeout=)", "-1", ValueError, "timeout must be >= 0",
         lambda p: p.pool.close(timeout=-1)),
    Case("schedule()", "after close()", pysched.SchedulerClosed, "the scheduler is closed",
         lambda p: p.closed.schedule("new", FAR, 0, noop)),
    Case("submit()", "after close()", pysched.SchedulerClosed, "the scheduler is closed",
         lambda p: p.closed.submit(noop)),
]


class PoolSubject:
    """An open pool holding one far-off task, and a closed pool."""

    def __init__(self, impl: Any) -> None:
        from pysched.threadpool import ThreadPoolScheduler

        self.impl = impl
        self.pool = ThreadPoolScheduler(2, _core_factory=impl.Scheduler)
        self.waiting = self.pool.schedule("pending", FAR, 0, noop)
        self.closed = ThreadPoolScheduler(1, _core_factory=impl.Scheduler)
        self.closed.close()

    def snapshot(self) -> Any:
        stats = self.pool.stats()
        del stats["lateness"]
        return stats, self.waiting.done()

    def check(self) -> None:
        self.pool._core._check()

    def close(self) -> None:
        assert self.pool.close(wait=True, timeout=30)


GROUPS = [("Scheduler", SCHEDULER, SchedulerSubject),
          ("StableBoundedPriorityQueue", QUEUE, QueueSubject),
          ("ThreadPoolScheduler", POOL, PoolSubject)]
ALL = [(subject, case) for _title, cases, subject in GROUPS for case in cases]


@pytest.mark.parametrize(("subject_cls", "case"), ALL,
                         ids=[f"{case.entry}-{case.bad}" for _s, case in ALL])
def test_bad_input_is_refused_and_changes_nothing(impl, subject_cls, case):
    compiled = impl.Scheduler.__module__ == "pysched._core"
    subject = subject_cls(impl)
    try:
        before = subject.snapshot()
        fragment = case.c_fragment if compiled and case.c_fragment else case.fragment
        with pytest.raises(case.error) as info:
            case.call(subject)
        assert fragment in str(info.value), (str(info.value), fragment)
        assert subject.snapshot() == before
        subject.check()
    finally:
        if hasattr(subject, "close"):
            subject.close()


def render() -> str:
    """The docs page, from CASES."""
    lines = [
        "# Bad input: what each public entry point raises",
        "",
        "Generated from `tests/package/test_bad_input.py`, which checks every row on the Cython",
        "core and on the pure-Python twin: the call raises the exception shown, its",
        "message contains the fragment (which names the argument), and the structure",
        "is left exactly as it was (same stats, size and task states). A test compares",
        "this page with the table, so they cannot drift; regenerate it with",
        "`python tests/package/test_bad_input.py > docs/bad-input.md`.",
    ]
    for title, cases, _subject in GROUPS:
        lines += ["", f"## {title}", "",
                  "| Entry point | Bad value | Exception | Message contains |",
                  "| --- | --- | --- | --- |"]
        for case in cases:
            message = f"`{case.fragment}`"
            if case.c_fragment:
                message += f" (Cython core: `{case.c_fragment}`)"
            bad = case.bad.replace("|", "\\|")
            lines.append(f"| `{case.entry}` | {bad} | `{case.error.__name__}` | {message} |")
    return "\n".join(lines) + "\n"


def test_the_docs_table_matches_the_tests():
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/bad-input.md is stale: python tests/package/test_bad_input.py > docs/bad-input.md")


if __name__ == "__main__":
    sys.stdout.write(render())
