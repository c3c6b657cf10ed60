"""A reading of the two clocks a series is driven by, and the detection of wall-clock jumps."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .._validate import check_time

__all__ = ["PAIR_ATTEMPTS", "PAIR_TOLERANCE", "ClockWatch", "Jump", "Reading", "pair_readings",
           "read_clocks"]

# A wall reading is paired with the monotonic clock only when two monotonic reads
# around it are at most this far apart (seconds), tried at most this many times.
PAIR_TOLERANCE = 1e-3
PAIR_ATTEMPTS = 5


@dataclass(frozen=True)
class Reading:
    """The wall clock (POSIX seconds) and the monotonic clock, read together."""

    wall: float
    mono: float


def read_clocks(wall_clock: Callable[[], float], clock: Callable[[], float]) -> Reading:
    """Both clocks as one ``Reading`` (see ``pair_readings``), each reading checked here.

    A clock that raises, or gives no finite number, raises here, naming it.
    """
    return pair_readings(lambda: check_time(wall_clock(), "wall_clock()"),
                         lambda: check_time(clock(), "clock()"))


def pair_readings(wall: Callable[[], float], mono: Callable[[], float]) -> Reading:
    """Both clocks as one ``Reading``: the wall clock read between two monotonic reads.

    ``wall`` and ``mono`` give checked readings (finite floats). A thread
    paused between two plain reads would pair the wall time with a
    monotonic time taken after the pause: converted through it, every wall
    instant (a calendar fire time, an ``Every``'s start) would land late by
    the pause. So the wall read is bracketed, and retried while the
    bracket is wider than ``PAIR_TOLERANCE``, at most ``PAIR_ATTEMPTS`` times
    (then the narrowest bracket is kept). The wall time is paired with the
    bracket's second monotonic read, which is never before the wall read:
    wall instants converted to the monotonic clock may come late by the
    bracket's width, never early.
    """
    best: Reading | None = None
    best_width = math.inf
    for _ in range(PAIR_ATTEMPTS):
        before = mono()
        wall_time = wall()
        after = mono()
        width = after - before
        if width < best_width:
            best, best_width = Reading(wall_time, after), width
        if width <= PAIR_TOLERANCE:
            break
    assert best is not None  # the first attempt's width is finite: it is taken
    return best


@dataclass(frozen=True)
class Jump:
    """The wall clock moved by ``size`` seconds more than the monotonic clock.

    ``size`` > 0: set forward, or a suspend (the monotonic clock stands still
    while the machine sleeps); < 0: set back. ``expected_wall`` is where the
    wall clock would be without the jump: wall times after it and up to the
    reading were jumped over.
    """

    size: float
    expected_wall: float
    at: Reading


class ClockWatch:
    """Compares the two clocks at each wake-up; one per scheduler.

    Between two readings the wall clock should advance as the monotonic one
    does. NTP slews it by at most 500 ppm, so a difference above 1 s or 0.1 %
    of the elapsed time, whichever is larger, is a jump.
    """

    __slots__ = ("_last",)

    TOLERANCE = 1.0
    RATE = 0.001

    def __init__(self, first: Reading) -> None:
        self._last = first

    def observe(self, now: Reading) -> Jump | None:
        """Take a new reading; the jump since the last one, if any."""
        last, self._last = self._last, now
        elapsed = now.mono - last.mono
        expected = last.wall + elapsed
        size = now.wall - expected
        if abs(size) <= max(self.TOLERANCE, self.RATE * abs(elapsed)):
            return None
        return Jump(size, expected, now)
