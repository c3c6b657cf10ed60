"""A durable store's jobs as ``pysched.jobs`` snapshots: the shapes every scheduler answers with.

``task_info`` and ``series_info`` turn what the read layer (``listing``)
gives, a row's values as stored, into ``TaskInfo`` and ``SeriesInfo``. A row
is untrusted: each value is checked here, once, and one that does not fit
becomes None (a time no datetime holds, as ``1e300``, has no ``due_wall``;
text where a number belongs has none at all). Nothing here raises on a row.

``StoreJobs`` answers ``DurableScheduler.jobs()`` and ``describe()``: from
the store's tables through ``Listing`` (keyset pages, one index range scan
each) on SQLite and PostgreSQL; by a scan of the rows on a ``MemoryStore``.
Pages list the series first (by id), then the tasks (in due order); the
cursor says which of the two comes next.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..calendar.ledger import Counts, RunLedger
from ..jobs import Job, JobPage, RunInfo, SeriesInfo, TaskInfo, wall_datetime
from .listing import (
    MAX_PAGE,
    NEXT_FIRES,
    Fire,
    Listing,
    SeriesLine,
    decode_cursor,
    encode_cursor,
    first_line,
    next_fire_times,
)
from .moments import as_time
from .reading import Database, connect, target_of
from .series_table import ACTIVE, CANCELLED, PAUSED
from .store import FINAL_STATES, PENDING, Store

__all__ = ["SERIES_STATES", "StoreJobs", "series_info", "task_info"]

SERIES_STATES = (ACTIVE, PAUSED, CANCELLED)
# A fire time's stored state as a run's outcome.
_OUTCOMES = {"done": "succeeded", "failed": "failed", "running": "running"}
_NO_COUNTS = Counts()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def task_info(row: Mapping[str, Any], to_clock: Callable[[float], float] | None = None
              ) -> TaskInfo:
    """The snapshot of a stored task row (a ``TaskLine``'s fields, or ``Store.get``'s
    dict). ``to_clock`` maps its wall ``run_at`` to the scheduler's clock (None: no
    scheduler, ``due`` is None)."""
    wall = as_time(row.get("run_at"))
    state = _text(row.get("state")) or repr(row.get("state"))
    error = first_line(row.get("error")) or None
    if state in FINAL_STATES:
        outcome: str | None = state
    elif state == PENDING and error is not None:
        outcome = "failed"  # waiting for a retry: its last attempt failed
    else:
        outcome = None
    due = None
    if wall is not None and to_clock is not None:
        due = to_clock(wall)
        due = due if math.isfinite(due) else None
    return TaskInfo(row.get("task_id"), state, due, wall_datetime(wall),
                    _int(row.get("priority")), _int(row.get("version")),
                    _int(row.get("attempts")) or 0, outcome, error, _text(row.get("ref")),
                    _text(row.get("queue")))


def series_info(line: SeriesLine, fires: Sequence[Fire] = (), counts: Counts = _NO_COUNTS
                ) -> SeriesInfo:
    """The snapshot of a stored series, its newest ``fires`` (the store's fire rows,
    newest first) and ``counts`` of the fire times this process saw skipped, coalesced,
    late or overlapped (the store keeps none)."""
    state = _text(line.state) or repr(line.state)
    runs = tuple(RunInfo(as_time(f.fire_time), wall_datetime(f.fire_time), None, None,
                         _OUTCOMES.get(f.state, str(f.state))) for f in fires)
    return SeriesInfo(
        line.series_id, state, line.last_state == "running", state == PAUSED, line.note,
        line.trigger, "wall", _int(line.priority), tuple(line.next_fires),
        tuple(wall_datetime(f) for f in line.next_fires), runs, counts.skipped,
        counts.coalesced, counts.late, counts.overlapped, _text(line.ref), _text(line.queue))


def check_page(limit: Any, state: Any) -> None:
    """ValueError naming ``limit`` or ``state`` if either is no page's."""
    if type(limit) is not int or not 0 < limit <= MAX_PAGE:
        raise ValueError(f"limit must be an int from 1 to {MAX_PAGE}, got {limit!r}")
    if state is not None and not isinstance(state, str):
        raise TypeError(f"state must be a str or None, not {type(state).__name__}")


