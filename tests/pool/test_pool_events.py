"""ThreadPoolScheduler's task events (pysched.events) and its log of failed runs."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysched
import pysched.events as ev
from pysched import Every
from pysched.events import TaskEvent

from support.pool import Gate
from support.task_events import CountedEvents


def boom() -> None:
    raise ZeroDivisionError("no")


def ok() -> int:
    return 1


class Recorder:
    """A listener that keeps the task events, thread-safely."""

    def __init__(self) -> None:
        self.events: list[TaskEvent] = []
        self._lock = threading.Lock()

    def __call__(self, event: Any) -> None:
        if isinstance(event, TaskEvent):
            with self._lock:
                self.events.append(event)

    def of(self, task_id: Any) -> list[tuple[str, int | None]]:
        return [(e.kind, e.version) for e in self.events if e.task_id == task_id]


def test_a_run_is_scheduled_started_and_succeeded_with_its_fields(make_pool, clock):
    pool = make_pool()
    seen = Recorder()
    pool.add_listener(seen)
    clock.advance(1.0)
    pool.schedule("a", 1.0, 0, ok).result()
    assert seen.of("a") == [("scheduled", 1), ("started", 1), ("succeeded", 1)]
    scheduled, started, succeeded = seen.events
    assert (scheduled.name, scheduled.scheduler, scheduled.run_at, scheduled.queue) == \
        ("ok", "pool", 1.0, None)
    assert (started.run_at, started.started_at, started.lateness, started.attempt) == \
        (1.0, 1.0, 0.0, 1)
    assert started.worker is not None and started.worker.startswith("pysched-worker-")
    assert succeeded.duration == 0.0 and succeeded.worker == started.worker
    assert succeeded.error_type is None and all(e.at > 0 for e in seen.events)


def test_a_failed_run_carries_its_exception_and_traceback(make_pool):
    pool = make_pool()
    seen = Recorder()
    pool.add_listener(seen)
    fut = pool.schedule("b", 0.0, 0, boom)
    with pytest.raises(ZeroDivisionError):
        fut.result()
    assert seen.of("b") == [("scheduled", 1), ("started", 1), ("failed", 1)]
    failed = seen.events[-1]
    assert (failed.error_type, failed.error, failed.name) == ("ZeroDivisionError", "no", "boom")
    assert failed.traceback is not None and "in boom" in failed.traceback


def test_replaced_cancelled_evicted_and_closed_versions_say_why(make_pool):
    pool = make_pool(max_pending=1, overflow="evict_lowest")
    seen = Recorder()
    pool.add_listener(seen)
    pool.schedule("x", 50.0, 0, ok)
    pool.schedule("x", 60.0, 0, ok)  # replaces version 1
    pool.cancel("x")
    pool.schedule("low", 50.0, 0, ok)
    pool.schedule("high", 50.0, 5, ok)  # evicts "low"
    pool.close(wait=True)
    # The new version is scheduled first; then the one it replaced is told of.
    assert seen.of("x") == [("scheduled", 1), ("scheduled", 2), ("replaced", 1),
                            ("cancelled", 2)]
    assert seen.of("low") == [("scheduled", 1), ("evicted", 1)]  # after "high" is scheduled
    assert seen.of("high") == [("scheduled", 1), ("cancelled", 1)]
    reasons = [(e.task_id, e.kind, e.reason) for e in seen.events if e.reason is not None]
    assert reasons == [("x", "replaced", "replaced"), ("x", "cancelled", "cancelled"),
                       ("low", "evicted", "evicted"), ("high", "cancelled", "closed")]


def test_a_cancelled_future_tells_once(make_pool):
    pool = make_pool()
    seen = Recorder()
    pool.add_listener(seen)
    fut = pool.schedule("f", 10.0, 0, ok)
    assert fut.cancel() and fut.cancel()
    pool.cancel("f")
    assert seen.of("f") == [("scheduled", 1), ("cancelled", 1)]


def test_kinds_filter_what_a_listener_gets(make_pool):
    pool = make_pool()
    failures, starts = Recorder(), Recorder()
    pool.add_listener(failures, kinds=["failed"])
    pool.add_listener(starts, kinds={ev.STARTED, "skipped"})
    pool.schedule("a", 0.0, 0, ok).result()
    with pytest.raises(ZeroDivisionError):
        pool.schedule("b", 0.0, 0, boom).result()
    assert [(e.kind, e.task_id) for e in failures.events] == [("failed", "b")]
    assert [(e.kind, e.task_id) for e in starts.events] == [("started", "a"), ("started", "b")]
    pool.remove_listener(failures)
    with pytest.raises(ZeroDivisionError):
        pool.schedule("c", 0.0, 0, boom).result()
    assert len(failures.events) == 1


def test_bad_kinds_and_listeners_are_refused_by_name(make_pool):
    pool = make_pool()
    with pytest.raises(ValueError, match="kinds has unknown event kinds 'nope'"):
        pool.add_listener(print, kinds=["started", "nope"])
    with pytest.raises(TypeError, match="kinds must be an iterable"):
        pool.add_listener(print, kinds="started")
    with pytest.raises(TypeError, match="fn must be callable"):
        pool.add_listener(42)  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        pool.remove_listener(print)  # nothing was added


def test_a_raising_listener_is_logged_and_the_others_still_run(make_pool, caplog):
    pool = make_pool()
    seen = Recorder()

    def broken(event: Any) -> None:
        raise RuntimeError("listener bug")

    pool.add_listener(broken, kinds=ev.TASK_KINDS)
    pool.add_listener(seen)
    with caplog.at_level(logging.ERROR, logger="pysched.pool"):
        assert pool.schedule("a", 0.0, 0, ok).result() == 1
    assert seen.of("a") == [("scheduled", 1), ("started", 1), ("succeeded", 1)]
    raised = [r for r in caplog.records if r.name == "pysched.pool"]
    assert len(raised) == 3 and all("listener raised" in r.getMessage() for r in raised)
    assert all(r.exc_info and r.exc_info[0] is RuntimeError for r in raised)


def test_no_event_is_built_for_kinds_nobody_wants(make_pool, monkeypatch):
    counted = CountedEvents()
    monkeypatch.setattr(ev, "new_event", counted)
    pool = make_pool()
    for i in range(20):
        pool.schedule(i, 0.0, 0, ok).result()
    pool.schedule("gone", 9.0, 0, ok).cancel()
    assert counted.made == 0
    pool.add_listener(lambda event: None, kinds=["failed", "evicted"])
    for i in range(20):
        pool.schedule(i, 0.0, 0, ok).result()
    pool.schedule("gone", 9.0, 0, ok).cancel()
    assert counted.made == 0
    with pytest.raises(ZeroDivisionError):
        pool.schedule("b", 0.0, 0, boom).result()
    assert counted.made == 1


def test_a_listener_added_while_a_task_runs_hears_its_end(make_pool):
    pool = make_pool()
    seen = Recorder()
    gate = Gate()
    fut = pool.schedule("a", 0.0, 0, gate)
    gate.wait_started()
    pool.add_listener(seen)
    gate.release()
    fut.result()
    assert seen.of("a") == [("succeeded", 1)]
    assert seen.events[0].started_at is not None and seen.events[0].duration is not None


def test_a_series_run_is_started_then_succeeded_or_failed(make_pool, clock):
    pool = make_pool()
    seen = Recorder()
    pool.add_listener(seen)
    runs: list[int] = []
    ran = threading.Semaphore(0)

    def tick() -> None:
        runs.append(1)
        ran.release()
        if len(runs) == 2:
            raise ValueError("second")

    handle = pool.schedule_recurring("tick", Every(1.0, start_at=1.0), 0, tick)
    for k in range(1, 4):
        clock.wait_for_sleeper(float(k))
        clock.advance(1.0)
        assert ran.acquire(timeout=10)
    clock.wait_for_sleeper(4.0)  # the third run finished: the next wake-up is waited for
    handle.cancel()
    pool.close(wait=True)
    kinds = [e.kind for e in seen.events if e.task_id == "tick"]
    assert kinds[:7] == ["scheduled", "started", "succeeded", "started", "failed", "started",
                         "succeeded"]
    assert kinds[-1] == "cancelled" and all(e.name == "tick" for e in seen.events)


# A version's events: scheduled, then started and succeeded or failed, or one end unstarted.
ENDS = {"replaced", "cancelled", "evicted"}


def check_lifecycles(events: list[TaskEvent]) -> None:
    """Each version's events form one lifecycle; a task id whose versions all ended starts
    again from version 1, so a (task id, version) may have several, one after another."""
    by_version: dict[tuple[Any, Any], list[list[str]]] = {}
    for e in events:
        lives = by_version.setdefault((e.task_id, e.version), [])
        if e.kind == "scheduled":
            lives.append([])
        assert lives, ("an event before its version was scheduled", e)
        lives[-1].append(e.kind)
    for version, lives in by_version.items():
        for kinds in lives:
            rest = kinds[1:]
            assert rest in (["started", "succeeded"], ["started", "failed"]) or \
                (len(rest) == 1 and rest[0] in ENDS), (version, kinds)


OPS = st.lists(st.one_of(
    st.tuples(st.just("schedule"), st.sampled_from("abc"), st.booleans(), st.booleans(),
              st.integers(0, 3)),
    st.tuples(st.just("cancel"), st.sampled_from("abc")),
    st.tuples(st.just("advance"))), max_size=25)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_every_version_has_one_lifecycle(make_pool, clock, ops):
    pool = make_pool(max_workers=2, max_pending=3, overflow="evict_lowest")
    seen = Recorder()
    pool.add_listener(seen)
    futures = []
    for op in ops:
        if op[0] == "schedule":
            _, task_id, due_now, raises, priority = op
            futures.append(pool.schedule(task_id, clock() + (0.0 if due_now else 1.0), priority,
                                         boom if raises else ok))
        elif op[0] == "cancel":
            pool.cancel(op[1])
        else:
            clock.advance(1.0)
    pool.close(wait=True)
    assert all(f.done() for f in futures)
    check_lifecycles(seen.events)
    assert sum(e.kind == "scheduled" for e in seen.events) == len(futures)


@pytest.mark.parametrize("kinds", [None, ["failed"]])
@pytest.mark.parametrize("raises", [False, True])
def test_a_run_past_its_timeout_is_failed_with_the_timeout(make_pool, clock, kinds, raises):
    pool = make_pool()
    seen = Recorder()
    pool.add_listener(seen, kinds=kinds)
    started = threading.Event()

    def body() -> str | None:
        token = pysched.current_token()
        started.set()
        token.wait()
        if raises:
            raise ValueError("stopped")
        return token.reason

    fut = pool.schedule("slow", 0.0, 0, body, timeout=5.0)
    assert started.wait(10)
    clock.wait_for_sleeper(5.0)  # the dispatcher times the run
    clock.advance(5.0)
    assert isinstance(fut.exception(10), pysched.TaskTimeout)
    failed = seen.events[-1]
    assert (failed.kind, failed.error_type, failed.error) == \
        ("failed", "TaskTimeout", str(fut.exception()))
    assert failed.duration == 5.0 and failed.lateness == 0.0
    if raises:  # what fn raised, told by its traceback
        assert failed.traceback is not None and "ValueError: stopped" in failed.traceback
    else:
        assert failed.traceback is None
    assert [e.kind for e in seen.events] == \
        (["failed"] if kinds else ["scheduled", "started", "failed"])
