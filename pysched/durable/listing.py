"""The read layer of a durable store: pages of tasks, one task, an overview, the series.

``Listing(db, table)`` answers what operators ask ("what is scheduled?",
"when does it run next?", "why didn't it run?", "what was the last
error?") with typed snapshots, read with the statements of ``ListingSQL``.
Every value comes from a row, so every value is untrusted: snapshots hold
what the row holds (a time may be text, NaN or 1e300) and the callers format
it with ``moments``; nothing here raises on a strange value.

Pages of tasks are keyset pages in ``(run_at, task_id)`` order: the cursor
``next`` names the last row shown, and the next page is one index range scan
after it, as fast on the millionth row as on the first.

The indexes those scans read (``LISTING_INDEXES``) are not made by the stores,
whose every write would pay for them: a ``Listing`` builds the missing ones
before its first page or count (``ensure_indexes``), once. Where it may not
(a read-only file or role), it says so in one log line and reads on: its pages
are then scans of the table, right but slower on a large one.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..calendar import Reading
from ._series_spec import decode_spec
from ._sql import check_table
from .errors import BadRow
from .listing_sql import FIRE_COLUMNS, SERIES_COLUMNS, TASK_COLUMNS, TASK_PAGE_COLUMNS, ListingSQL
from .moments import as_time
from .reading import Database
from .store import FINAL_STATES, KNOWN_STATES, decode_args

__all__ = ["FAILED_STATES", "MAX_PAGE", "Count", "Fire", "Listing", "Overview", "SeriesDetail",
           "SeriesLine", "TaskDetail", "TaskLine", "TaskPage", "Worker", "decode_cursor",
           "encode_cursor"]

log = logging.getLogger("pysched.durable")

MAX_PAGE = 500
FAILED_STATES = ("failed", "error")
# A page across every state merges one index scan per state present, up to this many
# (a table holding more distinct states than that was written by something else).
MAX_STATES = 64
STATE_CAP = 2_000
QUEUE_CAP = 200
MAX_QUEUES = 20
NEXT_FIRES = 5
RECENT_FIRES = 10
HOUR = 3600.0


class TaskLine(NamedTuple):
    """One task on a page; ``error`` is the start of its error text."""

    task_id: str
    version: Any
    state: Any
    run_at: Any
    priority: Any
    ref: Any
    queue: Any
    attempts: Any
    updated_at: Any
    lease_owner: Any
    lease_expires: Any
    error: Any

    @property
    def error_line(self) -> str:
        """The first line of the error (its exception type and message), or ""."""
        return first_line(self.error)


class TaskPage(NamedTuple):
    """A page of tasks and the cursor of the next page (None: this is the last)."""

    tasks: list[TaskLine]
    next: str | None
    now: float


class TaskDetail(NamedTuple):
    """Everything the row of one task id holds, its arguments decoded where they decode."""

    row: dict[str, Any]
    args: list[Any] | None
    kwargs: dict[str, Any] | None
    args_error: str | None  # why the arguments do not decode (the row cannot run)
    now: float

    @property
    def error_line(self) -> str:
        return first_line(self.row.get("error"))


class Worker(NamedTuple):
    """A process holding leases: of tasks and of series fire times, and the latest expiry.
    Its leases are renewed every heartbeat, so ``lease_until`` moves while it lives."""

    owner: Any
    tasks: int
    fires: int
    lease_until: Any


class Count(NamedTuple):
    """A number of rows: ``exact``; ``at least`` (counting stopped there); or ``about``
    (the database planner's estimate, where counting stopped)."""

    value: int
    kind: str = "exact"

    def __str__(self) -> str:
        if self.kind == "at least":
            return f"{self.value:,}+"
        return f"~{self.value:,}" if self.kind == "about" else f"{self.value:,}"


class Overview(NamedTuple):
    """Counts by state and queue, the workers holding leases, the last hour's outcomes.

    Counts are exact up to ``STATE_CAP`` rows of a state and ``QUEUE_CAP`` of a queue's
    state: beyond, a count would read every row, so the planner's estimate stands in
    (PostgreSQL) or the count says "at least". At most ``MAX_QUEUES`` queues, by name
    (``more_queues`` says there are others).
    """

    now: float
    counts: dict[str, Count]
    queues: dict[str, dict[str, Count]]
    more_queues: bool
    workers: list[Worker]
    # Outcomes written in the last hour, by state: (count, mean and max seconds from due
    # to finished). The store keeps no start time, so this is lateness and run time together.
    finished: dict[str, tuple[int, Any, Any]]
    per_5min: list[int]  # outcomes per 5 minutes over the last hour, oldest first
    series: dict[str, int]

    @property
    def total(self) -> Count:
        """The rows of every state, as exact as the least exact of the counts."""
        kinds = {c.kind for c in self.counts.values()}
        kind = "about" if "about" in kinds else "at least" if "at least" in kinds else "exact"
        return Count(sum(c.value for c in self.counts.values()), kind)


class Fire(NamedTuple):
    """One fire time of a series claimed in the store: running, done or failed."""

    fire_time: Any
    state: Any
    attempts: Any
    lease_owner: Any
    lease_expires: Any


class SeriesLine(NamedTuple):
    """One stored series: its trigger in words and its next fire times (None where its
    spec does not decode: then ``problem`` says why), and its newest claimed fire time."""

    series_id: str
    generation: Any
    state: Any
    ref: Any
    queue: Any
    priority: Any
    created: Any
    trigger: str | None
    next_fires: list[float]
    problem: str | None
    last_fire: Any
    last_state: Any
    note: str | None


class SeriesDetail(NamedTuple):
    """A series, its recent fire times, counts of the fire times the store keeps, its work."""

    series: SeriesLine
    fires: list[Fire]
    fire_counts: dict[str, int]
    args: Any
    spec: Any
    floor: Any
    now: float


def first_line(text: Any) -> str:
    """The first non-empty line of ``text`` if it is text, else ""."""
    if not isinstance(text, str):
        return ""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def encode_cursor(run_at: Any, task_id: str) -> str:
    """The cursor after a row: its ``(run_at, task_id)`` in a URL-safe token."""
    if isinstance(run_at, bytes):
        key: list[Any] = ["b", run_at.hex()]
    elif isinstance(run_at, str):
        key = ["t", run_at]
    elif isinstance(run_at, int) and not isinstance(run_at, bool):
        key = ["i", str(run_at)]
    else:
        key = ["f", repr(float(run_at))]  # repr round-trips every float, nan and inf too
    text = json.dumps([*key, task_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


_CURSOR_KINDS: dict[str, Callable[[str], Any]] = {"b": bytes.fromhex, "t": str, "i": int,
                                                 "f": float}


def decode_cursor(cursor: str) -> tuple[Any, str]:
    """The ``(run_at, task_id)`` a cursor names; ValueError naming ``after`` if it is not one."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        kind, value, task_id = json.loads(text)
        if not isinstance(value, str) or not isinstance(task_id, str):
            raise ValueError
        run_at: Any = _CURSOR_KINDS[kind](value)
    except (ValueError, TypeError, KeyError, binascii.Error, UnicodeDecodeError):
        raise ValueError(f"after: {cursor[:40]!r} is not a cursor of a page of tasks") from None
    return run_at, task_id


def next_fire_times(spec: Any, now: float, n: int) -> tuple[str | None, list[float], str | None]:
    """(the trigger in words, its next ``n`` fire times after ``now``, the problem) of a
    stored spec; a spec that does not decode gives (None, [], why)."""
    try:
        trigger = decode_spec(spec).trigger
        described = trigger.describe()
        fires = trigger.fires(Reading(now, now), "wall")
        found: list[float] = []
        after = now
        while len(found) < n:
            fire = fires.next_fire(after)
            if fire is None or as_time(fire) is None:
                break
            found.append(fire)
            after = fire
    except (BadRow, ValueError, TypeError, OverflowError, OSError) as exc:
        return None, [], first_line(str(exc)) or type(exc).__name__
    return described, found, None


class Listing:
    """Reads of one store's table ``table`` through ``db``; safe to use from any thread."""

    def __init__(self, db: Database, table: str = "pysched_tasks") -> None:
        self.db = db
        self.sql = ListingSQL(db.dialect, check_table(table))
        self._checked = False
        self._tables: dict[str, set[str]] = {}  # found tables' columns (a dict: thread-safe)
        self._missing: list[str] | None = None  # the listing's indexes absent, once looked
        self._building = threading.Lock()  # one build at a time, whichever thread lists first

    # -- the tables --------------------------------------------------------------------------

    def _has(self, table: str) -> set[str]:
        """The columns of ``table`` (none: no such table). A table once found is taken to
        stay: its columns are remembered, so a page pays for the look-up once."""
        known = self._tables.get(table)
        if known is None:
            known = {str(r[0]) for r in self.db.query(self.sql.columns, {"table": table})}
            if known:
                self._tables[table] = known
        return known

    def check(self) -> None:
        """LookupError unless the task table exists with every column the listing reads."""
        if self._checked:
            return
        have = self._has(self.sql.table)
        if not have:
            raise LookupError(f"no table {self.sql.table}")
        missing = [c for c in TASK_COLUMNS if c not in have]
        if missing:
            raise LookupError(f"table {self.sql.table} has no column {', '.join(missing)}:"
                              " open it once with this pysched's store to bring it up to date")
        self._checked = True

    def ensure_indexes(self) -> list[str]:
        """Build the listing's indexes the table lacks, the first time only (after that,
        the answer of the first); the names of those still missing (none: each page
        reads an index). Where they cannot be built, one log line says why and how."""
        with self._building:
            if self._missing is None:
                self.check()
                missing = self._absent()
                if missing:
                    why = self.db.build([self.sql.listing_indexes[name] for name in missing])
                    missing = self._absent()
                    if missing:
                        self._report(missing, why)
                self._missing = missing
            return list(self._missing)

    def _absent(self) -> list[str]:
        """The listing's indexes that the table lacks or that are not ready for use."""
        ready = {str(name) for name, usable in self.db.query(self.sql.indexes,
                                                             {"table": self.sql.table})
                 if usable}
        return [name for name in self.sql.listing_indexes if name not in ready]

    def _report(self, missing: list[str], why: str | None) -> None:
        table = self.sql.table
        log.warning(
            "table %s lacks the listing's indexes %s (%s): its pages and counts read the"
            " whole table. To build them, list it once as a user who may create indexes on"
            " it (pysched tasks --store STORE --table %s), or run: %s", table,
            ", ".join(missing), why or "one is left unusable by a build that did not finish:"
            " DROP INDEX it first", table,
            "; ".join(self.sql.listing_indexes[name] for name in missing))

    def _has_series(self) -> bool:
        return bool(self._has(self.sql.series_table)) and bool(self._has(self.sql.fires_table))

    # -- tasks -------------------------------------------------------------------------------

    def tasks(self, *, states: Sequence[str] = (), queue: str | None = None,
              name: str | None = None, after: str | None = None, limit: int = 50,
              newest_first: bool = False) -> TaskPage:
        """A page of up to ``limit`` tasks in ``states`` (none given: every state present),
        on ``queue`` and named ``name`` (None: any), in due order (``newest_first``: latest
        due first), after the cursor ``after`` (a page's ``next``).

        One index range scan per state; ValueError naming the argument for a bad limit
        or cursor.
        """
        _check_limit(limit)
        if isinstance(states, str):  # would be read as a list of one-letter states
            raise TypeError("states must be a list of states, not a str")
        cursor = None if after is None else decode_cursor(after)
        self.ensure_indexes()
        equal = {"queue": queue, "ref": name}
        params: dict[str, Any] = {k: v for k, v in equal.items() if v is not None}
        columns = sorted(params)
        chosen = list(dict.fromkeys(states))
        if not chosen:
            chosen = [r[0] for r in self.db.query(self.sql.states(columns),
                                                  {**params, "limit": MAX_STATES})]
        if not chosen:
            return TaskPage([], None, self.db.now())
        params.update({f"state{i}": state for i, state in enumerate(chosen)}, limit=limit + 1)
        if cursor is not None:
            params["run_at"], params["task_id"] = cursor
        found = self.db.query(self.sql.tasks_page(columns, len(chosen), cursor is not None,
                                                  newest_first), params)
        return self._page(found, limit)

    def retrying(self, *, after: str | None = None, limit: int = 50) -> TaskPage:
        """The tasks waiting for a retry (pending again, their last error kept), next due
        first: a partial index holds only them."""
        _check_limit(limit)
        cursor = None if after is None else decode_cursor(after)
        self.ensure_indexes()
        params: dict[str, Any] = {"limit": limit + 1}
        if cursor is not None:
            params["run_at"], params["task_id"] = cursor
        found = self.db.query(self.sql.retrying_page(cursor is not None), params)
        return self._page(found, limit)

    def _page(self, found: list[tuple[Any, ...]], limit: int) -> TaskPage:
        lines = [TaskLine(*row) for row in found[:limit]]
        more = len(found) > limit
        return TaskPage(lines, encode_cursor(lines[-1].run_at, lines[-1].task_id)
                        if more else None, self.db.now())

    def failed(self, *, after: str | None = None, limit: int = 50) -> TaskPage:
        """The failed and errored tasks, latest due first."""
        return self.tasks(states=FAILED_STATES, after=after, limit=limit, newest_first=True)

    def task(self, task_id: str) -> TaskDetail | None:
        """The row of ``task_id`` with its arguments decoded, or None. One primary-key read."""
        self.check()
        found = self.db.query(self.sql.task, {"task_id": task_id})
        now = self.db.now()
        if not found:
            return None
        row = dict(zip(TASK_COLUMNS, found[0], strict=True))
        try:
            args, kwargs = decode_args(row["args"])
        except BadRow as exc:
            return TaskDetail(row, None, None, str(exc), now)
        return TaskDetail(row, args, kwargs, None, now)

    # -- the overview ------------------------------------------------------------------------

    def overview(self) -> Overview:
        """Counts by state and queue, workers, the last hour's outcomes, series by state.

        Each count reads at most its cap of index entries (see ``Overview``); the last
        hour reads the rows finished in it through the finished rows' index.
        """
        self.check()
        now = self.db.now()
        counts, queues, more_queues = self.counts()
        since = now - HOUR
        finished: dict[str, tuple[int, Any, Any]] = {}
        per_5min = [0] * 12
        for bucket, state, n, total, worst in self.db.query(self.sql.finished,
                                                             {"since": since}):
            if type(bucket) is int and bucket >= 0:  # a row from the future goes last
                per_5min[min(bucket, 11)] += int(n)
            count, lag, longest = finished.get(str(state), (0, 0.0, None))
            finished[str(state)] = (count + int(n), _add(lag, total), _latest(longest, worst))
        finished = {state: (n, _divide(lag, n), longest)
                    for state, (n, lag, longest) in finished.items()}
        has_series = self._has_series()
        workers: dict[Any, list[Any]] = {}
        leases = [(0, self.sql.task_leases)]
        if has_series:
            leases.append((1, self.sql.fire_leases))
        for index, sql in leases:
            for owner, n, until in self.db.query(sql):
                entry = workers.setdefault(owner, [0, 0, None])
                entry[index] += int(n)
                entry[2] = _latest(entry[2], until)
        series = self.series_counts() if has_series else {}
        return Overview(now, counts, queues, more_queues,
                        [Worker(owner, t, f, until) for owner, (t, f, until)
                         in sorted(workers.items(), key=lambda kv: str(kv[0]))],
                        finished, per_5min, series)

    def counts(self) -> tuple[dict[str, Count], dict[str, dict[str, Count]], bool]:
        """Rows by state, by queue and state (queues with rows only), and whether there
        are more queues than ``MAX_QUEUES``: each count reads at most its cap of index
        entries (see ``Overview``)."""
        self.ensure_indexes()
        sql = self.sql
        states = sorted((str(r[0]) for r in self.db.query(sql.states([]),
                                                           {"limit": MAX_STATES})),
                        key=_state_order)
        queues = [r[0] for r in self.db.query(sql.distinct("queue"),
                                              {"limit": MAX_QUEUES + 1})]
        more_queues = len(queues) > MAX_QUEUES
        queues = queues[:MAX_QUEUES]
        counts = dict(zip(states, self._capped([(None, s) for s in states], STATE_CAP),
                          strict=True))
        if any(c.kind != "exact" for c in counts.values()):
            estimates = self._estimates()
            counts = {s: Count(max(estimates[s], c.value), "about")
                      if c.kind != "exact" and s in estimates else c
                      for s, c in counts.items()}
        pairs = [(q, s) for q in queues for s in states]
        by_queue: dict[str, dict[str, Count]] = {}
        for (queue, state), count in zip(pairs, self._capped(pairs, QUEUE_CAP), strict=True):
            if count.value:
                by_queue.setdefault(str(queue), {})[state] = count
        return counts, by_queue, more_queues

    def _capped(self, groups: list[tuple[Any, str]], cap: int) -> list[Count]:
        """The rows of each (queue or None, state) counted up to ``cap``, in one statement."""
        found: list[Count] = []
        for start in range(0, len(groups), 100):  # SQLite caps a compound SELECT's terms
            chunk = groups[start:start + 100]
            by_queue = chunk[0][0] is not None
            params: dict[str, Any] = {"cap": cap + 1}
            for i, (queue, state) in enumerate(chunk):
                params[f"state{i}"] = state
                if by_queue:
                    params[f"queue{i}"] = queue
            rows = dict(self.db.query(self.sql.capped_counts(len(chunk), by_queue), params))
            found += [Count(cap, "at least") if int(rows[i]) > cap else Count(int(rows[i]))
                      for i in range(len(chunk))]
        return found

    def _estimates(self) -> dict[str, int]:
        """The planner's estimate of the rows in each common state (none where the database
        keeps no per-value statistics, or the table was never analysed)."""
        if not self.sql.state_estimate:
            return {}
        found = self.db.query(self.sql.state_estimate, {"table": self.sql.table})
        if not found or found[0][1] is None:
            return {}
        rows, states, shares = found[0]
        return {str(s): int(float(rows) * float(f)) for s, f in zip(states, shares,
                                                                    strict=False)}

    # -- series ------------------------------------------------------------------------------

    def series_counts(self) -> dict[str, int]:
        """The number of series in each state (none where the store keeps no series)."""
        self.check()
        if not self._has_series():
            return {}
        return {str(s): int(n) for s, n in self.db.query(self.sql.series_counts)}

    def series(self, *, after: str = "", limit: int = 50, cancelled: bool = False,
               fires: int = NEXT_FIRES) -> tuple[list[SeriesLine], str | None]:
        """A page of series by id after ``after`` (the last id of the page before; "" for
        the first), and the id to pass for the next page (None: this is the last).
        Cancelled series only with ``cancelled``. ``fires`` next fire times each."""
        _check_limit(limit)
        self.check()
        if not self._has_series():
            return [], None
        found = self.db.query(self.sql.series_page, {"after": after, "limit": limit + 1,
                                                     "all": int(cancelled)})
        now = self.db.now()
        rows = found[:limit]
        notes = self._notes(after, rows[-1][0]) if rows else {}
        lines = [self._line(row, now, fires, notes) for row in rows]
        return lines, (str(rows[-1][0]) if len(found) > limit else None)

    def one_series(self, series_id: str, *, fires: int = RECENT_FIRES) -> SeriesDetail | None:
        """The series ``series_id`` (in any state) with its newest ``fires`` fire times
        claimed, or None."""
        self.check()
        if not self._has_series():
            return None
        found = self.db.query(self.sql.series_one, {"series_id": series_id})
        now = self.db.now()
        if not found:
            return None
        row = found[0]
        detail = dict(zip(SERIES_COLUMNS, row[:len(SERIES_COLUMNS)], strict=True))
        key = {"series_id": series_id, "generation": detail["generation"]}
        notes = self._notes(None, series_id)
        recent = [Fire(*r) for r in self.db.query(self.sql.fires, {**key, "limit": fires})]
        counts = {str(s): int(n) for s, n in self.db.query(self.sql.fire_counts, key)}
        try:
            args: Any = dict(zip(("args", "kwargs"), decode_args(detail["args"]), strict=True))
        except BadRow as exc:
            args = f"not readable: {exc}"
        return SeriesDetail(self._line(row, now, NEXT_FIRES, notes), recent, counts, args,
                            detail["spec"], detail["floor"], now)

    def _notes(self, after: str | None, last: Any) -> dict[str, tuple[Any, str]]:
        """The pause notes of the series ids in (``after``, ``last``] (``after`` None: only
        ``last``): {series_id: (generation, note)}."""
        if not self._has(self.sql.notes_table):
            return {}
        if after is None:
            rows = [(last, *r[:2]) for r in self.db.query(self.sql.note, {"series_id": last})]
        else:
            rows = self.db.query(self.sql.notes_of, {"after": after, "last": last})
        return {str(r[0]): (r[1], str(r[2])) for r in rows}

    def _line(self, row: Sequence[Any], now: float, fires: int,
              notes: dict[str, tuple[Any, str]]) -> SeriesLine:
        d = dict(zip(SERIES_COLUMNS, row[:len(SERIES_COLUMNS)], strict=True))
        trigger, upcoming, problem = next_fire_times(d["spec"], now, fires)
        note = notes.get(str(d["series_id"]))
        # A note is of the generation it was written for: a replaced series has none.
        text = note[1] if note is not None and note[0] == d["generation"] else None
        return SeriesLine(d["series_id"], d["generation"], d["state"], d["ref"], d["queue"],
                          d["priority"], d["created"], trigger, upcoming, problem,
                          row[len(SERIES_COLUMNS)], row[len(SERIES_COLUMNS) + 1], text)


def _check_limit(limit: Any) -> None:
    if type(limit) is not int or not 0 < limit <= MAX_PAGE:
        raise ValueError(f"limit must be an int from 1 to {MAX_PAGE}, got {limit!r}")


def _add(a: Any, b: Any) -> Any:
    """``a + b`` where both are numbers; else whichever is not (a sum over text rows)."""
    try:
        return a + b
    except TypeError:
        return a if isinstance(a, (int, float)) else b


def _divide(total: Any, n: int) -> Any:
    try:
        return total / n
    except (TypeError, ZeroDivisionError):
        return total


def _latest(a: Any, b: Any) -> Any:
    """The later of two lease expiries, where both are times; else whichever is one."""
    ta, tb = as_time(a), as_time(b)
    if ta is None:
        return b if tb is not None else a
    return a if tb is None or ta >= tb else b


def _state_order(state: str) -> tuple[int, str]:
    """Live states first, then final ones, then any this pysched does not know."""
    rank = 0 if state not in FINAL_STATES and state in KNOWN_STATES else (
        1 if state in FINAL_STATES else 2)
    return rank, state


# The page's column order is the snapshot's: a new column must be added to both.
assert TaskLine._fields == TASK_PAGE_COLUMNS
assert Fire._fields == FIRE_COLUMNS
