"""PoolBook without threads: the start rule and who resolves what, step by step.

The book is driven by hand here (claim, then a cancel, replacement or close,
then start), which pins the orders that threads reach only by chance.
"""

from __future__ import annotations

from typing import Any

import pytest

from pysched.pool.book import NoWakeups, PoolBook, end_futures
from pysched.pool.future import TaskFuture
from pysched.pool.recurring import Recurrence


class Owner(NoWakeups):
    """FutureOwner and Wakeups that record the states the book moved to."""

    def __init__(self) -> None:
        self.states: list[str] = []

    def state_changed(self, state: str) -> None:
        self.states.append(state)

    def cancel_future(self, fut: TaskFuture) -> bool:
        raise AssertionError("not used")

    def token_for(self, fut: TaskFuture) -> Any:
        raise AssertionError("not used")


@pytest.fixture
def book(impl: Any) -> PoolBook:
    return PoolBook(impl.Scheduler(), 2, 0.0, None, None, 16, Owner())


def schedule(book: PoolBook, task_id: str, fn: Any = print) -> TaskFuture:
    fut = TaskFuture(book.wakeups, fn)  # type: ignore[arg-type]
    fut._task_id = task_id
    ended: list[TaskFuture] = []
    book.add(task_id, 0.0, 0, fut, 0.0, ended)
    end_futures(ended)
    return fut


def claimed(book: PoolBook) -> tuple[Any, TaskFuture]:
    work = book.claim(0.0)
    assert isinstance(work, tuple), work
    return work


@pytest.mark.parametrize("how", ["cancel", "future.cancel", "replace"])
def test_a_claimed_version_ended_before_its_start_never_starts(book, how):
    fut = schedule(book, "a")
    task, got = claimed(book)
    assert got is fut
    ended: list[TaskFuture] = []
    if how == "cancel":
        found, started = book.cancel("a", "cancelled", ended)
        assert found and started is None  # nothing started: no token to set
    elif how == "future.cancel":
        assert book.cancel_future(fut, ended) is True
    else:
        newer = schedule(book, "a")
        assert not newer.done()
    end_futures(ended)
    assert fut.cancelled()
    assert fut.cancel_reason == ("replaced" if how == "replace" else "cancelled")
    assert book.start(fut) is False
    failure, owns = book.finish(task, fut, False, 0.0, 0.0, None, ended)
    assert not owns and failure is None
    stats = book.counts.as_dict()
    assert stats["replaced" if how == "replace" else "cancelled"] == 1
    assert book.claimed == 0 and fut.task_id not in book.running
    book.core._check()


def test_a_started_version_only_gets_its_token(book):
    fut = schedule(book, "a")
    task, _ = claimed(book)
    assert book.start(fut) and fut.running()
    ended: list[TaskFuture] = []
    found, started = book.cancel("a", "cancelled", ended)
    assert found and started is fut and ended == []
    assert book.cancel_future(fut, ended) is False and not fut.done()
    failure, owns = book.finish(task, fut, True, 0.0, 0.0, None, ended)
    assert owns and failure is None
    assert book.counts.completed == 1


def test_a_future_cancelled_right_after_it_was_added_says_why(book):
    fut = schedule(book, "a")
    ended: list[TaskFuture] = []
    assert book.cancel_future(fut, ended) is True
    end_futures(ended)
    assert fut.cancelled() and fut.cancel_reason == "cancelled"


def test_close_ends_pending_versions_with_reason_closed_and_lets_claimed_ones_run(book):
    first = schedule(book, "a")
    second = schedule(book, "b")
    task, got = claimed(book)
    ended: list[TaskFuture] = []
    book.close(ended)
    end_futures(ended)
    other = second if got is first else first
    assert other.cancelled() and other.cancel_reason == "closed"
    assert book.start(got) is True


def series_future(book: PoolBook, task_id: str) -> TaskFuture:
    fut = TaskFuture(book.wakeups, print)  # type: ignore[arg-type]
    fut._task_id = task_id
    fut._series = Recurrence("stop", 0)
    book.add(task_id, 0.0, 0, fut, 0.0, [])
    return fut


def test_a_series_stopped_during_its_run_is_released_once_by_its_worker(book):
    fut = series_future(book, "s")
    task, _ = claimed(book)
    assert book.start(fut)
    ended: list[TaskFuture] = []
    found, started = book.cancel("s", "cancelled", ended)
    assert found and started is fut
    end_futures(ended)
    assert fut.cancelled() and fut._fn is not None  # the worker may be calling it
    after: list[TaskFuture] = []
    failure, owns = book.finish(task, fut, True, 0.0, 0.0, None, after)
    assert owns and failure is None and after == []


def test_a_series_stopped_between_claim_and_start_is_released_by_the_stopper(book):
    fut = series_future(book, "s")
    task, _ = claimed(book)
    ended: list[TaskFuture] = []
    found, started = book.cancel("s", "cancelled", ended)
    assert found and started is None
    end_futures(ended)
    assert fut.cancelled() and fut._fn is None
    assert book.start(fut) is False
    failure, owns = book.finish(task, fut, False, 0.0, 0.0, None, ended)
    assert not owns and failure is None
