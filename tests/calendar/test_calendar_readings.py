"""Reading the wall and the monotonic clocks together, with a thread paused between reads.

``PausingClocks`` moves one shared time for both clocks; armed, its wall clock
pauses the reading thread (advances the time) right after it was read, as a
thread descheduled between two reads would be. A reading must pair the wall
time with a monotonic time of the same instant, or a wall instant converted
through it (a calendar fire time, an ``Every``'s start) lands late by the pause.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest

from pysched import AsyncScheduler, Every
from pysched.calendar import Reading, read_clocks
from pysched.calendar._readings import PAIR_ATTEMPTS, PAIR_TOLERANCE
from pysched.durable import DurableScheduler
from pysched.durable.memory import MemoryStore
from pysched.pool.calendar_series import PoolCalendar
from pysched.pool.clocks import Clocks

W0 = 1_800_000_000.0
PAUSE = 5.0


class PausingClocks:
    """A monotonic and a wall clock on one time; ``pauses`` wall reads each pause the reader."""

    def __init__(self, advance=None, now=None):
        self.t = 100.0
        self._advance = advance  # moves a FakeClock instead of ``t``, when given
        self._now = now
        self.pauses: list[float] = []
        self.mono_reads = 0

    def mono(self) -> float:
        self.mono_reads += 1
        return self._now() if self._now is not None else self.t

    def wall(self) -> float:
        value = W0 + self.mono()
        self.mono_reads -= 1  # the wall read is not a monotonic read
        if self.pauses:
            pause = self.pauses.pop(0)
            if self._advance is not None:
                self._advance(pause)
            else:
                self.t += pause
        return value


def consistent(reading: Reading) -> bool:
    return reading.wall - reading.mono == W0


def test_a_pause_between_the_reads_is_read_again():
    clocks = PausingClocks()
    clocks.pauses = [PAUSE]
    reading = read_clocks(clocks.wall, clocks.mono)
    assert consistent(reading) and reading.mono == 100.0 + PAUSE


def test_retries_are_bounded_and_keep_the_narrowest_bracket():
    clocks = PausingClocks()
    clocks.pauses = [3.0, 1.0, 2.0] + [4.0] * (PAIR_ATTEMPTS - 3) + [0.0]
    reading = read_clocks(clocks.wall, clocks.mono)
    assert clocks.mono_reads == 2 * PAIR_ATTEMPTS
    # the 1 s pause was the narrowest: its wall time with the monotonic time after it
    assert reading == Reading(W0 + 103.0, 104.0)
    assert reading.wall - reading.mono < W0  # late by the bracket, never early


def test_a_bracket_within_the_tolerance_is_taken_at_once():
    clocks = PausingClocks()
    clocks.pauses = [PAIR_TOLERANCE / 2, 9.0]
    reading = read_clocks(clocks.wall, clocks.mono)
    assert clocks.mono_reads == 2 and reading.mono == 100.0 + PAIR_TOLERANCE / 2


@pytest.mark.parametrize("bad, name", [("wall", "wall_clock()"), ("mono", "clock()")])
def test_a_clock_giving_no_time_is_named(bad, name):
    clocks = PausingClocks()
    wall = (lambda: float("nan")) if bad == "wall" else clocks.wall
    mono = (lambda: "noon") if bad == "mono" else clocks.mono
    with pytest.raises((TypeError, ValueError), match=name.replace("(", r"\(").replace(")", r"\)")):
        read_clocks(wall, mono)


# -- each scheduler reads its clocks paired --------------------------------------------------

def test_the_pool_reads_its_clocks_paired():
    clocks = PausingClocks()
    pool_clocks = Clocks(clocks.wall)
    pool_clocks.bind(clocks.mono)
    calendar = PoolCalendar(pool_clocks)
    clocks.pauses = [PAUSE]
    assert consistent(calendar.read())


def test_the_asyncio_scheduler_reads_its_clocks_paired():
    clocks = PausingClocks()

    class Loop(asyncio.SelectorEventLoop):
        def time(self) -> float:  # the loop's clock, faked
            return clocks.mono()

    async def main():
        sched = AsyncScheduler(wall_clock=clocks.wall)
        sched._runner.bind()
        clocks.pauses = [PAUSE]
        return sched._series.read()

    loop = Loop()
    try:
        assert consistent(loop.run_until_complete(main()))
    finally:
        loop.close()


def test_the_durable_scheduler_reads_its_clocks_paired():
    clocks = PausingClocks()
    with DurableScheduler(MemoryStore(), max_workers=0, clock=clocks.mono,
                          wall_clock=clocks.wall) as sched:
        clocks.pauses = [PAUSE]
        assert consistent(sched._series.read())


def test_an_every_start_is_not_delayed_by_a_pause(make_pool, clock):
    """The series' first fire is at its start on the pool's clock, pause or not."""
    clocks = PausingClocks(advance=clock.advance, now=clock)
    pool = make_pool(wall_clock=clocks.wall)
    start = datetime.fromtimestamp(W0 + 20.0, timezone.utc)  # the pool's clock reads 20 then
    clocks.pauses = [PAUSE]
    handle = pool.schedule_recurring("tick", Every(10, start=start), 0, print)
    assert [f.timestamp() for f in handle.next_fire_times(1)] == [W0 + 20.0]
    clock.wait_for_sleeper(20.0)  # not 25: the pause did not move the anchor
