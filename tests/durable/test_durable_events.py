"""DurableScheduler's task events (pysched.events), as one process sees them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

import pytest

import pysched.events as ev
from pysched.durable import DurableScheduler, Retry, TaskRegistry
from pysched.durable._events import DurableEvents
from pysched.durable.records import Claim
from pysched.events import TaskEvent

REG = TaskRegistry()


@REG.task(name="ok", queue="mail")
def ok() -> int:
    return 1


@REG.task(name="flaky", retry=Retry(2, backoff=0.01, jitter=False))
def flaky() -> None:
    raise ValueError("again")


class Recorder:
    def __init__(self) -> None:
        self.events: list[TaskEvent] = []
        self.lock = threading.Lock()

    def __call__(self, event: Any) -> None:
        if isinstance(event, TaskEvent):
            with self.lock:
                self.events.append(event)

    def of(self, task_id: str) -> list[tuple[str, int | None, int | None]]:
        with self.lock:
            return [(e.kind, e.version, e.attempt) for e in self.events if e.task_id == task_id]


def test_runs_retries_and_ends_are_told_with_their_fields() -> None:
    seen = Recorder()
    with DurableScheduler(None, registry=REG, max_workers=1, listeners=[seen]) as sched:
        assert sched.schedule_in("a", 0, 0, ok).result(10) == 1
        with pytest.raises(ValueError):
            sched.schedule_in("b", 0, 0, flaky).result(10)
        sched.schedule_in("c", 100, 0, ok)
        sched.schedule_in("c", 200, 0, ok)
        sched.cancel("c")
        owner = sched.owner
    assert seen.of("a") == [("scheduled", 1, None), ("started", 1, 1), ("succeeded", 1, 1)]
    scheduled, started, succeeded = [e for e in seen.events if e.task_id == "a"]
    assert (scheduled.name, scheduled.queue, scheduled.scheduler) == ("ok", "mail", "durable")
    assert started.run_at == scheduled.run_at and started.lateness is not None
    assert started.worker == owner and succeeded.duration is not None
    assert seen.of("b") == [("scheduled", 1, None), ("started", 1, 1), ("failed", 1, 1),
                            ("retried", 1, 1), ("started", 1, 2), ("failed", 1, 2)]
    retried = next(e for e in seen.events if e.kind == "retried")
    failed = next(e for e in seen.events if e.kind == "failed")
    assert retried.next_attempt is not None and retried.next_attempt > failed.started_at
    assert (failed.error_type, failed.error) == ("ValueError", "again")
    assert failed.traceback is not None and "in flaky" in failed.traceback
    assert seen.of("c") == [("scheduled", 1, None), ("scheduled", 2, None),
                            ("replaced", 1, None), ("cancelled", 2, None)]
    assert [e.reason for e in seen.events if e.task_id == "c" and e.reason] == \
        ["replaced", "cancelled"]


class HeldExecutor(Executor):
    """Runs nothing until ``release()``: a claim waits, as for a busy pool."""

    def __init__(self) -> None:
        self.jobs: list[Callable[[], Any]] = []
        self.submitted = threading.Event()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.jobs.append(lambda: fn(*args, **kwargs))
        self.submitted.set()
        return Future()

    def release(self) -> None:
        for job in self.jobs:
            job()


def test_a_claim_cancelled_before_it_starts_is_handed_back() -> None:
    seen = Recorder()
    held = HeldExecutor()
    with DurableScheduler(None, registry=REG, max_workers=1, executor=held,
                          listeners=[seen]) as sched:
        sched.schedule_in("a", 0, 0, ok)
        assert held.submitted.wait(10)
        sched.cancel("a")
        held.release()  # runs the claim here: it is handed back, never started
    assert [(k, v) for k, v, _ in seen.of("a")] == [("scheduled", 1), ("cancelled", 1),
                                                    ("handed_back", 1)]
    assert seen.events[-1].reason == "not_started"


def test_a_lost_lease_is_told_by_name() -> None:
    listeners = ev.Listeners(logging.getLogger("pysched.durable"))
    seen = Recorder()
    listeners.add(seen, frozenset({ev.LEASE_LOST}))
    told = DurableEvents(listeners, "me", REG, lambda: 5.0)
    from pysched.durable._inflight import RunningTask
    claim = Claim("x", 3, 1.0, 0, "ok", "{}", 2, "tok", 1)
    told.lease_lost([RunningTask(claim)])
    [event] = seen.events
    assert (event.kind, event.task_id, event.version, event.name, event.queue, event.attempt,
            event.worker) == ("lease_lost", "x", 3, "ok", "mail", 2, "me")


def test_kinds_filter_and_a_raising_listener(caplog: pytest.LogCaptureFixture) -> None:
    failures, every = Recorder(), Recorder()

    def broken(event: Any) -> None:
        raise RuntimeError("listener bug")

    with caplog.at_level(logging.ERROR, logger="pysched.durable"), \
            DurableScheduler(None, registry=REG, max_workers=1) as sched:
        sched.add_listener(failures, kinds=["failed"])
        sched.add_listener(broken, kinds=["succeeded"])
        sched.add_listener(every)
        sched.schedule_in("a", 0, 0, ok).result(10)
        with pytest.raises(ValueError):
            sched.schedule_in("b", 0, 0, flaky).result(10)
        with pytest.raises(ValueError, match="unknown event kinds"):
            sched.add_listener(print, kinds=["nope"])
        sched.remove_listener(failures)
        with pytest.raises(KeyError):
            sched.remove_listener(failures)
    assert [(e.kind, e.task_id, e.attempt) for e in failures.events] == \
        [("failed", "b", 1), ("failed", "b", 2)]
    assert [k for k, _, _ in every.of("a")] == ["scheduled", "started", "succeeded"]
    assert len([r for r in caplog.records if "listener raised" in r.getMessage()]) == 1


class Counted(TaskEvent):
    made = 0

    def __new__(cls, *args: Any, **kwargs: Any) -> Counted:
        Counted.made += 1
        return super().__new__(cls, *args, **kwargs)


def test_no_event_is_built_without_a_listener(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ev, "TaskEvent", Counted)
    Counted.made = 0
    with DurableScheduler(None, registry=REG, max_workers=1) as sched:
        for i in range(5):
            sched.schedule_in(f"t{i}", 0, 0, ok).result(10)
        sched.schedule_in("c", 100, 0, ok)
        sched.cancel("c")
        assert Counted.made == 0
        sched.add_listener(lambda event: None, kinds=["retried"])
        sched.schedule_in("t", 0, 0, ok).result(10)
        assert Counted.made == 0


def test_a_failed_run_is_logged_once_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    @REG.task(name="boom_once")
    def boom_once() -> None:
        raise ZeroDivisionError("no")

    with caplog.at_level(logging.DEBUG), \
            DurableScheduler(None, registry=REG, max_workers=1) as sched:
        fut = sched.schedule_in("b", 0, 0, boom_once)
        with pytest.raises(ZeroDivisionError):
            fut.result(10)
        assert isinstance(fut.exception(), ZeroDivisionError)
    records = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [(r.name, r.exc_info[0] if r.exc_info else None) for r in records] == \
        [("pysched.durable", ZeroDivisionError)]
