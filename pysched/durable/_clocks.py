"""The durable scheduler's two clocks, read at one boundary, and what a failing reading does.

``Clocks`` reads the user's ``clock`` (monotonic: ``run_at``, waits, the local
deadlines of leases) and ``wall_clock`` (the start-up time map, the fire
times of recurring series) through ``pysched._clock.CheckedClock``: every
reading past it is a finite float, and a ``clock`` reading is never below one
already taken. Nothing else in ``pysched.durable`` checks a reading.

The rule for a reading that fails (it raises; it is no finite number; a
``clock`` reading goes back): it raises, in the thread that read it, the
clock's own exception or TypeError/ValueError naming the clock, and the unit
of work that thread was doing fails, nothing more:

- a round of a job thread (claiming, recurring series, heartbeat,
  housekeeping) ends, logged, and is tried again after that thread's backoff
  or poll; the claiming round puts the entries it took back on the local heap;
- a run (a claimed version, or a fire time of a series) fails with that
  error: the version is failed and its Future raises the error; the fire
  time counts as a failed run of its series, which goes on or stops by its
  ``on_error``;
- a call (the constructor, ``schedule_in``, ``schedule_recurring``, a series
  handle's ``resume`` or ``next_fire_times``) raises it; what it would have
  stored is not stored.
"""

from __future__ import annotations

from collections.abc import Callable

from .._clock import CheckedClock
from ..calendar import Reading, read_clocks

__all__ = ["Clocks"]


class Clocks:
    """``mono()`` reads ``clock``, ``wall()`` reads ``wall_clock``, ``read()`` both as one
    ``Reading``; each reading checked once, here."""

    __slots__ = ("mono", "wall")

    def __init__(self, clock: Callable[[], float], wall_clock: Callable[[], float]) -> None:
        self.mono = CheckedClock(clock, "clock()", monotonic=True)
        self.wall = CheckedClock(wall_clock, "wall_clock()", monotonic=False)

    def read(self) -> Reading:
        """Both clocks, the wall clock read between two monotonic reads
        (``pysched.calendar.read_clocks``)."""
        return read_clocks(self.wall, self.mono)
