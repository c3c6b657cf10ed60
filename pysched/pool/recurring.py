"""The pool's record of a recurring series, and what ``schedule_every`` means as a series.

Every recurring series in the pool is a ``pysched.calendar.Series`` run by
``pysched.pool.calendar_series``; ``Recurrence`` is what the pool's book needs
of it (its priority, ``on_error``, whether it stopped, its next wake-up).

``schedule_every`` is ``schedule_recurring`` with an ``Every`` trigger:
``mode="fixed_rate"``: run k due at ``start_at + k * interval`` (``Every(interval,
start_at=...)``, computed by multiplication, so no rounding accumulates);
``"fixed_delay"``: due ``interval`` after the previous run returned
(``fixed_delay=True``). A run is never missed for being late
(``misfire_grace=None``), and runs never overlap; ``overlap`` says what
becomes of the fire times that come due while a run is in progress (strictly
before it returned):

- ``skip``: they are dropped (counted in ``skipped``); the next run is the
  first one due at or after the end.
- ``coalesce``: they become one run, started at once (its fire time is the
  latest of them; the others count in ``coalesced``); then the schedule goes on.
- ``queue``: each of them runs, back to back, and the schedule catches up
  (Java's ``scheduleAtFixedRate``), at most ``QUEUE_BOUND`` at a time.

Fire times that came due while the pool had no free worker (several at one
wake-up): under ``skip`` and ``coalesce`` the newest runs and the older are
skipped (reason ``catch_up_cap``); under ``queue`` each runs, up to the bound.
Fixed delay never has a fire time come due during a run, so it ignores the policy.
"""

from __future__ import annotations

from typing import Protocol

from ..calendar.series import SCAN_LIMIT

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

# The most fire times of a queueing schedule_every series run back to back after one
# wake-up: a pool stalled for a long time cannot queue millions.
QUEUE_BOUND = SCAN_LIMIT

__all__ = ["MODES", "ON_ERRORS", "OVERLAPS", "QUEUE_BOUND", "Recurrence", "every_catch_up"]


def every_catch_up(overlap: str) -> int:
    """``max_catch_up`` of a ``schedule_every`` series with this overlap policy."""
    return QUEUE_BOUND if overlap == QUEUE else 1


class Recurrence(Protocol):
    """What the pool's book needs of a recurring series' record.

    ``stopped`` turns true once when the series ends (cancelled, replaced,
    closed, or a run failed under ``on_error="stop"``); whoever turns it owns
    resolving the series' Future. The book reads and writes it under its lock.
    ``fired`` says whether the last wake-up ran the user's function (the
    book counts it completed) or nothing (an idle wake-up).
    """

    priority: int
    stopped: bool
    fired: bool

    @property
    def on_error(self) -> str:
        """``STOP`` or ``CONTINUE``."""

    def next_run(self, end: float) -> tuple[float, int, int]:
        """After a run (a wake-up) returned at ``end``: (next run_at, fire times skipped,
        fire times coalesced since the last call). The book's call, under its lock."""
