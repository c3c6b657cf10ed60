"""ThreadPoolScheduler logs each failed run once, on "pysched.pool", with its traceback."""

from __future__ import annotations

import logging
import threading

import pytest

import pysched
from pysched import Every


def boom() -> None:
    raise ZeroDivisionError("no")


def test_a_failed_run_is_logged_once_with_its_traceback(make_pool, caplog):
    pool = make_pool()
    with caplog.at_level(logging.DEBUG, logger="pysched"):
        fut = pool.schedule("b", 0.0, 0, boom)
        assert isinstance(fut.exception(), ZeroDivisionError)
        with pytest.raises(ZeroDivisionError):
            fut.result()
        pool.close(wait=True)
    records = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(records) == 1
    [record] = records
    assert record.name == "pysched.pool"
    assert record.getMessage() == "task 'b' version 1 failed"
    assert record.exc_info is not None and record.exc_info[0] is ZeroDivisionError


def test_a_failed_series_run_is_logged_once(make_pool, clock, caplog):
    pool = make_pool()

    def tick() -> None:
        raise ValueError("each time")

    with caplog.at_level(logging.DEBUG, logger="pysched"):
        pool.schedule_recurring("tick", Every(1.0, start_at=1.0), 0, tick)
        clock.wait_for_sleeper(1.0)
        clock.advance(1.0)
        clock.wait_for_sleeper(2.0)  # the run ended: the next wake-up is waited for
        pool.close(wait=True)
    records = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [(r.name, r.exc_info[0] if r.exc_info else None) for r in records] == \
        [("pysched.pool", ValueError)]


def test_a_run_that_returns_past_its_timeout_is_logged_once_with_no_listener(make_pool, clock,
                                                                               caplog):
    """The book fails such a run itself (fn raised nothing): it is logged all the same."""
    pool = make_pool()
    started = threading.Event()

    def slow() -> str | None:
        token = pysched.current_token()
        started.set()
        token.wait()
        return token.reason  # returns, without raising, once past its timeout

    with caplog.at_level(logging.DEBUG, logger="pysched"):
        fut = pool.schedule("slow", 0.0, 0, slow, timeout=5.0)
        assert started.wait(10)
        clock.wait_for_sleeper(5.0)  # the dispatcher times the run
        clock.advance(5.0)
        assert isinstance(fut.exception(10), pysched.TaskTimeout)
        pool.close(wait=True)
    records = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [(r.name, r.getMessage(), r.exc_info[0] if r.exc_info else None)
            for r in records] == [("pysched.pool", "task 'slow' version 1 failed",
                                   pysched.TaskTimeout)]
