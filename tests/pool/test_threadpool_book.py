"""PoolBook without threads: the start rule and who resolves what, step by step.

The book is driven by hand here (claim, then a cancel, replacement or close,
then start), which pins the orders that threads reach only by chance.
"""

from __future__ import annotations

from typing import Any

import pytest

from pysched.pool.book import NoWakeups
from pysched.pool.future import TaskFuture
from pysched.pool.pool_book import PoolBook, PoolVersion, end_futures


class Owner(NoWakeups):
    """PoolOwner and Wakeups that record the states the book moved to."""

    def __init__(self) -> None:
        self.states: list[str] = []

    def state_changed(self, state: str) -> None:
        self.states.append(state)

    def cancel_future(self, fut: TaskFuture) -> bool:
        raise AssertionError("not used")

    def token_for(self, run: PoolVersion) -> Any:
        raise AssertionError("not used")


@pytest.fixture
def book(impl: Any) -> PoolBook:
    return PoolBook(impl.Scheduler(), 2, 0.0, None, None, 16, Owner())


def add(book: PoolBook, task_id: str, run: PoolVersion) -> PoolVersion:
    ended: list[PoolVersion] = []
    book.add(task_id, 0.0, 0, run, 0.0, ended)
    end_futures(ended)
    return run


def schedule(book: PoolBook, task_id: str, fn: Any = print) -> TaskFuture:
    run = add(book, task_id, PoolVersion(book.wakeups, fn))  # type: ignore[arg-type]
    assert run.future is not None and run.future.task_id == task_id
    return run.future


def claimed(book: PoolBook) -> PoolVersion:
    work = book.claim(0.0)
    assert isinstance(work, PoolVersion), work
    return work


@pytest.mark.parametrize("how", ["cancel", "future.cancel", "replace"])
def test_a_claimed_version_ended_before_its_start_never_starts(book, how):
    fut = schedule(book, "a")
    run = claimed(book)
    assert run.future is fut
    ended: list[PoolVersion] = []
    if how == "cancel":
        found, started = book.cancel("a", "cancelled", ended)
        assert found and started is None  # nothing started: no token to set
    elif how == "future.cancel":
        assert book.cancel_future(fut, ended) == (True, run)
    else:
        newer = schedule(book, "a")
        assert not newer.done()
    end_futures(ended)
    assert fut.cancelled()
    assert fut.cancel_reason == ("replaced" if how == "replace" else "cancelled")
    assert book.start(run) is False
    failure, resolves = book.finish(run, False, 0.0, 0.0, None, ended)
    assert not resolves and failure is None
    stats = book.counts.as_dict()
    assert stats["replaced" if how == "replace" else "cancelled"] == 1
    assert book.claimed == 0 and fut.task_id not in book.running
    book.core._check()


def test_a_started_version_only_gets_its_token(book):
    fut = schedule(book, "a")
    run = claimed(book)
    assert book.start(run) and fut.running()
    ended: list[PoolVersion] = []
    found, started = book.cancel("a", "cancelled", ended)
    assert found and started is run and ended == []
    assert book.cancel_future(fut, ended) == (False, run) and not fut.done()
    failure, resolves = book.finish(run, True, 0.0, 0.0, None, ended)
    assert resolves and failure is None
    assert book.counts.completed == 1


def test_a_future_cancelled_right_after_it_was_added_says_why(book):
    fut = schedule(book, "a")
    ended: list[PoolVersion] = []
    assert book.cancel_future(fut, ended) == (True, None)
    end_futures(ended)
    assert fut.cancelled() and fut.cancel_reason == "cancelled"


def test_close_ends_pending_versions_with_reason_closed_and_lets_claimed_ones_run(book):
    first = schedule(book, "a")
    second = schedule(book, "b")
    run = claimed(book)
    ended: list[PoolVersion] = []
    book.close(ended)
    end_futures(ended)
    other = second if run.future is first else first
    assert other.cancelled() and other.cancel_reason == "closed"
    assert book.start(run) is True


class StopOnError:
    """The least a series record is to the book (``pysched.pool.recurring.Recurrence``)."""

    on_error = "stop"
    priority = 0

    def __init__(self) -> None:
        self.stopped = False
        self.fired = True

    def next_run(self, end: float) -> tuple[float, int, int]:
        raise AssertionError("no run of this series ends in these tests")


def series(book: PoolBook, task_id: str) -> PoolVersion:
    return add(book, task_id, PoolVersion(book.wakeups, print,  # type: ignore[arg-type]
                                          series=StopOnError()))


def test_a_series_stopped_during_its_run_is_cancelled_by_the_stopper(book):
    record = series(book, "s")
    run = claimed(book)
    assert run is record and book.start(run)
    ended: list[PoolVersion] = []
    found, started = book.cancel("s", "cancelled", ended)
    assert found and started is run
    end_futures(ended)
    assert run.future.cancelled() and run.fn is print  # the worker may be calling it
    after: list[PoolVersion] = []
    failure, resolves = book.finish(run, True, 0.0, 0.0, None, after)
    assert not resolves and failure is None and after == []


def test_a_series_stopped_between_claim_and_start_never_starts(book):
    record = series(book, "s")
    run = claimed(book)
    ended: list[PoolVersion] = []
    found, started = book.cancel("s", "cancelled", ended)
    assert found and started is None
    end_futures(ended)
    assert run.future.cancelled()
    assert book.start(run) is False
    failure, resolves = book.finish(run, False, 0.0, 0.0, None, ended)
    assert not resolves and failure is None and record.in_run is False


def test_a_run_that_stops_its_series_leaves_the_future_to_its_worker(book):
    record = series(book, "s")
    run = claimed(book)
    assert book.start(run)
    failure = ValueError("boom")
    got, resolves = book.finish(run, True, 0.0, 0.0, failure, [])
    assert got is failure and resolves
    assert run.future.running()  # settled for a cancel(): only the worker resolves it now
    assert book.cancel_future(run.future, []) is None and record.series.stopped
