"""``RunLedger``: what an in-process scheduler remembers of its series' runs, bounded.

One ledger per scheduler, never one per series (a series stays small):

- one ring of the last ``history`` runs of all its series together
  (``deque(maxlen=history)``), a run recorded where it ends;
- per series that reported any, its counts of skipped, coalesced, late and
  overlapped fire times, tallied from the series' events (``observe`` is a
  listener of the scheduler's ``EventHub``) and dropped when the series stops;
- the notes of paused series, dropped on resume and when the series stops.

Thread-safe: one lock around the counts and notes; the ring's appends are
atomic. ``last_runs`` scans the ring, O(history).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable
from typing import NamedTuple

from .._validate import check_capacity
from ..jobs import FAILED, SUCCEEDED, RunInfo, error_text, wall_datetime
from .events import COALESCED, LATE, OVERLAP, SKIPPED, STOPPED, Event

__all__ = ["MAX_NOTE", "Counts", "RunLedger", "check_note"]

MAX_NOTE = 2000  # characters of a pause note


class Counts(NamedTuple):
    """Fire times a series' events reported: skipped, coalesced, late, and those of them
    that came due during a run (overlapped)."""

    skipped: int = 0
    coalesced: int = 0
    late: int = 0
    overlapped: int = 0


_NONE = Counts()
_FIELD = {SKIPPED: 0, COALESCED: 1, LATE: 2}


def check_note(note: object) -> str | None:
    """``note`` if it is None or a str of at most ``MAX_NOTE`` characters; else TypeError
    or ValueError naming ``note``."""
    if note is None:
        return None
    if not isinstance(note, str):
        raise TypeError(f"note must be a str or None, not {type(note).__name__}")
    if len(note) > MAX_NOTE:
        raise ValueError(f"note is {len(note)} characters; at most {MAX_NOTE}")
    return note


class _Run(NamedTuple):
    series_id: Hashable
    fire_time: float
    fire_wall: float
    started: float
    finished: float
    error: str | None


class RunLedger:
    """The runs, counts and notes of one scheduler's series (see the module docstring)."""

    __slots__ = ("history", "_runs", "_counts", "_notes", "_lock")

    def __init__(self, history: int) -> None:
        history = check_capacity(history, "history")
        self.history = history
        self._runs: deque[_Run] = deque(maxlen=history)
        self._counts: dict[Hashable, list[int]] = {}
        self._notes: dict[Hashable, str] = {}
        self._lock = threading.Lock()

    def observe(self, event: Event) -> None:
        """Tally one series event (the hub's listener)."""
        field = _FIELD.get(event.kind)
        if field is None and event.kind != STOPPED:
            return
        with self._lock:
            if event.kind == STOPPED:
                self._counts.pop(event.series, None)
                self._notes.pop(event.series, None)
                return
            counts = self._counts.get(event.series)
            if counts is None:
                counts = self._counts[event.series] = [0, 0, 0, 0]
            n = event.count if event.count is not None else 1  # too many to count: once
            counts[field] += n  # type: ignore[index]
            if event.reason == OVERLAP:
                counts[3] += n

    def run_ended(self, series_id: Hashable, fire_time: float, fire_wall: float,
                  started: float, finished: float, error: BaseException | None) -> None:
        """Record a run of ``series_id`` (times in POSIX seconds but ``fire_time``, on the
        series' timeline); ``error``: what it raised, None if it returned."""
        self._runs.append(_Run(series_id, fire_time, fire_wall, started, finished,
                               None if error is None else error_text(error)))

    def last_runs(self, series_id: Hashable, n: int) -> tuple[RunInfo, ...]:
        """The newest ``n`` runs of ``series_id`` the ring still holds, newest first."""
        found: list[RunInfo] = []
        for run in reversed(list(self._runs)):  # a copy: other threads append meanwhile
            if len(found) >= n:
                break
            if run.series_id == series_id:
                found.append(RunInfo(run.fire_time, wall_datetime(run.fire_wall),
                                     wall_datetime(run.started), wall_datetime(run.finished),
                                     SUCCEEDED if run.error is None else FAILED, run.error))
        return tuple(found)

    def counts(self, series_id: Hashable) -> Counts:
        """The fire times the events of ``series_id`` reported so far."""
        with self._lock:
            counts = self._counts.get(series_id)
            return _NONE if counts is None else Counts(*counts)

    def set_note(self, series_id: Hashable, note: str | None) -> None:
        """Keep ``note`` (checked by ``check_note``) for the paused series ``series_id``
        (None: forget its note)."""
        with self._lock:
            if note is None:
                self._notes.pop(series_id, None)
            else:
                self._notes[series_id] = note

    def note(self, series_id: Hashable) -> str | None:
        """The note of the paused series ``series_id``, if any."""
        with self._lock:
            return self._notes.get(series_id)
