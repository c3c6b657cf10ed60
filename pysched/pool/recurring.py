"""When the runs of a recurring series are due, and what overlapping runs become.

Fixed rate: run k is due at ``start + k * interval``, computed by
multiplication so no rounding error accumulates from run to run. Fixed delay:
the next run is due ``interval`` after the previous run returned.

A run "comes due while the previous one is still running" when its time is
strictly before the moment the previous run returned. The core never runs two
versions of one task id at once, so no policy makes runs overlap; the overlap
policy (fixed rate only) says what happens to the runs that came due meanwhile:

- ``skip``: they are dropped (counted in ``skipped``); the next run is the
  first one due at or after the end.
- ``coalesce``: they become one run, started at once (its ``run_at`` is the
  latest of them; the others count in ``coalesced``); then the schedule goes on.
- ``queue``: each of them runs, back to back, and the schedule catches up
  (Java's ``scheduleAtFixedRate``).

Fixed delay never has a run come due during another, so it ignores the policy.
"""

from __future__ import annotations

import math

FIXED_RATE = "fixed_rate"
FIXED_DELAY = "fixed_delay"
MODES = (FIXED_RATE, FIXED_DELAY)

SKIP = "skip"
COALESCE = "coalesce"
QUEUE = "queue"
OVERLAPS = (SKIP, COALESCE, QUEUE)

STOP = "stop"
CONTINUE = "continue"
ON_ERRORS = (STOP, CONTINUE)

__all__ = ["MODES", "ON_ERRORS", "OVERLAPS", "Recurrence"]


class Recurrence:
    """The timing state of one recurring series.

    ``index`` is the fixed-rate index of the run now pending or running;
    ``stopped`` turns true once when the series ends (cancelled, replaced,
    closed, or a run failed under ``on_error="stop"``); whoever turns it owns
    resolving the series' Future. The scheduler reads and writes it under its lock.
    """

    __slots__ = ("interval", "mode", "overlap", "on_error", "priority", "start", "index",
                 "stopped", "fired")

    def __init__(self, interval: float, mode: str, overlap: str, on_error: str,
                 priority: int, start: float) -> None:
        self.interval = interval  # > 0, finite
        self.mode = mode
        self.overlap = overlap
        self.on_error = on_error
        self.priority = priority
        self.start = start  # due time of run 0
        self.index = 0
        self.stopped = False
        # whether the last run called the user's function (else: an idle wake-up)
        self.fired = True

    def next_run(self, end: float) -> tuple[float, int, int]:
        """After the current run returned at ``end``: (next run_at, skipped, coalesced).

        The returned time may be infinite for an absurdly long series; the
        caller ends the series then. O(1).
        """
        interval = self.interval
        if self.mode == FIXED_DELAY:
            self.index += 1
            return end + interval, 0, 0
        k = self.index + 1
        if self.overlap == QUEUE or self.start + k * interval >= end:
            self.index = k
            return self.start + k * interval, 0, 0
        # j: the first index due at or after ``end``; runs k .. j-1 came due during the run
        j = max(k, math.ceil((end - self.start) / interval))
        while self.start + j * interval < end:  # float rounding of the division above
            j += 1
        while j - 1 > k and self.start + (j - 1) * interval >= end:
            j -= 1
        missed = j - k
        if self.overlap == SKIP:
            self.index = j
            return self.start + j * interval, missed, 0
        # COALESCE: one run now, standing for the latest missed one
        self.index = j - 1
        return self.start + (j - 1) * interval, 0, missed - 1
