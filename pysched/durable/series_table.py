"""The stored half of durable recurring series: one row per series, one claim per fire time.

Two tables beside a store's task table ``t``:

- ``t_series``: one row per series id, its ``generation`` (a replacement by
  id bumps it, so the whole series is replaced), its ``state`` (active,
  paused, cancelled), its trigger and policies as JSON (``spec``: data, never
  code), the work (``ref``, ``args``, ``priority``, ``queue``) and ``created``,
  the wall instant it was stored (fire times are counted from it until one is
  claimed).
- ``t_fires``: one row per fire time claimed, keyed by the PRIMARY KEY
  ``(series_id, generation, fire_time)``. A claim is an INSERT that does
  nothing on conflict, so of any number of processes trying one fire time
  exactly one gets it; the row then holds a lease (owner, token, expiry) like a
  task's. A process that dies mid-run lets its lease expire, and ``reclaim``
  hands the fire time to a live process (at least once), never while the
  lease lives (never two runs of one fire time at once).

Fire times are POSIX seconds computed from the stored trigger by every process
alike, so the same fire time is the same float everywhere.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from typing import Any, NamedTuple

from ._sql import quote
from .records import ATTEMPTS_LIMIT

__all__ = ["ACTIVE", "CANCELLED", "PAUSED", "FireClaim", "MemorySeriesTable", "SQLSeriesTable",
           "SeriesRow", "SeriesTable"]

log = logging.getLogger("pysched.durable")

ACTIVE, PAUSED, CANCELLED = "active", "paused", "cancelled"
RUNNING, DONE, FAILED = "running", "done", "failed"


class SeriesRow(NamedTuple):
    """One stored series, with the newest fire time claimed for its generation."""

    series_id: str
    generation: int
    state: str
    spec: str
    ref: str
    args: str
    priority: int
    queue: str
    created: float
    # The newest fire time claimed for this generation, or the series' floor (below
    # which claims were pruned) if that is newer.
    last_fire: float | None
    # False for an id SQLite held as bytes that are not UTF-8 (read with them
    # replaced): no statement can name that row, so it is refused.
    id_is_text: bool = True


class FireClaim(NamedTuple):
    """A fire time this owner now runs under a lease."""

    series_id: str
    generation: int
    fire_time: float
    attempts: int
    token: str


class SeriesTable(ABC):
    """The series rows and fire-time claims of one store; each method is one transaction."""

    @abstractmethod
    def put(self, series_id: str, spec: str, ref: str, args: str, priority: int,
            queue: str, created: float) -> int:
        """Store the series (active), replacing any with this id whole; its new generation."""

    @abstractmethod
    def set_state(self, series_id: str, generation: int, state: str) -> bool:
        """Set the state of this generation unless it is cancelled; False if not found."""

    @abstractmethod
    def end(self, series_id: str) -> int | None:
        """Cancel the series of this id, whatever its generation; the generation ended, or
        None if there is none that is not cancelled already."""

    @abstractmethod
    def rows(self) -> list[SeriesRow]:
        """Every series that is not cancelled."""

    @abstractmethod
    def claim(self, series_id: str, generation: int, fire_time: float, owner: str,
              lease: float) -> FireClaim | None:
        """Claim one fire time of an active series' generation: None if any process
        claimed it before, or the series was paused, cancelled or replaced."""

    @abstractmethod
    def reclaim(self, owner: str, lease: float, series_ids: Collection[str],
                held: Collection[str] = ()) -> list[FireClaim]:
        """Take over the fire times of ``series_ids`` whose run's lease expired (its process
        died), of series not cancelled or replaced: each runs again, here. Never those
        whose lease token is in ``held``: the caller's own claims, still in flight there
        (it is alive, only late: it was stalled past the lease)."""

    @abstractmethod
    def finish(self, claim: FireClaim, failed: bool) -> bool:
        """Record the end of a claimed run if ``claim`` still holds it; releases the lease."""

    @abstractmethod
    def heartbeat(self, owner: str, lease: float, tokens: Sequence[str]) -> list[str]:
        """Extend the leases of these claims of ``owner``; the tokens extended."""

    @abstractmethod
    def prune(self, age: float) -> int:
        """Forget the ended claims of fire times more than ``age`` seconds old (store clock);
        how many. The ``floor`` of each series stored at or before that instant moves up to
        it first, and no fire time at or below a floor is ever claimed, so a forgotten claim
        is never made again. A series stored later keeps its floor: a floor below its
        ``created`` would have a worker that adopts it count fire times from before it was
        stored."""

    @abstractmethod
    def fire(self, series_id: str, generation: int, fire_time: float) -> dict[str, Any] | None:
        """Every column of one fire-time claim, for inspection and tests."""


def _is_text(raw: bytes | None) -> bool:
    """Whether a raw id read as bytes (None: the database keeps only text) is UTF-8."""
    if raw is None:
        return True
    try:
        raw.decode("utf-8")
    except (AttributeError, UnicodeDecodeError):
        return False
    return True


def _newest(a: float | None, b: float | None) -> float | None:
    return a if b is None else b if a is None else max(a, b)


def _token(owner: str, series_id: str, generation: int, fire_time: float, attempts: int) -> str:
    return f"{owner}:{attempts}:{generation}:{fire_time!r}:{series_id}"


class MemorySeriesTable(SeriesTable):
    """The series tables in dicts, under one lock: the spec of the SQL ones."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._series: dict[str, dict[str, Any]] = {}
        self._fires: dict[tuple[str, int, float], dict[str, Any]] = {}

    def put(self, series_id: str, spec: str, ref: str, args: str, priority: int,
            queue: str, created: float) -> int:
        with self._lock:
            old = self._series.get(series_id)
            generation = 1 if old is None else old["generation"] + 1
            self._series[series_id] = {
                "series_id": series_id, "generation": generation, "state": ACTIVE,
                "spec": spec, "ref": ref, "args": args, "priority": priority, "queue": queue,
                "created": created, "floor": None}
            return generation

    def set_state(self, series_id: str, generation: int, state: str) -> bool:
        with self._lock:
            row = self._series.get(series_id)
            if row is None or row["generation"] != generation or row["state"] == CANCELLED:
                return False
            row["state"] = state
            return True

    def end(self, series_id: str) -> int | None:
        with self._lock:
            row = self._series.get(series_id)
            if row is None or row["state"] == CANCELLED:
                return None
            row["state"] = CANCELLED
            return int(row["generation"])

    def rows(self) -> list[SeriesRow]:
        with self._lock:
            last: dict[tuple[str, int], float] = {}
            for (series_id, generation, fire_time) in self._fires:
                key = (series_id, generation)
                last[key] = max(last.get(key, fire_time), fire_time)
            for r in self._series.values():
                key = (r["series_id"], r["generation"])
                if r["floor"] is not None:
                    last[key] = max(last.get(key, r["floor"]), r["floor"])
            return [SeriesRow(r["series_id"], r["generation"], r["state"], r["spec"], r["ref"],
                              r["args"], r["priority"], r["queue"], r["created"],
                              last.get((r["series_id"], r["generation"])))
                    for r in self._series.values() if r["state"] != CANCELLED]

    def _live(self, series_id: str, generation: int, states: tuple[str, ...]) -> bool:
        row = self._series.get(series_id)
        return row is not None and row["generation"] == generation and row["state"] in states

    def claim(self, series_id: str, generation: int, fire_time: float, owner: str,
              lease: float) -> FireClaim | None:
        key = (series_id, generation, fire_time)
        with self._lock:
            # The unique key: a fire time ever claimed is never claimed again.
            if key in self._fires or not self._live(series_id, generation, (ACTIVE,)):
                return None
            floor = self._series[series_id]["floor"]
            if floor is not None and fire_time <= floor:
                return None  # its claim may have been pruned
            token = _token(owner, series_id, generation, fire_time, 1)
            self._fires[key] = {"series_id": series_id, "generation": generation,
                                "fire_time": fire_time, "state": RUNNING, "attempts": 1,
                                "lease_owner": owner, "lease_token": token,
                                "lease_expires": self._clock() + lease}
            return FireClaim(series_id, generation, fire_time, 1, token)

    def reclaim(self, owner: str, lease: float, series_ids: Collection[str],
                held: Collection[str] = ()) -> list[FireClaim]:
        with self._lock:
            now = self._clock()
            taken = []
            for (series_id, generation, fire_time), row in self._fires.items():
                if (row["state"] != RUNNING or row["lease_expires"] >= now
                        or series_id not in series_ids or row["lease_token"] in held
                        or not self._live(series_id, generation, (ACTIVE, PAUSED))):
                    continue
                row["attempts"] += 1
                row["lease_owner"] = owner
                row["lease_token"] = _token(owner, series_id, generation, fire_time,
                                            row["attempts"])
                row["lease_expires"] = now + lease
                taken.append(FireClaim(series_id, generation, fire_time, row["attempts"],
                                       row["lease_token"]))
            return taken

    def finish(self, claim: FireClaim, failed: bool) -> bool:
        with self._lock:
            row = self._fires.get((claim.series_id, claim.generation, claim.fire_time))
            if row is None or row["lease_token"] != claim.token or row["state"] != RUNNING:
                return False
            row.update(state=FAILED if failed else DONE, lease_owner=None, lease_token=None,
                       lease_expires=None)
            return True

    def heartbeat(self, owner: str, lease: float, tokens: Sequence[str]) -> list[str]:
        wanted = set(tokens)
        with self._lock:
            expires = self._clock() + lease
            renewed = []
            for row in self._fires.values():
                if (row["state"] == RUNNING and row["lease_owner"] == owner
                        and row["lease_token"] in wanted):
                    row["lease_expires"] = expires
                    renewed.append(row["lease_token"])
            return renewed

    def prune(self, age: float) -> int:
        with self._lock:
            before = self._clock() - age
            floored = set()
            for row in self._series.values():
                if row["created"] <= before and (row["floor"] is None or row["floor"] < before):
                    row["floor"] = before
                if row["floor"] is not None and row["floor"] >= before:
                    floored.add(row["series_id"])
            old = [key for key, row in self._fires.items()
                   if row["state"] != RUNNING and row["fire_time"] <= before
                   and key[0] in floored]
            for key in old:
                del self._fires[key]
            return len(old)

    def fire(self, series_id: str, generation: int, fire_time: float) -> dict[str, Any] | None:
        with self._lock:
            row = self._fires.get((series_id, generation, fire_time))
            return None if row is None else dict(row)


