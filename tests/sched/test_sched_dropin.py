"""pysched.sched against the standard library's sched, on both cores.

A differential test drives both with the same random programs (fake clock,
recording delayfunc) and compares every result; the rest pins down the parts
a random program reaches rarely: the int64 edges of the priority mapping, the
move to exact mode, thread-safety, and the wake-ups that sched lacks.
"""

from __future__ import annotations

import datetime
import math
import sched as std_sched
import threading
import time
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysched.sched

from support.examples import examples
from support.impl import NO_EXTENSIONS, compiled_module, pure_namespace

WAIT = 60.0  # seconds a test waits for a thread before calling it stuck; never reached when correct


@pytest.fixture
def sched_cls(impl):
    """pysched.sched.scheduler on the core that ``impl`` names."""
    return type("scheduler", (pysched.sched.scheduler,), {"_core_factory": impl.Scheduler})


class Boom(Exception):
    pass


class Runaway(Exception):
    pass


class Harness:
    """One scheduler on a fake clock whose delayfunc logs and advances the clock."""

    def __init__(self, cls):
        self.now = 0
        self.log = []
        self.events = []
        self.s = cls(timefunc=lambda: self.now, delayfunc=self.delay)

    def delay(self, seconds):
        if len(self.log) > 2_000:  # a run() that never ends, in both schedulers alike:
            raise Runaway  # e.g. delay 0.0 when time - now rounds to 0 (2**53 + 1 - 2.0**53)
        self.log.append(("delay", type(seconds), seconds))
        self.now += seconds

    def ran(self, label):
        self.log.append(("ran", label))

    def boom(self, label):
        self.log.append(("boom", label))
        raise Boom(label)

    def enter_later(self, label, at):
        self.log.append(("ran", label))
        self.events.append(self.s.enterabs(at, 0, self.ran, (f"{label}+",)))

    def apply(self, op):
        """Run ``op``; return what it gave back, comparable across schedulers."""
        name, *args = op
        s = self.s
        try:
            if name in ("enterabs", "enter"):
                when, priority = args
                fn = s.enterabs if name == "enterabs" else s.enter
                self.events.append(fn(when, priority, self.ran, (len(self.events),)))
                return fields(self.events[-1])
            if name == "boom":
                self.events.append(s.enterabs(args[0], 0, self.boom, (len(self.events),)))
                return fields(self.events[-1])
            if name == "enter_later":
                when, at = args
                self.events.append(s.enterabs(when, 0, self.enter_later, (len(self.events), at)))
                return fields(self.events[-1])
            if name == "cancel":
                if not self.events:
                    return None
                s.cancel(self.events[args[0] % len(self.events)])
                return "cancelled"
            if name == "advance":
                self.now += args[0]
                return None
            if name == "run":
                delay = s.run(blocking=args[0])
                return type(delay), delay  # 5 and 5.0 are equal, and not the same answer
        except (Boom, Runaway, ValueError) as exc:
            return type(exc).__name__
        raise AssertionError(op)

    def observe(self):
        return [fields(e) for e in self.s.queue], self.s.empty(), list(self.log), self.now


def fields(event):
    """An event without its action (a bound method of one harness or the other)."""
    return (event.time, event.priority, event.sequence, event.argument, event.kwargs)


# Ints and floats stay in the core; the rest sends the scheduler to exact mode.
CORE_TIMES = st.one_of(st.integers(-3, 12), st.sampled_from([0.5, 2.25, 7.0, -1.5]))
EXACT_TIMES = st.sampled_from([2**53 + 1, 2**60, Fraction(1, 3), Fraction(7, 2), math.inf])
TIMES = st.one_of(CORE_TIMES, CORE_TIMES, CORE_TIMES, EXACT_TIMES)
PRIORITIES = st.one_of(
    st.integers(-2, 2),
    st.sampled_from([-(2**63), 2**63 - 1, 2**63, -(2**63) - 1, 0.5, -1.5, True]),
)
OPS = st.one_of(
    st.tuples(st.sampled_from(["enterabs", "enter"]), TIMES, PRIORITIES),
    st.tuples(st.just("boom"), CORE_TIMES),
    st.tuples(st.just("enter_later"), CORE_TIMES, TIMES),
    st.tuples(st.just("cancel"), st.integers(0, 50)),
    st.tuples(st.just("advance"),
              st.one_of(st.integers(0, 5), st.sampled_from([0.75, Fraction(1, 2)]))),
    st.tuples(st.just("run"), st.booleans()),
)


