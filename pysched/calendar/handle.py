"""``SeriesHandle``: what ``schedule_recurring`` returns, for any scheduler that keeps a book."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timezone, tzinfo

from .._validate import check_capacity
from ._readings import Reading
from .book import SeriesBook
from .series import Series

__all__ = ["SeriesHandle", "fire_datetimes"]


def _nothing() -> None:
    return None


def fire_datetimes(series: Series, fires: list[float], now: Reading) -> list[datetime]:
    """``series``' fire times as aware datetimes: a calendar series' in its trigger's
    zone, an interval series' in UTC, estimated from ``now`` on the monotonic clock."""
    if series.timeline == "wall":
        zone: tzinfo = getattr(series.trigger, "tz", timezone.utc)
        return [datetime.fromtimestamp(f, zone) for f in fires]
    return [datetime.fromtimestamp(f - now.mono + now.wall, timezone.utc) for f in fires]


class SeriesHandle:
    """One scheduled series: its next fire times, pause, resume, cancel.

    ``lock`` guards the book (the scheduler's own lock; none for a
    single-threaded loop); ``read`` reads both clocks; ``notify`` tells the
    scheduler its next wake-up may have moved. A handle acts on its own
    series only: once the series is replaced by id or ended, ``pause`` and
    ``resume`` do nothing and ``cancel`` returns False.
    """

    __slots__ = ("series_id", "_book", "_series", "_lock", "_read", "_notify")

    def __init__(self, book: SeriesBook, series: Series, *, read: Callable[[], Reading],
                 lock: AbstractContextManager[object] | None = None,
                 notify: Callable[[], None] = _nothing) -> None:
        self.series_id = series.series_id
        self._book = book
        self._series = series
        self._lock: AbstractContextManager[object] = nullcontext() if lock is None else lock
        self._read = read
        self._notify = notify

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else "paused" if self.paused else "active"
        return f"<SeriesHandle {self.series_id!r} {state}>"

    def _current(self) -> bool:
        return self._book.get(self.series_id) is self._series and not self._series.stopped

    @property
    def cancelled(self) -> bool:
        """True once the series was cancelled, replaced, or stopped by an error."""
        with self._lock:
            return not self._current()

    @property
    def paused(self) -> bool:
        """True while the series is paused."""
        with self._lock:
            return self._series.paused

    def next_fire_times(self, n: int) -> list[datetime]:
        """The next ``n`` fire times not yet handled, as aware datetimes.

        A calendar series' in its trigger's zone; an interval series' in UTC,
        estimated from the monotonic clock's reading now.
        """
        n = check_capacity(n, "n")
        with self._lock:
            if not self._current():
                return []
            fires = self._series.next_fire_times(n)
            now = self._read()
        return fire_datetimes(self._series, fires, now)

    def pause(self) -> None:
        """Start no more runs until ``resume``; a run in progress goes on."""
        with self._lock:
            if self._current() and not self._series.paused:
                self._book.pause(self.series_id)
        self._book.flush()

    def resume(self) -> None:
        """Resume; the fire times that came due while paused are skipped, with events."""
        with self._lock:
            if self._current() and self._series.paused:
                self._book.resume(self.series_id, self._read())
        self._book.flush()
        self._notify()

    def cancel(self) -> bool:
        """End the series; False if it had already ended or been replaced."""
        with self._lock:
            if not self._current():
                return False
            self._book.cancel(self.series_id)
        self._book.flush()
        self._notify()
        return True
