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

With a ``reference`` clock shared by every node (the PostgreSQL server's),
one node's clock cannot move the others' time: a wall clock more than
``max_skew`` away from the reference is refused (``clock_refused``) and the
reference used instead, and a high-water mark more than ``max_skew`` ahead of
the reference (written by a node whose clock was fast) is refused
(``mark_refused``) and ignored. So an honest node never runs work more than
``max_skew`` early because another node's clock was fast.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from .._validate import check_time

__all__ = ["Timebase"]


class Timebase:
    """The fixed map between the scheduler's monotonic clock and wall time. O(1) per call."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time,
                 high_water: float | None = None, reference: float | None = None,
                 max_skew: float = math.inf) -> None:
        self.mono0 = check_time(clock(), "clock()")
        wall = check_time(wall_clock(), "wall_clock()")
        self.skew = None if reference is None else wall - reference  # this node's clock
        self.clock_refused = self.skew is not None and abs(self.skew) > max_skew
        if self.clock_refused:
            assert reference is not None
            wall = reference
        self.mark_refused = (reference is not None and high_water is not None
                             and high_water > reference + max_skew)
        if self.mark_refused:
            high_water = None
        self.wall_jumped_back = high_water is not None and high_water > wall
        self.wall0 = max(wall, high_water) if high_water is not None else wall

    def to_wall(self, mono: float) -> float:
        """The wall instant stored for monotonic time ``mono``."""
        return self.wall0 + (mono - self.mono0)

    def to_mono(self, wall: float) -> float:
        """The monotonic deadline for a stored wall instant."""
        return self.mono0 + (wall - self.wall0)
