"""``Every``: a fixed interval anchored to its start, on the monotonic clock."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from .._validate import check_choice, check_time
from ._readings import Reading
from .cron import check_aware

__all__ = ["TIMELINES", "Every", "Grid"]

TIMELINES = ("monotonic", "wall")


class Every:
    """Every ``seconds`` (a positive number or timedelta), anchored to ``start``.

    Run k is due at ``start + k * seconds``, whenever the runs before it
    ended. ``start`` (an aware datetime) is the first fire time; so is
    ``start_at``, a time on the scheduler's own monotonic clock (its
    ``clock``), for a series that must line up with other times read there;
    without either the series is anchored when it is scheduled and first fires
    one interval later. Interval series run on the monotonic clock, so setting
    the wall clock neither hurries nor delays them. ``fixed_delay``: each run
    is due ``seconds`` after the previous one ended instead (then no fire time
    ever comes due during a run); a durable series refuses it, as a run's end
    is one process's.
    """

    __slots__ = ("seconds", "start", "start_at", "fixed_delay")

    def __init__(self, seconds: float | timedelta, *, start: datetime | None = None,
                 start_at: float | None = None, fixed_delay: bool = False) -> None:
        if isinstance(seconds, timedelta):
            seconds = seconds.total_seconds()
        value = check_time(seconds, "seconds")
        if value <= 0:
            raise ValueError(f"seconds must be > 0, got {seconds!r}")
        if start is not None and start_at is not None:
            raise ValueError("start and start_at: give at most one first fire time")
        if not isinstance(fixed_delay, bool):
            raise TypeError(f"fixed_delay must be a bool, not {type(fixed_delay).__name__}")
        self.seconds = value
        self.start = None if start is None else check_aware(start, "start")
        self.start_at = None if start_at is None else check_time(start_at, "start_at")
        self.fixed_delay = fixed_delay

    def __repr__(self) -> str:
        start = f"start_at={self.start_at!r}" if self.start_at is not None else \
            f"start={self.start!r}"
        delay = ", fixed_delay=True" if self.fixed_delay else ""
        return f"Every({self.seconds!r}, {start}{delay})"

    def fires(self, now: Reading, timeline: str = "monotonic") -> Grid:
        """The fire times of a series scheduled at ``now``.

        On the monotonic scale by default. ``timeline="wall"`` puts them on
        POSIX seconds instead, for a series whose fire times must be the same
        in every process (a durable series): then a wall-clock jump moves them.
        """
        check_choice(timeline, "timeline", TIMELINES)
        start = self.start
        if self.start_at is not None:
            if timeline == "wall":
                raise ValueError("start_at is a time on one scheduler's monotonic clock: "
                                 "a series on the wall timeline needs start, a datetime")
            return Grid(self.start_at, self.seconds, 0, timeline, self.fixed_delay,
                        start_at=self.start_at)
        if timeline == "wall":
            anchor = now.wall if start is None else start.timestamp()
        else:
            anchor = now.mono if start is None else now.mono + (start.timestamp() - now.wall)
        return Grid(anchor, self.seconds, 1 if start is None else 0, timeline, self.fixed_delay,
                    start=start)

    def describe(self) -> str:
        """What the schedule means, in words."""
        if self.start_at is not None:
            since = f"from {self.start_at:g} on the scheduler's clock"
        elif self.start is not None:
            since = f"from {self.start.isoformat()}"
        else:
            since = "from when it is scheduled"
        if self.fixed_delay:
            return f"Every {self.seconds:g} s after the end of the previous run, {since}"
        return f"Every {self.seconds:g} s of elapsed time {since}"


class Grid(Every):
    """The fire times ``anchor + k * interval`` for k >= ``first_index``, on one clock's scale.

    Computed by multiplication, never by adding intervals up, so no rounding
    error accumulates and a late run never moves the ones after it. With
    ``fixed_delay`` the grid starts again one interval after each run ends.

    A grid is also the ``Every`` it was made from (``start`` and ``start_at``
    as given, or None for a grid made from a run's end): a series keeps it as
    its trigger too, one object instead of two.
    """

    __slots__ = ("anchor", "first_index", "timeline")

    def __init__(self, anchor: float, interval: float, first_index: int,
                 timeline: str = "monotonic", fixed_delay: bool = False, *,
                 start: datetime | None = None, start_at: float | None = None) -> None:
        # Every's fields, from an Every that checked them (or from a run's end)
        self.seconds = interval
        self.start = start
        self.start_at = start_at
        self.fixed_delay = fixed_delay
        self.anchor = anchor
        self.first_index = first_index
        self.timeline = timeline

    @property
    def interval(self) -> float:
        """Seconds between fire times: the Every's ``seconds``."""
        return self.seconds

    def after_run(self, end: float) -> Grid:
        """The fire times once a run ended at ``end``: the same, or (fixed delay) the
        grid anchored at ``end``, its first fire one interval later."""
        if not self.fixed_delay:
            return self
        return Grid(end, self.seconds, 1, self.timeline, True)

    def first(self) -> float | None:
        """The first fire time."""
        return self.anchor + self.first_index * self.seconds

    def next_fire(self, after: float) -> float | None:
        """The first fire time strictly after ``after``; None past the largest float."""
        quotient = (after - self.anchor) / self.seconds
        if math.isinf(quotient):  # so far out that no index reaches it
            return None if quotient > 0 else self.first()
        guess = max(self.first_index, math.floor(quotient) + 1)
        fire = self._at(self._first_index_after(after, guess))
        return fire if math.isfinite(fire) else None

    def _at(self, k: int) -> float:
        try:
            return self.anchor + k * self.seconds
        except OverflowError:  # k beyond the floats
            return math.inf

    def _first_index_after(self, after: float, guess: int) -> int:
        """The least k >= first_index whose fire time is after ``after``, from a guess.

        The division that made ``guess`` rounds, and an interval finer than the
        floats near ``after`` maps many k to one time, so k is found by steps
        that double, then bisection: O(log) calls however fine the grid.
        """
        lowest = self.first_index
        hi, step = guess, 1
        while self._at(hi) <= after:
            hi, step = hi + step, step * 2
        lo, step = hi - 1, 1  # invariant: lo < lowest, or lo's fire time is not after
        while lo >= lowest and self._at(lo) > after:
            hi, lo, step = lo, lo - step, step * 2
        lo = max(lo, lowest - 1)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._at(mid) > after:
                hi = mid
            else:
                lo = mid
        return hi
