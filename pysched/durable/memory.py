"""MemoryStore: the store protocol in a dict, for one process that need not survive.

It is the executable spec of the SQL stores (the same conformance tests run
on all three) and what a DurableScheduler uses when given no store. Every
method takes one lock, so each is atomic like a SQL transaction.

Claims come off a heap of pending rows keyed like the SQL stores' index,
``(run_at, -priority, seq, task_id)``, with lazy deletion: an entry is live
while its row is pending with that ``seq`` (every schedule gives a new one).
A row that turns pending again (a released lease, a hand-back) is pushed
again. So ``schedule`` is O(log n) and a claim O(k log n) amortised for k
rows; ``rows()``, the heartbeat and the lease scans are O(n).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from heapq import heappop, heappush
from typing import Any

from .records import DEFAULT_QUEUE, Claim, NewTask, Outcome, Row, Serves
from .series_table import MemorySeriesTable
from .store import (
    CANCELLED,
    ERROR,
    FAILED,
    FINAL_STATES,
    KNOWN_STATES,
    PENDING,
    ROW_FORMAT,
    RUNNING,
    Store,
    batch_prefix,
    check_key,
    check_tasks,
)

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """A Store kept in memory; ``clock`` (wall seconds) is injectable for tests, and
    ``reference_clock=True`` makes it stand for a server's clock shared by all nodes."""

    def __init__(self, *, clock: Callable[[], float] = time.time,
                 reference_clock: bool = False) -> None:
        self._clock = clock
        # A test can make ``clock`` stand for a database server's clock.
        self.reference_clock = reference_clock
        self._lock = threading.Lock()
        self._rows: dict[str, dict[str, Any]] = {}
        self._due: list[tuple[float, int, int, str]] = []  # (run_at, -priority, seq, task_id)
        self._seq = 0
        self._high: float | None = None
        self._series = MemorySeriesTable(clock)

    def schedule(self, tasks: Sequence[NewTask]) -> list[int]:
        check_tasks(tasks)
        versions = []
        with self._lock:
            for t in tasks:
                self._seq += 1
                row = self._rows.get(t.task_id)
                if row is None:
                    row = self._rows[t.task_id] = {
                        "task_id": t.task_id, "version": 0, "lease_owner": None,
                        "lease_token": None, "lease_expires": None}
                row.update(version=row["version"] + 1, state=PENDING, run_at=t.run_at,
                           priority=t.priority, ref=t.ref, args=t.args, attempts=0,
                           error=None, seq=self._seq, fmt=ROW_FORMAT, queue=t.queue,
                           updated_at=None)
                self._push(row)
                versions.append(row["version"])
        return versions

    def cancel(self, task_id: str, version: int | None = None) -> int | None:
        check_key(task_id, "task_id")
        with self._lock:
            row = self._rows.get(task_id)
            allowed = (PENDING, RUNNING) if version is None else (PENDING,)
            if (row is None or row["state"] not in allowed
                    or version is not None and row["version"] != version):
                return None
            row["version"] += 1
            row["state"] = CANCELLED
            row["updated_at"] = self._clock()
            return int(row["version"])

    def rows(self, task_ids: Sequence[str] | None = None) -> list[Row]:
        with self._lock:
            now = self._clock()
            if task_ids is None:
                found = [r for r in self._rows.values() if r["state"] == PENDING]
            else:
                found = [self._rows[i] for i in dict.fromkeys(task_ids) if i in self._rows]
            return [Row(r["task_id"], r["version"], r["state"], r["run_at"], r["priority"],
                        r["state"] == PENDING and _live(r, now), r["ref"], r["queue"])
                    for r in found]

    def task_ids(self) -> list[str]:
        """Every task id held, in any state (``rows()`` gives the pending ones). O(n)."""
        with self._lock:
            return list(self._rows)

    def claim(self, threshold: float, limit: int, owner: str, lease: float,
              serves: Serves | None = None, batch: str | None = None) -> list[Claim]:
        with self._lock:
            now = self._clock()
            heap = self._due
            due: list[dict[str, Any]] = []
            blocked: list[dict[str, Any]] = []
            seen: set[str] = set()
            matches = None if serves is None else serves.matcher()
            while heap and len(due) < limit:
                entry = heap[0]
                r = self._rows.get(entry[3])
                if (r is None or r["state"] != PENDING or r["seq"] != entry[2]
                        or entry[3] in seen):
                    heappop(heap)  # stale (claimed, replaced, cancelled, finished) or a duplicate
                elif entry[0] > threshold:
                    break
                else:
                    heappop(heap)
                    seen.add(entry[3])
                    if matches is not None and not matches(r["ref"], r["queue"]):
                        blocked.append(r)  # another worker's: left for it
                    else:
                        (blocked if _live(r, now) else due).append(r)
            for r in blocked:  # an older version's lease, or not served: claimable later
                self._push(r)
            claims = []
            batch = batch or batch_prefix(owner)
            for r in due:
                r["attempts"] += 1
                r.update(state=RUNNING, lease_owner=owner, lease_expires=now + lease,
                         lease_token=f"{batch}:{r['version']}:{r['attempts']}:{r['task_id']}")
                claims.append(Claim(r["task_id"], r["version"], r["run_at"], r["priority"],
                                    r["ref"], r["args"], r["attempts"], r["lease_token"],
                                    r["fmt"]))
            return claims

    def finish(self, outcomes: Sequence[Outcome]) -> list[bool]:
        results = []
        with self._lock:
            for o in outcomes:
                row = self._rows.get(o.task_id)
                if row is None or row["lease_token"] != o.token:
                    results.append(False)
                    continue
                recorded = row["version"] == o.version and row["state"] == RUNNING
                if recorded:
                    row.update(state=o.state, updated_at=self._clock())
                    if o.state != PENDING or o.retry_at is not None:
                        row["error"] = o.error
                    else:  # a hand-back unrun gives its attempt back
                        row["attempts"] -= 1
                    if o.retry_at is not None:
                        row["run_at"] = o.retry_at
                row.update(lease_owner=None, lease_token=None, lease_expires=None)
                if row["state"] == PENDING:
                    self._push(row)  # handed back, or a newer version freed by this release
                results.append(recorded)
        return results

    def heartbeat(self, owner: str, lease: float, tokens: Sequence[str] | None = None
                  ) -> list[str]:
        with self._lock:
            expires = self._clock() + lease
            wanted = None if tokens is None else set(tokens)
            held = [r for r in self._rows.values() if r["lease_owner"] == owner
                    and (wanted is None or r["lease_token"] in wanted)]
            for r in held:
                r["lease_expires"] = expires
            return [r["lease_token"] for r in held]

    def release_batch(self, owner: str, batch: str) -> list[str]:
        with self._lock:
            held = [r for r in self._rows.values() if r["lease_owner"] == owner
                    and isinstance(r["lease_token"], str)
                    and r["lease_token"].startswith(batch + ":")]
            for r in held:
                if r["state"] == RUNNING:
                    r["attempts"] -= 1  # never started: the hand-back of an unrun claim
            return self._release(held)

    def requeue_expired(self) -> list[str]:
        with self._lock:
            now = self._clock()
            return self._release([r for r in self._rows.values()
                                  if r["lease_expires"] is not None and r["lease_expires"] < now])

    def repair_leases(self, horizon: float) -> list[str]:
        with self._lock:
            latest = self._clock() + horizon
            return self._release([r for r in self._rows.values() if _unusable(r, latest)])

    def unknown_states(self, limit: int = 10) -> list[tuple[str, str]]:
        with self._lock:
            return [(i, r["state"]) for i, r in self._rows.items()
                    if r["state"] not in KNOWN_STATES][:limit]

    def series_table(self) -> MemorySeriesTable:
        return self._series

    def now(self) -> float:
        return self._clock()

    def release_owner(self, owner: str, expiring_within: float | None = None) -> list[str]:
        with self._lock:
            latest = None if expiring_within is None else self._clock() + expiring_within
            return self._release([r for r in self._rows.values() if r["lease_owner"] == owner
                                  and (latest is None or (r["lease_expires"] is not None
                                                         and r["lease_expires"] < latest))])

    def held_by(self, owner: str) -> list[str]:
        with self._lock:
            return [i for i, r in self._rows.items() if r["lease_owner"] == owner]

    def mark_error(self, task_id: str, version: int, message: str) -> bool:
        with self._lock:
            row = self._rows.get(task_id)
            if row is None or row["version"] != version or row["state"] != PENDING:
                return False
            row.update(state=ERROR, error=message, updated_at=self._clock())
            return True

    def retry(self, task_id: str) -> int | None:
        check_key(task_id, "task_id")
        with self._lock:
            row = self._rows.get(task_id)
            if row is None or row["state"] not in (FAILED, ERROR):
                return None
            self._seq += 1
            row.update(version=row["version"] + 1, state=PENDING, run_at=self._clock(),
                       attempts=0, error=None, seq=self._seq, updated_at=self._clock())
            self._push(row)
            return int(row["version"])

    def prune(self, before: float, limit: int) -> int:
        with self._lock:
            old = [i for i, r in self._rows.items() if r["state"] in FINAL_STATES
                   and (r["updated_at"] if r["updated_at"] is not None else r["run_at"]) < before]
            for task_id in old[:limit]:
                del self._rows[task_id]
            return min(len(old), limit)

    def pending_stats(self, before: float) -> tuple[int, float | None]:
        with self._lock:
            due = [r["run_at"] for r in self._rows.values()
                   if r["state"] == PENDING and r["run_at"] < before]
            return len(due), min(due, default=None)

    def get(self, task_id: str) -> dict[str, Any] | None:
        check_key(task_id, "task_id")
        with self._lock:
            row = self._rows.get(task_id)
            return None if row is None else dict(row)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(Counter(r["state"] for r in self._rows.values()))

    def wall_high_water(self, wall: float | None = None) -> float | None:
        with self._lock:
            if wall is not None and (self._high is None or wall > self._high):
                self._high = wall
            return self._high

    def _release(self, held: list[dict[str, Any]]) -> list[str]:
        """Drop the leases of ``held``; running ones go back to pending. Lock held."""
        for r in held:
            if r["state"] == RUNNING:
                r["state"] = PENDING
            r.update(lease_owner=None, lease_token=None, lease_expires=None)
            if r["state"] == PENDING:
                self._push(r)
        return [r["task_id"] for r in held]

    def _push(self, row: dict[str, Any]) -> None:
        """Put a pending row (back) on the claim heap. Lock held. A duplicate entry is harmless:
        the first one popped claims the row, the other is then stale."""
        heappush(self._due, (row["run_at"], -row["priority"], row["seq"], row["task_id"]))

    # Test hook: write a raw row, as a hostile or corrupted database would hold it.
    def _put_raw(self, **row: Any) -> None:
        with self._lock:
            self._seq += 1
            base = {"version": 1, "state": PENDING, "run_at": 0.0, "priority": 0, "ref": "",
                    "args": '{"args":[],"kwargs":{}}', "attempts": 0, "error": None,
                    "seq": self._seq, "fmt": ROW_FORMAT, "lease_owner": None,
                    "lease_token": None, "lease_expires": None, "queue": DEFAULT_QUEUE,
                    "updated_at": None}
            base.update(row)
            self._rows[str(base["task_id"])] = base
            if all(type(base[k]) in (int, float) for k in ("run_at", "priority", "seq")):
                self._push(base)  # fields too broken to order stay off the heap: rows() finds them


def _unusable(row: dict[str, Any], latest: float) -> bool:
    """True for a running row with no lease, and for a pending or running row under a
    lease no live worker sets: one expiring after ``latest``, or that is not a time."""
    lease = row["lease_expires"]
    if lease is None:
        return bool(row["state"] == RUNNING)
    return row["state"] in (PENDING, RUNNING) and (type(lease) not in (int, float)
                                                   or bool(lease > latest))


def _live(row: dict[str, Any], now: float) -> bool:
    """True while the row's lease has not expired."""
    return row["lease_expires"] is not None and row["lease_expires"] >= now
