"""A reading of the two clocks a series is driven by, and the detection of wall-clock jumps."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ClockWatch", "Jump", "Reading"]


@dataclass(frozen=True)
class Reading:
    """The wall clock (POSIX seconds) and the monotonic clock, read together."""

    wall: float
    mono: float


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
