"""A durable run time is a wall instant a ``datetime`` can hold (years 1 to 9999 UTC):
one beyond is refused by name where it enters, and nothing is stored.

``schedule_in(..., 1e300)`` was accepted and stored, and ``pysched status`` then died
reading it (``OverflowError: timestamp out of range``).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from pysched.durable import Retry

import support.durable as h

UTC = datetime.timezone.utc
YEAR_10000_SOMEWHERE = datetime.datetime(9999, 12, 31, 23, tzinfo=datetime.timezone(
    datetime.timedelta(hours=-5)))  # 04:00 on 10000-01-01 in UTC


@pytest.fixture
def producer(store_spec: dict[str, Any]) -> Iterator[Any]:  # noqa: F811
    """A producer on the store, with a pending row "kept" that no refusal may touch."""
    for make in h.schedulers(store_spec):
        sched = make(max_workers=0)
        sched.schedule_in("kept", 60, 0, h.note)
        yield sched


@pytest.mark.parametrize(("call", "name"), [
    (lambda s: s.schedule_in("t", 1e300, 0, h.note), "delay"),
    (lambda s: s.schedule_in("t", 3e11, 0, h.note), "delay"),  # past year 9999
    (lambda s: s.schedule("t", 1e300, 0, h.note), "run_at"),
    (lambda s: s.schedule("t", -1e300, 0, h.note), "run_at"),
    (lambda s: s.schedule_many([("ok", s.clock(), 0, h.note), ("t", 1e300, 0, h.note)]),
     "run_at"),
    (lambda s: s.schedule_at("t", YEAR_10000_SOMEWHERE, 0, h.note), "when"),
], ids=["in-1e300", "in-3e11", "at-1e300", "at-minus-1e300", "many", "at-year-10000"])
def test_a_run_time_beyond_any_date_is_refused_by_name_and_nothing_is_stored(
        producer: Any, call: Any, name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name} .* beyond any date"):
        call(producer)
    assert producer.row("t") is None and producer.row("ok") is None
    assert producer.row("kept")["state"] == "pending"


def test_the_last_instants_of_year_9999_are_kept_and_read_back_as_dates(producer: Any) -> None:
    when = datetime.datetime(9999, 12, 31, 22, tzinfo=UTC)
    producer.schedule_at("late", when, 0, h.note)
    stored = datetime.datetime.fromtimestamp(producer.row("late")["run_at"], UTC)
    assert abs(stored - when) < datetime.timedelta(milliseconds=1)
    delay = datetime.datetime(9999, 12, 1, tzinfo=UTC).timestamp() - producer.timebase.to_wall(
        producer.clock())
    producer.schedule_in("later", delay, 0, h.note)
    assert datetime.datetime.fromtimestamp(producer.row("later")["run_at"], UTC).year == 9999


def test_a_retry_policy_whose_backoff_would_leave_the_dates_is_refused() -> None:
    with pytest.raises(ValueError, match="^max_backoff must be at most"):
        Retry(3, backoff=1.0, max_backoff=1e300)
    Retry(3, backoff=1e300, max_backoff=3600.0)  # capped by max_backoff: fine
