"""``Every``: a fixed interval anchored to its start, on the monotonic clock."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from .._validate import check_choice, check_time
from ._readings import Reading
from .cron import check_aware

__all__ = ["TIMELINES", "Every", "Grid"]

TIMELINES = ("monotonic", "wall")


class Grid:
    """The fire times ``anchor + k * interval`` for k >= ``first_index``, on one clock's scale.

    Computed by multiplication, never by adding intervals up, so no rounding
    error accumulates and a late run never moves the ones after it.
    """

    __slots__ = ("anchor", "interval", "first_index", "timeline")

    def __init__(self, anchor: float, interval: float, first_index: int,
                 timeline: str = "monotonic") -> None:
        self.anchor = anchor
        self.interval = interval
        self.first_index = first_index
        self.timeline = timeline

    def first(self) -> float | None:
        """The first fire time."""
        return self.anchor + self.first_index * self.interval

    def next_fire(self, after: float) -> float | None:
        """The first fire time strictly after ``after``."""
        anchor, interval = self.anchor, self.interval
        k = max(self.first_index, math.floor((after - anchor) / interval) + 1)
        # float rounding of the division above
        while anchor + k * interval <= after:
            k += 1
        while k - 1 >= self.first_index and anchor + (k - 1) * interval > after:
            k -= 1
        fire = anchor + k * interval
        return fire if math.isfinite(fire) else None


class Every:
    """Every ``seconds`` (a positive number or timedelta), anchored to ``start``.

    Run k is due at ``start + k * seconds``, whenever the runs before it
    ended. ``start`` (an aware datetime) is the first fire time; without it
    the series is anchored when it is scheduled and first fires one interval
    later. Interval series run on the monotonic clock, so setting the wall
    clock neither hurries nor delays them.
    """

    __slots__ = ("seconds", "start")

    def __init__(self, seconds: float | timedelta, *, start: datetime | None = None) -> None:
        if isinstance(seconds, timedelta):
            seconds = seconds.total_seconds()
        value = check_time(seconds, "seconds")
        if value <= 0:
            raise ValueError(f"seconds must be > 0, got {seconds!r}")
        self.seconds = value
        self.start = None if start is None else check_aware(start, "start")

    def __repr__(self) -> str:
        return f"Every({self.seconds!r}, start={self.start!r})"

    def fires(self, now: Reading, timeline: str = "monotonic") -> Grid:
        """The fire times of a series scheduled at ``now``.

        On the monotonic scale by default. ``timeline="wall"`` puts them on
        POSIX seconds instead, for a series whose fire times must be the same
        in every process (a durable series): then a wall-clock jump moves them.
        """
        check_choice(timeline, "timeline", TIMELINES)
        start = self.start
        if timeline == "wall":
            anchor = now.wall if start is None else start.timestamp()
        else:
            anchor = now.mono if start is None else now.mono + (start.timestamp() - now.wall)
        return Grid(anchor, self.seconds, 1 if start is None else 0, timeline)

    def describe(self) -> str:
        """What the schedule means, in words."""
        since = "from when it is scheduled" if self.start is None else \
            f"from {self.start.isoformat()}"
        return f"Every {self.seconds:g} s of elapsed time {since}"