# The `impl` fixture's cases as a parameter (hypothesis and function-scoped
# fixtures do not mix): same ids, and `c` skips the same way on a pure install.
CORES = [pytest.param("c", id="c", marks=pytest.mark.skipif(
             NO_EXTENSIONS, reason="PYSCHED_NO_EXTENSIONS is set: pure install")),
         pytest.param("py", id="py")]


@pytest.mark.parametrize("which", CORES)
@settings(max_examples=examples(150), deadline=None)
@given(ops=st.lists(OPS, max_size=40))
def test_same_results_as_the_standard_library(which, ops):
    core = compiled_module().Scheduler if which == "c" else pure_namespace().Scheduler
    ours_cls = type("scheduler", (pysched.sched.scheduler,), {"_core_factory": core})
    theirs, ours = Harness(std_sched.scheduler), Harness(ours_cls)
    for op in ops:
        assert ours.apply(op) == theirs.apply(op), op
        assert ours.observe() == theirs.observe(), op


# -- ordering and the priority mapping ------------------------------------------


def run_order(s):
    order = []
    for event in s.queue:
        s.cancel(event)
        s.enterabs(event.time, event.priority, order.append, (event.argument[0],))
    s.run()
    return order


def test_lower_priority_number_first_then_fifo(sched_cls):
    s = sched_cls(timefunc=lambda: 5, delayfunc=lambda d: None)
    for label, priority in [("b", 5), ("a", -5), ("c", 5), ("z", 2**63 - 1), ("first", -(2**63))]:
        s.enterabs(1, priority, None, (label,))
    assert [e.argument[0] for e in s.queue] == ["first", "a", "b", "c", "z"]
    assert run_order(s) == ["first", "a", "b", "c", "z"]
    assert s._core is not None, "int64 priorities stay in the core"


@pytest.mark.parametrize("odd", [2**63, -(2**63) - 1, 0.5, Fraction(1, 2)])
def test_a_priority_the_core_cannot_hold_moves_to_exact_mode_in_order(sched_cls, odd):
    s = sched_cls(timefunc=lambda: 5, delayfunc=lambda d: None)
    s.enterabs(1, 1, None, ("one",))
    s.enterabs(1, 0, None, ("zero",))
    s.enterabs(0, 9, None, ("earliest",))
    assert s._core is not None
    s.enterabs(1, odd, None, ("odd",))
    assert s._core is None
    by_priority = sorted([(1, "one"), (0, "zero"), (odd, "odd")], key=lambda t: t[0])
    expected = ["earliest"] + [label for _, label in by_priority]
    assert [e.argument[0] for e in s.queue] == expected
    assert run_order(s) == expected


def test_any_comparable_priority_works_as_in_sched(sched_cls):
    s = sched_cls(timefunc=lambda: 5, delayfunc=lambda d: None)
    ran = []
    for priority in ["b", "a", "c", "a"]:
        s.enterabs(1, priority, ran.append, (priority,))
    s.run()
    assert ran == ["a", "a", "b", "c"]


def test_times_beyond_float_precision_keep_their_order(sched_cls):
    # 2**53 + 1 and 2**53 + 2 are one float apart from 2**53 only in exact mode.
    s = sched_cls(timefunc=lambda: 0, delayfunc=lambda d: None)
    s.enterabs(2**53 + 2, 0, None, ("c",))
    s.enterabs(2**53, 0, None, ("a",))
    s.enterabs(2**53 + 1, 0, None, ("b",))
    assert [e.argument[0] for e in s.queue] == ["a", "b", "c"]


def test_a_nanosecond_clock_past_float_precision_never_runs_early(sched_cls):
    clock = [2**54 - 1]  # rounds to 2**54 as a float
    s = sched_cls(timefunc=lambda: clock[0], delayfunc=lambda d: clock.__setitem__(0, clock[0] + d))
    ran = []
    s.enterabs(2**54, 0, ran.append, ("due",))
    assert s.run(blocking=False) == 1
    assert ran == []
    s.run()
    assert ran == ["due"] and clock[0] == 2**54


def test_datetime_times_and_timedelta_delays_work_as_in_sched(sched_cls):
    start = datetime.datetime(2026, 1, 1)
    clock = [start]
    def delay(d):  # sched passes 0 between events, as it does here
        clock[0] += d or datetime.timedelta(0)

    s = sched_cls(timefunc=lambda: clock[0], delayfunc=delay)
    ran = []
    s.enter(datetime.timedelta(hours=2), 0, ran.append, ("two",))
    s.enter(datetime.timedelta(hours=1), 0, ran.append, ("one",))
    assert s.run(blocking=False) == datetime.timedelta(hours=1)
    s.run()
    assert ran == ["one", "two"] and clock[0] == start + datetime.timedelta(hours=2)


