"""Timebase: wall-clock instants in the store, monotonic deadlines in memory.

Invariant: ``to_wall`` and ``to_mono`` are inverse affine maps with slope 1,
fixed once at start-up (``wall0`` <-> ``mono0``), so while a process runs a
jump of the wall clock changes no deadline: the in-memory heap runs on the
monotonic clock alone, and every row it writes gets ``wall0 + (run_at - mono0)``.

Between restarts (the only time the wall clock is read again):

- ``wall0`` is ``max(wall_clock(), high_water)``, where ``high_water`` is the
  latest wall time any process of this store has recorded. A wall clock set
  back while the process was down therefore does not delay anything: tasks
  that were due are still due, and the rest keep the delay they had left at
  the last recorded instant (plus the real downtime, which cannot be told
  apart from the jump).
- A wall clock set forward, like real downtime, makes tasks due sooner by
  that much; ones already past are due at once and run in ``run_at`` order.
  A task never runs before its stored wall instant as this process sees it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .._validate import check_time

__all__ = ["Timebase"]


class Timebase:
    """The fixed map between the scheduler's monotonic clock and wall time. O(1) per call."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time,
                 high_water: float | None = None) -> None:
        self.mono0 = check_time(clock(), "clock()")
        wall = check_time(wall_clock(), "wall_clock()")
        self.wall_jumped_back = high_water is not None and high_water > wall
        self.wall0 = max(wall, high_water) if high_water is not None else wall

    def to_wall(self, mono: float) -> float:
        """The wall instant stored for monotonic time ``mono``."""
        return self.wall0 + (mono - self.mono0)

    def to_mono(self, wall: float) -> float:
        """The monotonic deadline for a stored wall instant."""
        return self.mono0 + (wall - self.wall0)
