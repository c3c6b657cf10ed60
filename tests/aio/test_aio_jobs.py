"""AsyncScheduler.jobs() and describe(): the snapshots match a plain model after any sequence
of schedule, cancel, replace and run, on virtual time; a series' counters and last runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysched import AsyncScheduler, Every
from pysched.jobs import SeriesInfo, TaskInfo

from support.aio import VirtualTimeLoop, run, settle
from support.examples import examples

IDS = st.sampled_from(["a", "b", "c", 7])
OPS = st.lists(st.one_of(
    st.tuples(st.just("schedule"), IDS, st.integers(0, 4), st.integers(-2, 2)),
    st.tuples(st.just("series"), IDS, st.integers(-2, 2)),
    st.tuples(st.just("cancel"), IDS),
    st.tuples(st.just("run"), st.integers(0, 3)),
), max_size=20)


def noop() -> None:
    return None


@settings(max_examples=examples(160), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_jobs_match_a_model_after_any_sequence(impl: Any, ops: list[tuple[Any, ...]]) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with AsyncScheduler(_core_factory=impl.Scheduler) as sched:
            assert len(sched.jobs()) == 0
            model: dict[Any, tuple[Any, ...]] = {}
            for op in ops:
                if op[0] == "schedule":
                    _, task_id, delay, priority = op
                    fut = sched.schedule(task_id, loop.time() + delay, priority, noop)
                    model[task_id] = ("task", loop.time() + delay, priority, fut.version)
                elif op[0] == "series":  # fires far later than any run below
                    _, task_id, priority = op
                    sched.schedule_recurring(task_id, Every(1000.0), priority, noop)
                    model[task_id] = ("series", priority)
                elif op[0] == "cancel":
                    sched.cancel(op[1])
                    model.pop(op[1], None)
                else:
                    await asyncio.sleep(op[1])
                await settle()
                model = {k: v for k, v in model.items()
                         if v[0] == "series" or v[1] > loop.time()}  # the due ones ran
                page = sched.jobs()
                tasks = [j for j in page if isinstance(j, TaskInfo)]
                got = {j.task_id: ("task", j.due, j.priority, j.version) for j in tasks}
                got.update({j.series_id: ("series", j.priority) for j in page
                            if isinstance(j, SeriesInfo)})
                assert got == model
                assert [j.due for j in tasks] == sorted(j.due for j in tasks)  # type: ignore[type-var]
                for task_id, entry in model.items():
                    described = sched.describe(task_id)
                    assert described is not None and described.kind == entry[0]
                assert sched.describe("never") is None
                assert len(sched.jobs(state="pending")) == len(tasks)

    run(main, VirtualTimeLoop)


def test_describe_a_series_after_skipped_and_failed_runs(impl: Any) -> None:
    async def main() -> SeriesInfo:
        loop = asyncio.get_running_loop()
        calls: list[float] = []

        async def body() -> None:
            calls.append(loop.time())
            if len(calls) == 1:
                await asyncio.sleep(2.5)  # fire times 2 and 3 come due meanwhile: skipped
            elif len(calls) == 3:
                raise ValueError("third run broke")

        async with AsyncScheduler(_core_factory=impl.Scheduler, history=10) as sched:
            start = loop.time()
            handle = sched.schedule_recurring("tick", Every(1.0, start_at=start + 1), 5, body,
                                              overlap="skip")
            await asyncio.sleep(5.5)
            handle.pause(note="disk full")
            info = sched.describe("tick")
            assert isinstance(info, SeriesInfo)
            assert [r.fire_time - start for r in info.last_runs] == [5.0, 4.0, 1.0]
            handle.resume()
            resumed = sched.describe("tick")
            assert resumed is not None and resumed.note is None  # type: ignore[union-attr]
            sched.cancel("tick")
            assert sched.describe("tick") is None
            return info

    info = run(main, VirtualTimeLoop)
    assert (info.skipped, info.coalesced, info.late, info.overlapped) == (2, 0, 0, 2)
    assert info.paused and info.note == "disk full" and info.priority == 5
    assert [(r.outcome, r.error) for r in info.last_runs] == [
        ("failed", "ValueError: third run broke"), ("succeeded", None), ("succeeded", None)]
    assert len(info.next_fires) == 10 and info.timeline == "monotonic"


def test_bad_arguments_are_refused(impl: Any) -> None:
    with pytest.raises(ValueError, match="history"):
        AsyncScheduler(history=-1)

    async def main() -> None:
        async with AsyncScheduler(_core_factory=impl.Scheduler) as sched:
            with pytest.raises(ValueError, match="state"):
                sched.jobs(state="done")
            with pytest.raises(TypeError, match="task_id"):
                sched.describe([])  # type: ignore[arg-type]

    run(main, VirtualTimeLoop)
