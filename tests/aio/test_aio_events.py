"""AsyncScheduler's task events (pysched.events)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysched.events as ev
from pysched import Every
from pysched.events import TaskEvent

from support.aio import VirtualTimeLoop, run
from support.task_events import CountedEvents


def ok() -> int:
    return 1


async def later(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "done"


async def boom() -> None:
    raise ZeroDivisionError("no")


class Recorder:
    def __init__(self) -> None:
        self.events: list[TaskEvent] = []

    def __call__(self, event: Any) -> None:
        if isinstance(event, TaskEvent):
            self.events.append(event)

    def of(self, task_id: Any) -> list[tuple[str, int | None]]:
        return [(e.kind, e.version) for e in self.events if e.task_id == task_id]


def on_virtual(main: Any) -> Any:
    return run(main, VirtualTimeLoop)


def test_each_kind_in_order_with_its_fields(make_scheduler):
    async def main() -> Recorder:
        s = make_scheduler()
        seen = Recorder()
        s.add_listener(seen)
        t0 = asyncio.get_running_loop().time()
        assert await s.schedule("a", t0 + 1.0, 0, later, (2.0,)) == "done"
        with pytest.raises(ZeroDivisionError):
            await s.schedule("b", t0 + 5.0, 0, boom)
        s.schedule("c", t0 + 50.0, 0, ok)
        s.schedule("c", t0 + 60.0, 0, ok)
        s.cancel("c")
        s.schedule("d", t0 + 50.0, 0, ok)
        long = s.schedule("e", t0 + 5.0, 0, later, (100.0,))
        await asyncio.sleep(1.0)
        long.cancel()
        await s.aclose()
        return seen

    seen = on_virtual(main)
    assert seen.of("a") == [("scheduled", 1), ("started", 1), ("succeeded", 1)]
    scheduled, started, succeeded = seen.events[:3]
    assert (scheduled.name, scheduled.scheduler, scheduled.run_at) == \
        ("later", "asyncio", started.run_at)
    assert started.lateness == pytest.approx(0.0, abs=1e-6) and started.attempt == 1
    assert succeeded.duration == pytest.approx(2.0, abs=1e-6) and succeeded.worker is None
    assert seen.of("b") == [("scheduled", 1), ("started", 1), ("failed", 1)]
    failed = [e for e in seen.events if e.kind == "failed"][0]
    assert (failed.error_type, failed.error) == ("ZeroDivisionError", "no")
    assert failed.traceback is not None and "in boom" in failed.traceback
    assert seen.of("c") == [("scheduled", 1), ("replaced", 1), ("scheduled", 2),
                            ("cancelled", 2)]
    assert seen.of("d") == [("scheduled", 1), ("cancelled", 1)]
    assert seen.of("e") == [("scheduled", 1), ("started", 1), ("cancelled", 1)]
    reasons = [(e.task_id, e.reason) for e in seen.events if e.reason is not None]
    # e's Task is cancelled as asked, and ends on a later step of the loop than close.
    assert reasons == [("c", "replaced"), ("c", "cancelled"), ("d", "closed"),
                       ("e", "cancelled")]


def test_kinds_filter_and_a_raising_listener_is_logged(make_scheduler, caplog):
    async def main() -> tuple[Recorder, Recorder]:
        s = make_scheduler()
        failures, every = Recorder(), Recorder()

        def broken(event: Any) -> None:
            raise RuntimeError("listener bug")

        s.add_listener(failures, kinds=[ev.FAILED])
        s.add_listener(broken, kinds=[ev.SUCCEEDED])
        s.add_listener(every)
        await s.schedule_in("a", 0, 0, ok)
        with pytest.raises(ZeroDivisionError):
            await s.schedule_in("b", 0, 0, boom)
        s.remove_listener(failures)
        with pytest.raises(ZeroDivisionError):
            await s.schedule_in("c", 0, 0, boom)
        with pytest.raises(ValueError, match="unknown event kinds 'nope'"):
            s.add_listener(print, kinds=["nope"])
        await s.aclose()
        return failures, every

    with caplog.at_level(logging.ERROR, logger="pysched.aio"):
        failures, every = on_virtual(main)
    assert [(e.kind, e.task_id) for e in failures.events] == [("failed", "b")]
    assert every.of("a") == [("scheduled", 1), ("started", 1), ("succeeded", 1)]
    raised = [r for r in caplog.records if "listener raised" in r.getMessage()]
    assert len(raised) == 1 and raised[0].name == "pysched.aio"


def test_no_event_is_built_without_a_listener_for_its_kind(make_scheduler, monkeypatch):
    counted = CountedEvents()
    monkeypatch.setattr(ev, "new_event", counted)

    async def main() -> int:
        s = make_scheduler()
        for i in range(10):
            await s.schedule_in(i, 0, 0, ok)
        s.schedule_in("x", 5, 0, ok).cancel()
        before = counted.made
        s.add_listener(lambda event: None, kinds=["failed"])
        for i in range(10):
            await s.schedule_in(i, 0, 0, later, (0.1,))
        s.schedule_in("x", 5, 0, ok).cancel()
        with pytest.raises(ZeroDivisionError):
            await s.schedule_in("b", 0, 0, boom)
        await s.aclose()
        return before

    assert on_virtual(main) == 0
    assert counted.made == 1


def test_a_listener_added_mid_run_hears_the_end_without_a_start(make_scheduler):
    async def main() -> Recorder:
        s = make_scheduler()
        seen = Recorder()
        fut = s.schedule_in("a", 0, 0, later, (5.0,))
        await asyncio.sleep(1.0)
        s.add_listener(seen)
        await fut
        await s.aclose()
        return seen

    seen = on_virtual(main)
    assert seen.of("a") == [("succeeded", 1)]
    assert seen.events[0].duration is None  # its start was not read: nobody listened


def test_series_runs_carry_the_series_id(make_scheduler):
    async def main() -> Recorder:
        s = make_scheduler()
        seen = Recorder()
        s.add_listener(seen, kinds=ev.TASK_KINDS)
        handle = s.schedule_recurring("tick", Every(10), 0, ok)
        await asyncio.sleep(25)
        handle.cancel()
        await s.aclose()
        return seen

    seen = on_virtual(main)
    runs = [(e.kind, e.name) for e in seen.events if e.kind in ("started", "succeeded")]
    assert runs == [("started", "tick"), ("succeeded", "tick")] * 2
    assert {e.task_id for e in seen.events} == {"tick"}


ENDS = {"replaced", "cancelled", "evicted"}


@settings(max_examples=30, deadline=None)
@given(ops=st.lists(st.one_of(
    st.tuples(st.just("schedule"), st.sampled_from("abc"), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("cancel"), st.sampled_from("abc")),
    st.tuples(st.just("sleep"), st.integers(0, 3))), max_size=25))
def test_every_version_has_one_lifecycle(ops):
    from pysched import AsyncScheduler

    async def main() -> tuple[Recorder, int]:
        s = AsyncScheduler()
        seen = Recorder()
        s.add_listener(seen)
        count = 0
        for op in ops:
            if op[0] == "schedule":
                s.schedule_in(op[1], op[2], 0, boom if op[3] else later, () if op[3] else (1,))
                count += 1
            elif op[0] == "cancel":
                s.cancel(op[1])
            else:
                await asyncio.sleep(op[1])
        await asyncio.sleep(10)
        await s.aclose()
        return seen, count

    seen, count = on_virtual(main)
    lives: dict[Any, list[list[str]]] = {}
    for e in seen.events:
        key = (e.task_id, e.version)
        if e.kind == "scheduled":
            lives.setdefault(key, []).append([])
        lives[key][-1].append(e.kind)
    for key, runs in lives.items():
        for kinds in runs:
            rest = kinds[1:]
            assert rest in (["started", "succeeded"], ["started", "failed"],
                            ["started", "cancelled"]) or \
                (len(rest) == 1 and rest[0] in ENDS), (key, kinds)
    assert sum(e.kind == "scheduled" for e in seen.events) == count
