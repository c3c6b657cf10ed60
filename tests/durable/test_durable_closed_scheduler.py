"""A closed DurableScheduler answers every public call that needs its store with
SchedulerClosed, on every store (the store it opened is closed with it), and the calls
that need no store keep working; so do its series handles and its Futures.

The table below names every public method and property: one added without a row here
fails ``test_every_public_name_has_a_row``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pytest

from pysched import Every, SchedulerClosed
from pysched.durable import DurableFuture, DurableScheduler, DurableSeriesHandle

import support.durable as h

LATER = 3600.0
WHEN = datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)

# name -> what to call on a closed scheduler ``s`` and what it gives: SchedulerClosed
# (raised), or a check of the value it returns.
Refused = SchedulerClosed
SCHEDULER: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "schedule": (lambda s: s.schedule("n", s.clock(), 0, h.note), Refused),
    "schedule_in": (lambda s: s.schedule_in("n", 1, 0, h.note), Refused),
    "schedule_at": (lambda s: s.schedule_at("n", WHEN, 0, h.note), Refused),
    "schedule_many": (lambda s: s.schedule_many([("n", s.clock(), 0, h.note)]), Refused),
    "schedule_recurring": (lambda s: s.schedule_recurring("r2", Every(60), 0, h.note),
                           Refused),
    "cancel": (lambda s: s.cancel("later"), Refused),
    "retry": (lambda s: s.retry("later"), Refused),
    "row": (lambda s: s.row("later"), Refused),
    "jobs": (lambda s: s.jobs(), Refused),
    "describe": (lambda s: s.describe("later"), Refused),
    "stats": (lambda s: s.stats()["state"], "closed"),
    "add_listener": (lambda s: s.add_listener(print), None),
    "remove_listener": (lambda s: (s.add_listener(repr), s.remove_listener(repr))[1], None),
    "close": (lambda s: s.close(), True),
    "closed": (lambda s: s.closed, True),
    "state": (lambda s: s.state, "closed"),
    "clock": (lambda s: isinstance(s.clock(), float), True),
}
HANDLE: dict[str, tuple[Callable[[Any], Any], Any]] = {
    "pause": (lambda r: r.pause(), Refused),
    "resume": (lambda r: r.resume(), Refused),
    "cancel": (lambda r: r.cancel(), Refused),
    "cancelled": (lambda r: r.cancelled, True),
    "paused": (lambda r: r.paused, False),
    "next_fire_times": (lambda r: r.next_fire_times(3), []),
    # A SeriesHandle's: the series' id, and no Future (a durable series' runs have theirs).
    "task_id": (lambda r: r.task_id, "r"),
    "future": (lambda r: r.future, None),
}
# Public names that are not calls on the scheduler's state: the objects it was built with.
ATTRIBUTES = {"store", "owner", "registry", "timebase", "series_id", "generation"}


def public_names(cls: type) -> set[str]:
    own = {name for klass in cls.__mro__ if klass is not object for name in vars(klass)}
    return {name for name in own if not name.startswith("_")} - ATTRIBUTES


def test_every_public_name_has_a_row() -> None:
    assert public_names(DurableScheduler) == set(SCHEDULER)
    assert public_names(DurableSeriesHandle) == set(HANDLE)


@pytest.fixture
def closed(store_spec: dict[str, Any]) -> tuple[Any, Any, Any]:  # noqa: F811
    """A scheduler that opened its store (SQLite, PostgreSQL) from its path or URL, closed,
    with a pending row, a series and the Future of that row."""
    h.reset()
    if store_spec["kind"] == "memory":
        sched = DurableScheduler(store_spec["store"], max_workers=1, poll_interval=0.05)
    else:
        sched = DurableScheduler(store_spec["target"], table=store_spec["table"],
                                 max_workers=1, poll_interval=0.05)
    future = sched.schedule_in("later", LATER, 0, h.note)
    series = sched.schedule_recurring("r", Every(60), 0, h.note)
    assert sched.close(timeout=60)
    return sched, series, future


CALLS = [("scheduler", name) for name in sorted(SCHEDULER)] + [
    ("series handle", name) for name in sorted(HANDLE)]


@pytest.mark.parametrize(("target", "name"), CALLS)
def test_a_closed_scheduler_and_its_series_handles_refuse_what_needs_the_store(
        closed: tuple[Any, Any, Any], target: str, name: str) -> None:
    sched, series, _ = closed
    call, expected = (SCHEDULER if target == "scheduler" else HANDLE)[name]
    on = sched if target == "scheduler" else series
    if expected is Refused:
        with pytest.raises(SchedulerClosed):
            call(on)
    else:
        assert call(on) == expected


def test_a_closed_schedulers_future_cannot_be_cancelled(closed: tuple[Any, Any, Any]) -> None:
    _, _, future = closed
    assert isinstance(future, DurableFuture)
    assert future.cancel() is False
    with pytest.raises(SchedulerClosed):
        future.result(0)


def test_a_scheduler_given_an_open_store_refuses_the_same_once_closed(
        store_spec: dict[str, Any]) -> None:  # noqa: F811
    """Its store is still open (the caller's to close): the refusal is the scheduler's."""
    store = h.open_spec(store_spec)
    try:
        sched = DurableScheduler(store, max_workers=0)
        sched.schedule_in("later", LATER, 0, h.note)
        sched.close()
        with pytest.raises(SchedulerClosed):
            sched.cancel("later")
        assert store.get("later")["state"] == "pending"  # type: ignore[index]
    finally:
        if store_spec["kind"] != "memory":
            store.close()