# One statement runs in one transaction: ``run(sql, params)`` returns its rows.
Run = Callable[[str, dict[str, Any]], list[tuple[Any, ...]]]


class SQLSeriesTable(SeriesTable):
    """The series tables in SQLite or PostgreSQL: the same SQL, named parameters
    (``:name``, rewritten for psycopg), ``now`` the store's clock as SQL.

    ``raw_id`` is SQL for the bytes of ``s.series_id`` where the database keeps
    text that may not be UTF-8 (SQLite), NULL where it cannot (PostgreSQL).
    """

    def __init__(self, table: str, run: Run, *, now: str, pyformat: bool,
                 raw_id: str = "NULL") -> None:
        self._s, self._f = quote(f"{table}_series"), quote(f"{table}_fires")
        self._lease_index = quote(f"{table}_fires_lease")
        self._run = run
        self._now = now
        self._pyformat = pyformat
        self._raw_id = raw_id

    def create_statements(self) -> list[str]:
        """The DDL, idempotent; the store runs it when it opens its table."""
        s, f = self._s, self._f
        return [f"CREATE TABLE IF NOT EXISTS {s} (series_id text PRIMARY KEY,"
                " generation bigint NOT NULL, state text NOT NULL, spec text NOT NULL,"
                " ref text NOT NULL, args text NOT NULL, priority bigint NOT NULL,"
                " queue text NOT NULL, created double precision NOT NULL,"
                " floor double precision)",
                f"CREATE TABLE IF NOT EXISTS {f} (series_id text NOT NULL,"
                " generation bigint NOT NULL, fire_time double precision NOT NULL,"
                " state text NOT NULL, attempts integer NOT NULL, lease_owner text,"
                " lease_token text, lease_expires double precision,"
                " PRIMARY KEY (series_id, generation, fire_time))",
                f"CREATE INDEX IF NOT EXISTS {self._lease_index} ON {f} (lease_expires)"
                " WHERE state = 'running'"]

    def _sql(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        sql = sql.replace("NOW", self._now)
        if self._pyformat:
            sql = re.sub(r":([a-z_]+)", r"%(\1)s", sql)
        return self._run(sql, params)

    def put(self, series_id: str, spec: str, ref: str, args: str, priority: int,
            queue: str, created: float) -> int:
        [(generation,)] = self._sql(
            f"INSERT INTO {self._s} (series_id, generation, state, spec, ref, args, priority,"
            " queue, created) VALUES (:id, 1, 'active', :spec, :ref, :args, :priority, :queue,"
            " :created) ON CONFLICT (series_id) DO UPDATE SET"
            f" generation = {self._s}.generation + 1, state = 'active', spec = excluded.spec,"
            " ref = excluded.ref, args = excluded.args, priority = excluded.priority,"
            " queue = excluded.queue, created = excluded.created, floor = NULL"
            " RETURNING generation",
            {"id": series_id, "spec": spec, "ref": ref, "args": args, "priority": priority,
             "queue": queue, "created": created})
        return int(generation)

    def set_state(self, series_id: str, generation: int, state: str) -> bool:
        return bool(self._sql(
            f"UPDATE {self._s} SET state = :state WHERE series_id = :id"
            " AND generation = :generation AND state <> 'cancelled' RETURNING series_id",
            {"id": series_id, "generation": generation, "state": state}))

    def end(self, series_id: str) -> int | None:
        found = self._sql(
            f"UPDATE {self._s} SET state = 'cancelled' WHERE series_id = :id"
            " AND state <> 'cancelled' RETURNING generation", {"id": series_id})
        return int(found[0][0]) if found else None

    def rows(self) -> list[SeriesRow]:
        found = self._sql(
            "SELECT s.series_id, s.generation, s.state, s.spec, s.ref, s.args, s.priority,"
            f" s.queue, s.created, (SELECT max(f.fire_time) FROM {self._f} f"
            "  WHERE f.series_id = s.series_id AND f.generation = s.generation), s.floor,"
            f" {self._raw_id} FROM {self._s} s WHERE s.state <> 'cancelled'", {})
        return [SeriesRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
                          _newest(r[9], r[10]), _is_text(r[11])) for r in found]

    def claim(self, series_id: str, generation: int, fire_time: float, owner: str,
              lease: float) -> FireClaim | None:
        token = _token(owner, series_id, generation, fire_time, 1)
        # The unique key decides: of concurrent inserts of one fire time, one commits a
        # row, the others do nothing (PostgreSQL waits for the first to commit).
        found = self._sql(
            f"INSERT INTO {self._f} (series_id, generation, fire_time, state, attempts,"
            " lease_owner, lease_token, lease_expires)"
            " SELECT :id, :generation, :fire, 'running', 1, :owner, :token, NOW + :lease"
            f" WHERE EXISTS (SELECT 1 FROM {self._s} WHERE series_id = :id"
            "  AND generation = :generation AND state = 'active'"
            "  AND (floor IS NULL OR floor < :fire))"
            " ON CONFLICT DO NOTHING RETURNING lease_token",
            {"id": series_id, "generation": generation, "fire": fire_time, "owner": owner,
             "token": token, "lease": lease})
        return FireClaim(series_id, generation, fire_time, 1, token) if found else None

    def reclaim(self, owner: str, lease: float, series_ids: Collection[str],
                held: Collection[str] = ()) -> list[FireClaim]:
        expired = self._sql(
            f"SELECT f.series_id, f.generation, f.fire_time, f.attempts, f.lease_token"
            f" FROM {self._f} f JOIN {self._s} s ON s.series_id = f.series_id"
            "  AND s.generation = f.generation AND s.state <> 'cancelled'"
            " WHERE f.state = 'running' AND f.lease_expires < NOW", {})
        taken = []
        for series_id, generation, fire_time, attempts, old_token in expired:
            if series_id not in series_ids or old_token in held:
                continue  # not served here (left to a process that serves it), or running here
            if type(attempts) is not int or not 0 < attempts < ATTEMPTS_LIMIT - 1:
                # A hostile count: counting on would overflow or raise, failing every
                # takeover after it; the fire time ends failed instead.
                self._refuse(series_id, generation, fire_time, attempts, old_token)
                continue
            token = _token(owner, series_id, generation, fire_time, attempts + 1)
            # Conditional on the old token and the expiry: one taker per expired lease.
            if self._sql(
                    f"UPDATE {self._f} SET attempts = attempts + 1, lease_owner = :owner,"
                    " lease_token = :token, lease_expires = NOW + :lease"
                    " WHERE series_id = :id AND generation = :generation AND fire_time = :fire"
                    " AND state = 'running' AND lease_token = :old AND lease_expires < NOW"
                    " RETURNING attempts",
                    {"id": series_id, "generation": generation, "fire": fire_time,
                     "owner": owner, "token": token, "lease": lease, "old": old_token}):
                taken.append(FireClaim(series_id, generation, fire_time, attempts + 1, token))
        return taken

    def _refuse(self, series_id: str, generation: int, fire_time: float, attempts: Any,
                old_token: str) -> None:
        """End an expired claim whose attempts are not a count of claims: failed, logged by
        the one process whose conditional update ends it."""
        if self._sql(
                f"UPDATE {self._f} SET state = 'failed', lease_owner = NULL, lease_token = NULL,"
                " lease_expires = NULL WHERE series_id = :id AND generation = :generation"
                " AND fire_time = :fire AND state = 'running' AND lease_token = :old"
                " AND lease_expires < NOW RETURNING fire_time",
                {"id": series_id, "generation": generation, "fire": fire_time,
                 "old": old_token}):
            log.error("durable series %r: fire time %r refused, its attempts %r are not a count"
                      " of claims (1 to %d): ended failed, not run again", series_id, fire_time,
                      attempts, ATTEMPTS_LIMIT - 2)

    def finish(self, claim: FireClaim, failed: bool) -> bool:
        return bool(self._sql(
            f"UPDATE {self._f} SET state = :state, lease_owner = NULL, lease_token = NULL,"
            " lease_expires = NULL WHERE series_id = :id AND generation = :generation"
            " AND fire_time = :fire AND lease_token = :token AND state = 'running'"
            " RETURNING attempts",
            {"state": FAILED if failed else DONE, "id": claim.series_id,
             "generation": claim.generation, "fire": claim.fire_time, "token": claim.token}))

    def heartbeat(self, owner: str, lease: float, tokens: Sequence[str]) -> list[str]:
        return [token for token in tokens if self._sql(
            f"UPDATE {self._f} SET lease_expires = NOW + :lease WHERE lease_owner = :owner"
            " AND lease_token = :token AND state = 'running' RETURNING attempts",
            {"owner": owner, "token": token, "lease": lease})]

    def prune(self, age: float) -> int:
        [(now,)] = self._sql("SELECT NOW", {})
        before = float(now) - age
        # The floor first, in its own transaction: from then on no claim can be made
        # at or below it, so deleting the claims below it cannot let one run again.
        self._sql(f"UPDATE {self._s} SET floor = :before WHERE created <= :before"
                  " AND (floor IS NULL OR floor < :before)", {"before": before})
        return len(self._sql(
            f"DELETE FROM {self._f} WHERE state <> 'running' AND fire_time <= :before"
            f" AND EXISTS (SELECT 1 FROM {self._s} s WHERE s.series_id = {self._f}.series_id"
            "  AND s.floor >= :before) RETURNING attempts", {"before": before}))

    def fire(self, series_id: str, generation: int, fire_time: float) -> dict[str, Any] | None:
        columns = ("series_id", "generation", "fire_time", "state", "attempts", "lease_owner",
                   "lease_token", "lease_expires")
        found = self._sql(f"SELECT {', '.join(columns)} FROM {self._f} WHERE series_id = :id"
                          " AND generation = :generation AND fire_time = :fire",
                          {"id": series_id, "generation": generation, "fire": fire_time})
        return dict(zip(columns, found[0], strict=True)) if found else None
