"""DurableScheduler.jobs() and describe() on each store: the shapes of pysched.jobs, keyset
pages of series then tasks, filters, pause notes, and hostile rows read without dying."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pysched import Cron, Every
from pysched.durable import DurableScheduler
from pysched.jobs import SeriesInfo, TaskInfo, job_dict

import support.durable as h


@pytest.fixture
def make(store_spec: dict[str, Any]) -> Iterator[Callable[..., DurableScheduler]]:
    yield from h.schedulers(store_spec)


def ids(page: Any) -> list[str]:
    return [j.task_id if isinstance(j, TaskInfo) else j.series_id for j in page]


def test_pages_list_series_then_tasks_in_due_order(make: Callable[..., DurableScheduler]
                                                   ) -> None:
    sched = make(max_workers=0)
    for i in range(7):
        sched.schedule_in(f"t{i}", 1000.0 + i, i % 3, h.note, queue="q" if i % 2 else None)
    sched.schedule_recurring("nightly", Cron("0 3 * * *"), 4, h.note)
    sched.schedule_recurring("often", Every(60), 0, h.note)
    seen: list[str] = []
    after = None
    while True:
        page = sched.jobs(limit=3, after=after)
        assert len(page) <= 3
        seen += ids(page)
        if page.next is None:
            break
        after = page.next
    assert seen == ["nightly", "often"] + [f"t{i}" for i in range(7)]
    task = sched.describe("t4")
    assert isinstance(task, TaskInfo)
    assert (task.state, task.priority, task.version, task.attempts, task.last_outcome) == (
        "pending", 1, 1, 0, None)
    assert task.name == "note" and task.queue == "default"
    assert task.due is not None and abs(task.due - (sched.clock() + 1004.0)) < 5
    assert task.due_wall is not None and task.due_wall.tzinfo is not None
    series = sched.describe("nightly")
    assert isinstance(series, SeriesInfo)
    assert series.state == "active" and series.trigger is not None and series.priority == 4
    assert series.next_fires and all(f % 86400 == 3 * 3600 for f in series.next_fires)
    assert sched.describe("nobody") is None
    assert ids(sched.jobs(queue="q")) == ["t1", "t3", "t5"]
    assert ids(sched.jobs(name="note", state="pending", limit=2)) == ["t0", "t1"]
    assert ids(sched.jobs(state="active")) == ["nightly", "often"]
    assert ids(sched.jobs(state="completed")) == []
    job_dict(series), job_dict(task)  # JSON data, whatever the fields


def test_a_pause_note_is_described(make: Callable[..., DurableScheduler]) -> None:
    sched = make(max_workers=0)
    handle = sched.schedule_recurring("nightly", Cron("0 3 * * *"), 0, h.note)
    handle.pause(note="moving the database")
    info = sched.describe("nightly")
    assert isinstance(info, SeriesInfo)
    assert info.paused and info.state == "paused" and info.note == "moving the database"
    assert ids(sched.jobs(state="paused")) == ["nightly"]
    handle.resume()
    info = sched.describe("nightly")
    assert isinstance(info, SeriesInfo) and not info.paused and info.note is None


def test_outcomes_and_errors_are_described(make: Callable[..., DurableScheduler]) -> None:
    sched = make(max_workers=1)
    sched.schedule_in("bad", 0.0, 0, h.fail, ("no such thing",))
    sched.schedule_in("good", 0.0, 0, h.note, (1,))
    h.wait_for(lambda: all(getattr(sched.describe(t), "state", None) in ("failed", "completed")
                           for t in ("bad", "good")), what="both outcomes")
    bad, good = sched.describe("bad"), sched.describe("good")
    assert isinstance(bad, TaskInfo) and isinstance(good, TaskInfo)
    assert bad.last_outcome == "failed" and bad.error == "ValueError: no such thing"
    assert bad.attempts == 1 and good.last_outcome == "completed" and good.error is None
    assert ids(sched.jobs(state="failed")) == ["bad"]


def test_rows_no_snapshot_field_fits_are_described_without_dying(
        make: Callable[..., DurableScheduler], store_spec: dict[str, Any]) -> None:
    sched = make(max_workers=0)
    h.put_raw(sched.store, store_spec, task_id="far", run_at=1e300)
    h.put_raw(sched.store, store_spec, task_id="huge", run_at=1e300, priority=2**40,
              version=2**40)
    far = sched.describe("far")
    assert isinstance(far, TaskInfo) and far.due_wall is None and far.state == "pending"
    assert ids(sched.jobs()) == ["far", "huge"]
    for job in sched.jobs():
        job_dict(job)


def test_bad_arguments_are_refused_by_name(make: Callable[..., DurableScheduler]) -> None:
    sched = make(max_workers=0)
    for kwargs, name in (({"limit": 0}, "limit"), ({"limit": 501}, "limit"),
                         ({"after": "nope"}, "after"), ({"after": "t:???"}, "after")):
        with pytest.raises(ValueError, match=name):
            sched.jobs(**kwargs)
    with pytest.raises(ValueError, match="task_id"):
        sched.describe("\x00")
    with pytest.raises(ValueError, match="queue"):
        sched.jobs(queue="\x00")
