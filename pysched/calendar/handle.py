"""``SeriesHandle``: what ``schedule_recurring`` returns, in every scheduler that is not durable."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timezone, tzinfo
from typing import Any, Protocol

from .._validate import check_capacity
from ._readings import Reading
from .book import SeriesBook
from .series import Series

__all__ = ["SeriesHandle", "SeriesOwner", "fire_datetimes"]


def _nothing() -> None:
    return None


def _kept_here(state: str) -> bool:
    return True


def fire_datetimes(series: Series, fires: list[float], now: Reading) -> list[datetime]:
    """``series``' fire times as aware datetimes: a calendar series' in its trigger's
    zone, an interval series' in UTC, estimated from ``now`` on the monotonic clock.

    The list ends before the first fire time a datetime cannot hold (past year 9999).
    """
    wall = series.timeline == "wall"
    zone: tzinfo = getattr(series.trigger, "tz", timezone.utc) if wall else timezone.utc
    found = []
    for fire in fires:
        try:
            found.append(datetime.fromtimestamp(fire if wall else fire - now.mono + now.wall,
                                                zone))
        except (OverflowError, ValueError, OSError):  # out of the datetime range
            break
    return found


class SeriesOwner(Protocol):
    """What a ``SeriesHandle`` acts on: the scheduler's copy of its series.

    ``get``, ``pause`` and ``resume`` are called under the handle's lock;
    ``cancel`` without it (the owner takes the locks it needs, so a pool may
    take its own lock, which it holds while it takes the calendar's); ``flush``
    delivers the events decided so far, unlocked.
    """

    def get(self, series_id: Hashable) -> Series | None: ...

    def pause(self, series_id: Hashable) -> None: ...

    def resume(self, series_id: Hashable, now: Reading) -> None: ...

    def cancel(self, series: Series) -> bool:
        """End ``series`` if it is still the owner's; False if it had ended or been replaced."""

    def flush(self) -> None: ...


class _LockedBook:
    """A ``SeriesBook`` as a handle's owner: its ``cancel`` under the book's lock."""

    __slots__ = ("book", "lock")

    def __init__(self, book: SeriesBook, lock: AbstractContextManager[object]) -> None:
        self.book = book
        self.lock = lock

    def get(self, series_id: Hashable) -> Series | None:
        return self.book.get(series_id)

    def pause(self, series_id: Hashable) -> None:
        self.book.pause(series_id)

    def resume(self, series_id: Hashable, now: Reading) -> None:
        self.book.resume(series_id, now)

    def cancel(self, series: Series) -> bool:
        with self.lock:
            if self.book.get(series.series_id) is not series or series.stopped:
                return False
            return self.book.cancel(series.series_id)

    def flush(self) -> None:
        self.book.flush()


class SeriesHandle:
    """One scheduled series: its next fire times, pause, resume, cancel.

    ``owner`` is a ``SeriesBook`` (or any ``SeriesOwner``); ``lock`` guards it
    (the scheduler's own lock; none for a single-threaded loop); ``read``
    reads both clocks; ``notify`` tells the scheduler its next wake-up may
    have moved; ``future``, if the scheduler gives one, is the series' Future
    (cancelled with the series, failed by a run that stops it). ``write``, if
    the scheduler keeps its series elsewhere too (a durable store), records a
    pause, resume or cancel there first, unlocked: ``write(state)`` with state
    "paused", "active" or "cancelled" returns False when the series kept there
    is no longer this one, and then nothing happens here. A handle acts on its
    own series only: once the series is replaced by id or ended, ``pause`` and
    ``resume`` do nothing and ``cancel`` returns False.
    """

    __slots__ = ("series_id", "future", "_owner", "_series", "_lock", "_read", "_notify",
                 "_write")

    def __init__(self, owner: SeriesBook | SeriesOwner, series: Series, *,
                 read: Callable[[], Reading], lock: AbstractContextManager[object] | None = None,
                 notify: Callable[[], None] = _nothing, future: Future[Any] | None = None,
                 write: Callable[[str], bool] = _kept_here) -> None:
        self.series_id = series.series_id
        self.future = future
        self._lock: AbstractContextManager[object] = nullcontext() if lock is None else lock
        self._owner: SeriesOwner = (_LockedBook(owner, self._lock)
                                    if isinstance(owner, SeriesBook) else owner)
        self._series = series
        self._read = read
        self._notify = notify
        self._write = write

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else "paused" if self.paused else "active"
        return f"<SeriesHandle {self.series_id!r} {state}>"

    @property
    def task_id(self) -> Hashable:
        """The series' id, as the scheduler's task id."""
        return self.series_id

    def _current(self) -> bool:
        return self._owner.get(self.series_id) is self._series and not self._series.stopped

    @property
    def cancelled(self) -> bool:
        """True once the series was cancelled, replaced, closed, or stopped by an error."""
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
        now = self._read()  # outside the lock: a scheduler's clocks may close it if they fail
        with self._lock:
            if not self._current():
                return []
            fires = self._series.next_fire_times(n)
        return fire_datetimes(self._series, fires, now)

    def pause(self) -> None:
        """Start no more runs until ``resume``; a run in progress goes on."""
        if not self._write("paused"):
            return
        with self._lock:
            if self._current() and not self._series.paused:
                self._owner.pause(self.series_id)
        self._owner.flush()

    def resume(self) -> None:
        """Resume; the fire times that came due while paused are skipped, with events."""
        if not self._write("active"):
            return
        now = self._read()  # outside the lock, as in next_fire_times
        with self._lock:
            if self._current() and self._series.paused:
                self._owner.resume(self.series_id, now)
        self._owner.flush()
        self._notify()

    def cancel(self) -> bool:
        """End the series; False if it had already ended or been replaced."""
        if not self._write("cancelled") or not self._owner.cancel(self._series):
            return False
        self._owner.flush()
        self._notify()
        return True
