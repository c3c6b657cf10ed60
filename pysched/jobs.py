"""What a scheduler holds, as typed snapshots: ``jobs()`` lists, ``describe(task_id)`` describes.

``ThreadPoolScheduler``, ``AsyncScheduler`` and ``DurableScheduler`` answer
with the same shapes, defined here:

- ``TaskInfo`` for a one-shot task: its state, due time on the scheduler's
  clock and as wall time, priority, version, attempts and last outcome;
- ``SeriesInfo`` for a recurring series: its next fire times, its last runs
  (``RunInfo``: fire time, started, finished, outcome, error), counters of
  its skipped, coalesced, late and overlapped fire times, and whether it is
  paused, with the note given to ``pause(note=...)``;
- ``JobPage``: a page of both, iterable, with the cursor of the next page
  (always None in process: there every job is on one page).

A snapshot is frozen: it is what the scheduler held when it was read, and
never changes after. Every time in one is either a float on the clock it
names or an aware UTC ``datetime`` (None where no datetime holds it, as for
a stored ``1e300``): nothing here raises on a strange time.
``describe()`` of an id the scheduler does not hold returns None, on every
scheduler.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["DEFAULT_HISTORY", "FAILED", "JOB_STATES", "NEXT_FIRES", "RECENT_RUNS", "SUCCEEDED",
           "Job", "JobPage", "RunInfo", "SeriesInfo", "TaskInfo", "error_text", "job_dict",
           "wall_datetime"]

DEFAULT_HISTORY = 1000  # runs of recurring series kept per in-process scheduler, all series
NEXT_FIRES = 10  # next fire times in a SeriesInfo
RECENT_RUNS = 10  # last runs in a SeriesInfo
SUCCEEDED = "succeeded"
FAILED = "failed"
# The states jobs(state=...) of an in-process scheduler knows: a task's, then a series'.
JOB_STATES = ("pending", "running", "active", "paused")


def wall_datetime(seconds: Any) -> datetime.datetime | None:
    """POSIX ``seconds`` as an aware UTC datetime; None when it is no finite number or
    no datetime holds it (before year 1 or after 9999)."""
    if type(seconds) not in (int, float):
        return None
    try:
        value = float(seconds)
        if not math.isfinite(value):
            return None
        return datetime.datetime.fromtimestamp(value, datetime.timezone.utc)
    except (OverflowError, ValueError, OSError):
        return None


def error_text(exc: BaseException) -> str:
    """An exception as one line: its type and message."""
    message = str(exc)
    name = type(exc).__name__
    return f"{name}: {message}" if message else name


@dataclass(frozen=True, slots=True)
class TaskInfo:
    """A one-shot task as its scheduler held it.

    ``state``: "pending" or "running" in process; a durable store's state
    ("pending", "running", "completed", "failed", "error", "cancelled", or
    whatever a row holds). ``due``: when it is (or was) due on the
    scheduler's clock (None where the scheduler has no such reading, as a
    command reading a store); ``due_wall``: the same instant as UTC wall time.
    ``attempts``: runs started of this version. ``last_outcome``: how its
    last run ended (a durable store's final state), None if none ended yet;
    ``error``: the first line of its last error. ``name`` and ``queue``: a
    durable task's registered name and queue.
    """

    task_id: Hashable
    state: str
    due: float | None
    due_wall: datetime.datetime | None
    priority: int | None
    version: int | None
    attempts: int
    last_outcome: str | None = None
    error: str | None = None
    name: str | None = None
    queue: str | None = None

    @property
    def kind(self) -> str:
        """``"task"``."""
        return "task"


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run of a recurring series: its fire time (on the series' timeline, and as UTC
    wall time), when it started and finished (UTC; None where not known), ``outcome``
    ("succeeded", "failed", or a durable fire time's state) and the first line of its
    error."""

    fire_time: float | None
    fire_wall: datetime.datetime | None
    started: datetime.datetime | None
    finished: datetime.datetime | None
    outcome: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class SeriesInfo:
    """A recurring series as its scheduler held it.

    ``state``: "active" or "paused" ("cancelled" for a stored series that
    ended); ``running``: a run of it is in progress. ``trigger``: the trigger
    in words; ``timeline``: "wall" (calendar triggers, POSIX seconds) or
    "monotonic" (intervals, on the scheduler's clock). ``next_fires``: the
    next fire times on that timeline, ``next_fires_wall`` the same as UTC
    wall times. ``last_runs``: newest first. ``skipped``, ``coalesced``,
    ``late``: fire times so reported by the series' events (a fire time too
    many to count counts once); ``overlapped``: those of them that came due
    while a run was in progress. ``note``: what ``pause(note=...)`` said.
    """

    series_id: Hashable
    state: str
    running: bool
    paused: bool
    note: str | None
    trigger: str | None
    timeline: str
    priority: int | None
    next_fires: tuple[float, ...]
    next_fires_wall: tuple[datetime.datetime | None, ...]
    last_runs: tuple[RunInfo, ...]
    skipped: int = 0
    coalesced: int = 0
    late: int = 0
    overlapped: int = 0
    name: str | None = None
    queue: str | None = None

    @property
    def kind(self) -> str:
        """``"series"``."""
        return "series"


Job = TaskInfo | SeriesInfo


@dataclass(frozen=True, slots=True)
class JobPage:
    """A page of jobs (series first, then tasks in due order) and the cursor of the
    next page, to pass as ``jobs(after=...)``; None: this is the last."""

    jobs: tuple[Job, ...]
    next: str | None = None

    def __iter__(self) -> Iterator[Job]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)


def job_dict(job: Job | RunInfo) -> dict[str, Any]:
    """A snapshot as JSON data: its fields and ``kind``, datetimes as ISO 8601 text,
    times that are no finite number as text (``"inf"``), ids that are no JSON value as
    their ``repr``."""
    data: dict[str, Any] = {} if isinstance(job, RunInfo) else {"kind": job.kind}
    for field in fields(job):
        data[field.name] = _json_value(getattr(job, field.name))
    return data


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, RunInfo):
        return job_dict(value)
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, (str, int, float)):
        return value
    return repr(value)