class StoreJobs:
    """``jobs()`` and ``describe()`` over one store (see the module docstring).

    ``ledger`` holds this process's counts of its series' events; ``to_clock``
    maps a stored wall time to the scheduler's clock.
    """

    def __init__(self, store: Store, ledger: RunLedger,
                 to_clock: Callable[[float], float]) -> None:
        self._store = store
        self._ledger = ledger
        self._to_clock = to_clock
        self._db: Database | None = None
        self._writer: Database | None = None  # for pause notes, opened on the first
        self._listing: Listing | None = None
        self._lock = threading.Lock()  # one listing and one writer, whichever thread asks

    def _reads(self) -> Listing | None:
        """The store's listing, opened on first use; None for a store without tables."""
        with self._lock:
            return self._open_listing()

    def _open_listing(self) -> Listing | None:
        if self._listing is None:
            target = target_of(self._store)
            if target is None:
                return None
            self._db = connect(target)
            self._listing = Listing(self._db, getattr(self._store, "table", "pysched_tasks"))
        return self._listing

    def close(self) -> None:
        """Close the read connections. Idempotent."""
        if self._db is not None:
            self._db.close()
        if self._writer is not None:
            self._writer.close()

    def set_note(self, series_id: str, generation: int, note: str | None) -> None:
        """Keep the pause note of ``generation`` of ``series_id`` (None: drop it): in the
        store's notes table, where ``pysched describe`` and the dashboard read it (as
        ``pysched series pause --note`` writes it); in this process for a store without
        tables."""
        reads = self._reads()
        if reads is None:
            self._ledger.set_note(series_id, note)
            return
        with self._lock:
            if self._writer is None:
                target = target_of(self._store)
                assert target is not None  # as _reads() found it
                self._writer = connect(target, writable=True)
        sql = reads.sql
        change = ((sql.drop_note, {"series_id": series_id}) if note is None else
                  (sql.put_note, {"series_id": series_id, "generation": generation,
                                  "note": note, "written": self._store.now()}))
        self._writer.execute([(sql.create_notes, {}), change])

    # -- one job -------------------------------------------------------------------------

    def describe(self, task_id: str) -> Job | None:
        """The series of ``task_id`` if there is one, else its task row; None if neither."""
        reads = self._reads()
        if reads is None:
            return self._describe_here(task_id)
        detail = reads.one_series(task_id)
        if detail is not None and detail.series.state != CANCELLED:
            return series_info(detail.series, detail.fires, self._ledger.counts(task_id))
        task = reads.task(task_id)
        if task is not None:
            return task_info(task.row, self._to_clock)
        return None if detail is None else series_info(detail.series, detail.fires)

    def _describe_here(self, task_id: str) -> Job | None:
        for line in self._series_here(True):
            if line.series_id == task_id and line.state != CANCELLED:
                return series_info(line, (), self._ledger.counts(task_id))
        row = self._store.get(task_id)
        return None if row is None else task_info(row, self._to_clock)

    # -- pages ---------------------------------------------------------------------------

    def jobs(self, state: str | None, queue: str | None, name: str | None, limit: int,
             after: str | None) -> JobPage:
        """A page of series, then tasks (see ``DurableScheduler.jobs``)."""
        check_page(limit, state)
        part, position = _split_cursor(after)
        reads = self._reads()
        found: list[Job] = []
        want_series = state is None or state in SERIES_STATES
        want_tasks = state is None or state not in SERIES_STATES
        if part == "s" and want_series:
            if reads is None:
                lines = [s for s in self._series_here(state == CANCELLED)
                         if s.series_id > position][:limit + 1]
                more: str | None = lines[limit - 1].series_id if len(lines) > limit else None
                lines = lines[:limit]
            else:
                lines, more = reads.series(after=position, limit=limit,
                                           cancelled=state == CANCELLED, fires=NEXT_FIRES)
            found += [series_info(s, (), self._ledger.counts(s.series_id)) for s in lines
                      if (state is None or s.state == state) and _matches(s, queue, name)]
            if more is not None:
                return JobPage(tuple(found), "s:" + more)
            part, position = "t", ""
        if not want_tasks or len(found) >= limit:
            nxt = "t:" if want_tasks and len(found) >= limit else None
            return JobPage(tuple(found), nxt)
        room = limit - len(found)
        states = [state] if state is not None else []
        cursor = position or None
        if reads is None:
            tasks, more = self._tasks_here(states, queue, name, cursor, room)
        else:
            page = reads.tasks(states=states, queue=queue, name=name, after=cursor,
                               limit=room)
            tasks = [t._asdict() for t in page.tasks]
            more = page.next
        found += [task_info(t, self._to_clock) for t in tasks]
        return JobPage(tuple(found), None if more is None else "t:" + more)

    def _series_here(self, cancelled: bool) -> list[SeriesLine]:
        """A store without tables: its series as the listing would give them."""
        now = self._store.now()
        lines = []
        for row in sorted(self._store.series_table().rows(), key=lambda r: r.series_id):
            if row.state == CANCELLED and not cancelled:
                continue
            trigger, upcoming, problem = next_fire_times(row.spec, now, NEXT_FIRES)
            lines.append(SeriesLine(row.series_id, row.generation, row.state, row.ref,
                                    row.queue, row.priority, row.created, trigger, upcoming,
                                    problem, row.last_fire, None,
                                    self._ledger.note(row.series_id)
                                    if row.state == PAUSED else None))
        return lines

    def _tasks_here(self, states: list[str], queue: str | None, name: str | None,
                    after: str | None, limit: int) -> tuple[list[dict[str, Any]], str | None]:
        """A store without tables: a page of its rows in due order, by a scan."""
        key = None if after is None else decode_cursor(after)
        every = getattr(self._store, "task_ids", None)  # a MemoryStore's: rows() has the pending
        rows = []
        for line in self._store.rows(every() if every is not None else None):
            if (states and line.state not in states) or (queue is not None and
                                                         line.queue != queue) \
                    or (name is not None and line.ref != name):
                continue
            if key is not None and (line.run_at, line.task_id) <= key:
                continue
            rows.append(line)
        rows.sort(key=lambda r: (r.run_at, r.task_id))
        page = [self._store.get(r.task_id) for r in rows[:limit]]
        more = (encode_cursor(rows[limit - 1].run_at, rows[limit - 1].task_id)
                if len(rows) > limit else None)
        return [r for r in page if r is not None], more


def _matches(line: SeriesLine, queue: str | None, name: str | None) -> bool:
    return (queue is None or line.queue == queue) and (name is None or line.ref == name)


def _split_cursor(after: Any) -> tuple[str, str]:
    """("s", the last series id) or ("t", a task cursor, "" for the first) of a page
    cursor; ("s", "") for None. ValueError naming ``after`` for anything else."""
    if after is None:
        return "s", ""
    if isinstance(after, str) and after[:2] in ("s:", "t:"):
        if after[:2] == "t:" and after[2:]:
            decode_cursor(after[2:])  # checked before any read
        return after[0], after[2:]
    raise ValueError(f"after: {str(after)[:40]!r} is not a cursor of a page of jobs")