def test_run_returns_an_int_delay_for_int_times_and_clock_as_sched_does(sched_cls):
    s = sched_cls(timefunc=lambda: 3, delayfunc=lambda d: None)
    s.enterabs(10, 0, None)
    assert type(s.run(blocking=False)) is int and s.run(blocking=False) == 7
    s.enterabs(9.5, 0, None)
    delay = s.run(blocking=False)
    assert type(delay) is float and delay == 6.5


def test_an_int_head_beside_float_events_gives_an_int_delay_as_sched_does(sched_cls):
    delays = {}
    for cls in (std_sched.scheduler, sched_cls):
        s = cls(timefunc=lambda: 0, delayfunc=lambda d: None)
        s.enterabs(7.5, 0, None)
        s.enterabs(5, 1, None)
        delays[cls] = s.run(blocking=False)
    assert [(type(d), d) for d in delays.values()] == [(int, 5), (int, 5)]


def test_the_exact_heap_stays_bounded_under_cancels(sched_cls):
    s = sched_cls(timefunc=lambda: 0, delayfunc=lambda d: None)
    events = [s.enterabs(Fraction(i, 3), 0, None) for i in range(1000)]
    for event in events[:990]:
        s.cancel(event)
    assert len(s._heap) <= max(2 * 10, 64)
    assert s.queue == events[990:]


# -- events and cancel --------------------------------------------------------


def test_events_are_the_standard_library_event_type(sched_cls):
    s = sched_cls()
    event = s.enter(5, 1, print, ("x",), {"sep": ""})
    assert type(event) is std_sched.Event
    assert event.priority == 1 and event.sequence == 0 and event.kwargs == {"sep": ""}
    assert s.enter(5, 1, print).kwargs == {}
    assert s.enter(5, 1, print).kwargs is not s.enter(5, 1, print).kwargs


@pytest.mark.parametrize("bad", [None, 3, "event", (1, 2, 3), (0, 0, [0], None, (), {}), object()])
def test_cancel_of_something_not_queued_raises_value_error_and_changes_nothing(sched_cls, bad):
    s = sched_cls()
    event = s.enterabs(5, 1, print)
    with pytest.raises(ValueError, match="not in the queue"):
        s.cancel(bad)
    assert s.queue == [event]
    s._core._check()


def test_cancel_twice_or_after_running_raises_value_error(sched_cls):
    s = sched_cls(timefunc=lambda: 0, delayfunc=lambda d: None)
    ran = s.enterabs(0, 0, lambda: None)
    later = s.enterabs(1, 0, lambda: None)
    assert s.run(blocking=False) == 1
    with pytest.raises(ValueError):
        s.cancel(ran)
    s.cancel(later)
    with pytest.raises(ValueError):
        s.cancel(later)
    assert s.empty()


def test_an_equal_tuple_cancels_the_event_as_in_sched(sched_cls):
    s = sched_cls()
    event = s.enterabs(5, 1, print)
    s.cancel(tuple(event))
    assert s.empty()


def test_an_action_that_raises_propagates_and_its_event_is_gone(sched_cls):
    s = sched_cls(timefunc=lambda: 0, delayfunc=lambda d: None)
    ran = []
    s.enterabs(0, 0, ran.append, ("before",))
    s.enterabs(0, 1, Boom)  # calling an exception class returns it; raise it instead:
    s.cancel(s.queue[1])
    s.enterabs(0, 1, (lambda: (_ for _ in ()).throw(Boom("x"))))
    s.enterabs(0, 2, ran.append, ("after",))
    with pytest.raises(Boom):
        s.run()
    assert ran == ["before"] and len(s.queue) == 1
    s.run()
    assert ran == ["before", "after"] and s.empty()


def test_incomparable_times_raise_type_error_as_in_sched(sched_cls):
    s = sched_cls()
    s.enterabs(1, 0, print)
    with pytest.raises(TypeError):
        s.enterabs("late", 0, print)


