"""ThreadPoolScheduler reads both its clocks at one boundary (``pysched.pool.clocks``).

One test per behaviour its docstring promises: a clock set back makes time
stand still; a broken clock closes the pool, the call that read it raising;
a pool thread that reads a broken clock goes on with the latest reading
while the pool closes. (A first reading that fails refuses the constructor's
argument: the constructor table in tests/test_threadpool.py.)
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any

import pytest

from pysched import Every, SchedulerClosed

from support.pool import WAIT, Gate

BROKEN = [
    pytest.param(OSError("clock gone"), OSError, id="raises"),
    pytest.param("tick", TypeError, id="not-a-number"),
    pytest.param(math.nan, ValueError, id="nan"),
]


class Readings:
    """A clock that gives ``reading`` (or raises it) on the threads in ``broken_on``; else
    ``fine()``. Set ``broken_on`` to None for every thread."""

    def __init__(self, fine: Any) -> None:
        self.fine = fine
        self.reading: Any = None
        self.broken_on: set[int | None] = set()

    def __call__(self) -> Any:
        if None in self.broken_on or threading.get_ident() in self.broken_on:
            if isinstance(self.reading, BaseException):
                raise self.reading
            return self.reading
        return self.fine()

    def break_on(self, reading: Any, thread: int | None) -> None:
        self.reading = reading
        self.broken_on = {thread}


def test_a_clock_set_back_makes_time_stand_still(make_pool):
    # A plain clock (no wait_until hook: the pool waits in real seconds, and
    # nothing here waits for a deadline to pass).
    now = [100.0]
    pool = make_pool(1, clock=lambda: now[0])
    now[0] = 50.0  # set back by 50 s
    # Time stands at 100: a version due at 90 is past due, and runs now...
    assert pool.schedule("past", 90.0, 0, str, ("ran",)).result(WAIT) == "ran"
    # ...and one due 1 s from now is due 1 s after 100, not after 50.
    later = pool.schedule_in("later", 1.0, 0, print)
    assert pool._core.peek()[0] == 101.0 and not later.done()


@pytest.mark.parametrize("which", ["clock", "wall_clock"])
@pytest.mark.parametrize("broken, error", BROKEN)
def test_a_broken_clock_closes_the_pool_and_the_call_that_read_it_raises(
        make_pool, clock, caplog, which, broken, error):
    readings = Readings(clock if which == "clock" else lambda: 1.7e9 + clock())
    pool = make_pool(1, **{which: readings})
    waiting = pool.schedule("waiting", 50.0, 0, print)
    before = pool.stats()["scheduled"]
    readings.break_on(broken, threading.get_ident())  # only the caller's readings
    match = "clock gone" if error is OSError else rf"{which}\(\)"  # the error names it
    with caplog.at_level(logging.ERROR, logger="pysched"), pytest.raises(error, match=match):
        if which == "clock":
            pool.schedule_in("refused", 1.0, 0, print)
        else:
            pool.schedule_recurring("refused", Every(10), 0, print)
    assert pool.state in ("closing", "closed")
    assert waiting.cancelled() and waiting.cancel_reason == "closed"
    assert pool.stats()["scheduled"] == before  # the refused call added nothing
    assert [r.message for r in caplog.records] == [
        "pysched: the clock failed; closing the scheduler"]
    readings.broken_on = set()
    with pytest.raises(SchedulerClosed):
        pool.submit(print)


@pytest.mark.parametrize("which", ["clock", "wall_clock"])
def test_a_pool_thread_reading_a_broken_clock_goes_on_while_the_pool_closes(
        make_pool, clock, caplog, which):
    readings = Readings(clock if which == "clock" else lambda: 1.7e9 + clock())
    pool = make_pool(1, **{which: readings})
    gate = Gate()
    if which == "clock":  # a worker reads it as the task returns
        running = pool.submit(gate, "ran")
    else:  # a series' wake-up reads it on the worker, before and after its run
        running = pool.schedule_every("tick", 10.0, 0, gate, start_at=10.0)
        clock.wait_for_sleeper(10.0)
        clock.advance(10.0)
    waiting = pool.schedule("waiting", 50.0, 0, print)
    gate.wait_started()
    readings.break_on(OSError("clock gone"), None)  # every thread's readings, from now on
    with caplog.at_level(logging.ERROR, logger="pysched"):
        gate.release()
        assert pool.close(wait=True, timeout=WAIT)
    if which == "clock":
        assert running.result(0) == "ran"  # the task's own result: the worker went on
    else:
        assert running.cancelled() and running.cancel_reason == "closed"
        assert pool.stats()["completed"] == 1  # the run that read the broken clock ended
    assert waiting.cancelled() and waiting.cancel_reason == "closed"
    assert pool.state == "closed"
    assert [r.message for r in caplog.records] == [
        "pysched: the clock failed; closing the scheduler"]  # once, however many readings
