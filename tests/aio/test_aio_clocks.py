"""AsyncScheduler reads loop.time() and its wall clock at one boundary (``pysched.pool.clocks``).

One test per behaviour its docstring promises: a loop time set back makes
time stand still; a broken clock closes the scheduler, the call that read it
raising; a loop callback that reads a broken clock goes on with the latest
reading while the scheduler closes. (A wall clock refused when the scheduler
is made: tests/test_aio_series.py.)
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

import pytest

from pysched import Every, SchedulerClosed

from support.aio import VirtualTimeLoop, run

W0 = 1_800_000_000.0
BROKEN = [
    pytest.param(OSError("clock gone"), OSError, id="raises"),
    pytest.param("tick", TypeError, id="not-a-number"),
    pytest.param(math.nan, ValueError, id="nan"),
]
LOG = "pysched: the clock failed; closing the AsyncScheduler"


class Loop(VirtualTimeLoop):
    """A virtual-time loop whose ``time()`` can be set back or broken."""

    back = 0.0
    broken: Any = None  # a reading to give, or an exception to raise

    def time(self) -> float:
        if isinstance(self.broken, BaseException):
            raise self.broken
        if self.broken is not None:
            return self.broken  # type: ignore[no-any-return]
        return self.now - self.back


class Wall:
    """W0 plus the loop's time, or ``broken`` (given, or raised)."""

    broken: Any = None

    def __call__(self) -> float:
        if isinstance(self.broken, BaseException):
            raise self.broken
        if self.broken is not None:
            return self.broken  # type: ignore[no-any-return]
        return W0 + asyncio.get_running_loop().time()


def break_clock(which: str, broken: Any, wall: Wall) -> None:
    if which == "wall_clock":
        wall.broken = broken
    else:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, Loop)
        loop.broken = broken


def test_a_loop_time_set_back_makes_time_stand_still(make_scheduler):
    async def main():
        loop = asyncio.get_running_loop()
        async with make_scheduler() as s:
            start = loop.now  # type: ignore[attr-defined]
            loop.back = 50.0  # type: ignore[attr-defined]
            # Time stands at ``start``: a version due 10 s before it is past due...
            assert await s.schedule("past", start - 10.0, 0, str, ("ran",)) == "ran"
            ran_at = loop.now  # type: ignore[attr-defined]
            # ...and one due 1 s from now is due 1 s after ``start``, not after start - 50.
            later = s.schedule_in("later", 1.0, 0, print)
            due = s._core.peek()[0]
            later.cancel()
        return ran_at - start, due - start

    assert run(main, Loop) == (0.0, 1.0)


@pytest.mark.parametrize("which", ["wall_clock", "loop.time"])
@pytest.mark.parametrize("broken, error", BROKEN)
def test_a_broken_clock_closes_the_scheduler_and_the_call_that_read_it_raises(
        make_scheduler, caplog, which, broken, error):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        waiting = s.schedule_in("waiting", 50.0, 0, print)
        await asyncio.sleep(0)
        break_clock(which, broken, wall)
        match = "clock gone" if error is OSError else rf"{which}\(\)"  # the error names it
        with pytest.raises(error, match=match):
            if which == "wall_clock":
                s.schedule_recurring("refused", Every(10), 0, print)
            else:
                s.schedule_in("refused", 1.0, 0, print)
        assert s.state in ("closing", "closed") and s.stats()["scheduled"] == 1
        assert waiting.cancelled() and waiting.cancel_reason == "closed"
        wall.broken = asyncio.get_running_loop().broken = None  # type: ignore[attr-defined]
        with pytest.raises(SchedulerClosed):
            s.schedule("after", 0.0, 0, print)
        await s.aclose()

    with caplog.at_level(logging.ERROR, logger="pysched.aio"):
        run(main, Loop)
    assert [r.message for r in caplog.records] == [LOG]


@pytest.mark.parametrize("which", ["wall_clock", "loop.time"])
def test_a_loop_callback_reading_a_broken_clock_goes_on_while_the_scheduler_closes(
        make_scheduler, caplog, which):
    async def main():
        loop = asyncio.get_running_loop()
        unhandled: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _, context: unhandled.append(context))
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        handle = s.schedule_recurring("tick", Every(10), 0, print)
        waiting = s.schedule_in("waiting", 50.0, 0, print)
        await asyncio.sleep(5)
        if which == "wall_clock":  # the series' wake-up, a timer callback, reads it at +10
            wall.broken = OSError("clock gone")
            await asyncio.sleep(10)
        else:  # the pump reads it; broken around the pump only, as the loop reads it too
            loop.call_soon(setattr, loop, "broken", OSError("clock gone"))
            s.schedule("now", 0.0, 0, print)  # asks for a pump, queued after that
            loop.call_soon(setattr, loop, "broken", None)
            await asyncio.sleep(0)
        assert s.state in ("closing", "closed")
        assert waiting.cancelled() and waiting.cancel_reason == "closed" and handle.cancelled
        await s.aclose()
        return unhandled

    with caplog.at_level(logging.ERROR, logger="pysched.aio"):
        assert run(main, Loop) == []  # nothing escaped to the loop's exception handler
    assert [r.message for r in caplog.records] == [LOG]