@pytest.mark.parametrize("bad", [
    pytest.param(("late", 0), id="time"),
    pytest.param((1, "low"), id="priority"),
])
@pytest.mark.parametrize("queued", [1, 7], ids=["one-queued", "several-queued"])
def test_an_incomparable_event_is_refused_and_leaves_the_queue_usable(
        sched_cls: type[pysched.sched.scheduler], bad: tuple[Any, Any], queued: int) -> None:
    ran: list[Any] = []
    s = sched_cls(timefunc=lambda: 10, delayfunc=lambda seconds: None)
    for n in range(queued):
        s.enterabs(1, n, ran.append, (n,))
    before = s.queue
    with pytest.raises(TypeError):
        s.enterabs(*bad, ran.append, ("bad",))
    assert s.queue == before
    # Only comparable events are queued, so later ones enter and run in order.
    s.enterabs(2, 0, ran.append, ("later",))
    s.enterabs(0, 0, ran.append, ("first",))
    assert s.run(blocking=False) is None
    assert ran == ["first", *range(queued), "later"] and s.empty()


# -- threads ----------------------------------------------------------------------


class WaitSpy(threading.Condition):
    """The run() wait, with signals when it starts and counts of notifications."""

    def __init__(self, lock):
        super().__init__(lock)
        self.waiting = threading.Event()
        self.notified = 0

    def wait(self, timeout=None):
        self.waiting.set()
        return super().wait(timeout)

    def notify_all(self):
        self.notified += 1
        super().notify_all()


def start_runner(s):
    errors = []

    def target():
        try:
            s.run()
        except BaseException as exc:  # pragma: no cover - reported by the test
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, errors


def test_a_sleeping_run_wakes_for_an_earlier_event_and_returns_when_emptied(sched_cls):
    s = sched_cls()  # time.sleep: the interruptible wait
    s._wakeup = spy = WaitSpy(s._lock)
    far = s.enter(3600, 0, print)
    thread, errors = start_runner(s)
    assert spy.waiting.wait(WAIT), "run() never waited"
    s.enter(7200, 0, print)  # later than the one it waits for: no wake-up needed
    assert spy.notified == 0
    done = threading.Event()
    s.enter(0, 0, done.set)
    assert done.wait(WAIT), "run() slept through an earlier event (CPython issue 81355)"
    s.cancel(far)
    s.cancel(s.queue[0])
    thread.join(WAIT)
    assert not thread.is_alive() and not errors and s.empty()


def test_a_custom_delayfunc_is_called_as_sched_calls_it(sched_cls):
    calls = []
    s = sched_cls(timefunc=lambda: 0, delayfunc=calls.append)
    s.enterabs(0, 0, lambda: None)
    s.enterabs(0, 0, lambda: None)
    s.run()
    assert calls == [0, 0]


@pytest.mark.parametrize("seed", range(3))
def test_concurrent_enter_cancel_and_run_lose_and_repeat_nothing(sched_cls, seed):
    # Every event either runs exactly once or is cancelled; never both, never neither.
    s = sched_cls(timefunc=lambda: 100)  # after every event's time
    ran = []
    producers, per_producer = 4, 300
    cancelled = [[] for _ in range(producers)]
    start = threading.Barrier(producers + 1)

    def produce(k):
        start.wait()
        for i in range(per_producer):
            event = s.enterabs(i % 7 + seed, i % 3, ran.append, ((k, i),))
            if i % 2:
                try:
                    s.cancel(event)
                except ValueError:  # it already ran
                    continue
                cancelled[k].append((k, i))

    threads = [threading.Thread(target=produce, args=(k,)) for k in range(producers)]
    for thread in threads:
        thread.start()
    start.wait()
    while any(t.is_alive() for t in threads) or not s.empty():
        s.run(blocking=False)  # everything is due at once: nothing to wait for
    for thread in threads:
        thread.join(WAIT)
    gone = [e for c in cancelled for e in c]
    assert len(ran) == len(set(ran))
    assert not set(ran) & set(gone)
    assert sorted(ran + gone) == [(k, i) for k in range(producers) for i in range(per_producer)]
    if s._core is not None:
        s._core._check()
        assert len(s._core) == 0


def test_run_does_not_hold_the_lock_while_waiting_or_acting(sched_cls):
    s = sched_cls(timefunc=time.monotonic, delayfunc=lambda d: None)
    seen = []

    def action():
        # Another thread can take the lock while an action runs.
        t = threading.Thread(target=lambda: seen.append(s.empty()))
        t.start()
        t.join(WAIT)

    s.enterabs(0, 0, action)
    s.run()
    assert seen == [True]


def test_the_module_doctests_pass():
    import doctest

    result = doctest.testmod(pysched.sched)
    assert result.attempted > 0 and result.failed == 0
