"""Housekeeping: store outcomes, poll, re-read, repair; one thread, one job per step.

Every ``poll_interval``: requeue expired leases, re-read on a SQLite change,
settle Futures of versions run elsewhere, and go on with retention while a
pass left old rows. Every ``resync_interval``: a full re-read of the pending
rows, the wall-clock high-water mark (bounded by the database's clock),
repair of rows running with no usable lease, a report of rows in unknown
states, a retention pass. Each step is guarded: a failing store call is
logged and counted and the next steps run.

Retention deletes ``retention_batch`` rows per transaction and at most
``PRUNE_BATCHES`` batches per pass: on SQLite a write holds the database's
one write lock, so a single delete of a large backlog would hold every claim
and outcome back until it ended. After each batch it waits as long as the
batch took, so that it holds the lock at most half the time: a claim waiting
for the lock (SQLite's busy handler polls it) gets in between two batches.
This thread also writes the outcomes, so a pass is bounded too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ._counters import Counters, guarded
from ._inflight import Inflight
from ._lifecycle import Lifecycle, Wakeup
from ._mirror import Mirror
from ._outcome_queue import OutcomeQueue
from ._outcomes import Outcomes
from ._settings import Settings
from .store import Store
from .timebase import Timebase

__all__ = ["Housekeeper"]

log = logging.getLogger("pysched.durable")

PRUNE_BATCHES = 10  # batches of retention per pass; more at the next poll
MAX_PRUNE_PAUSE = 0.1  # seconds between two batches at most (see the module)


class Housekeeper:
    """The housekeeping thread's loop (``run``); ``shut_down`` runs when it ends.

    It waits on ``wakeup``, rung when a run ends and when the life cycle changes.
    """

    def __init__(self, settings: Settings, store: Store, *, timebase: Timebase,
                 clock: Callable[[], float], lifecycle: Lifecycle, inflight: Inflight,
                 queue: OutcomeQueue, mirror: Mirror, outcomes: Outcomes, counters: Counters,
                 wakeup: Wakeup, shut_down: Callable[[], None]) -> None:
        self._s = settings
        self._store = store
        self._timebase = timebase
        self._clock = clock
        self._lifecycle = lifecycle
        self._inflight = inflight
        self._queue = queue
        self._mirror = mirror
        self._outcomes = outcomes
        self._counters = counters
        self._wakeup = wakeup
        self._shut_down = shut_down
        self._poll_at = time.monotonic() + settings.poll
        self.unclaimed: tuple[int, float | None] = (0, None)  # as of the last resync
        self._prune_left = False  # the last retention pass stopped with old rows left
        self.unknown_reported: set[str] = set()

    def run(self) -> None:
        s = self._s
        try:
            while True:
                drained = self._wait()
                now = time.monotonic()
                self._outcomes.store(now)
                if drained and not self._queue:
                    return  # nothing in flight or queued, and nothing can come: done
                if not self._lifecycle.is_open:
                    continue
                if now >= self._poll_at:
                    self._poll_at = now + s.poll
                    if s.cap == 0:  # a producer: only its Futures to settle
                        self._guarded(self._mirror.settle_watched, "settling Futures")
                    else:
                        self._guarded(self.poll_store, "polling")
                    if self._prune_left:
                        self._guarded(self.prune, "pruning finished rows")
                if s.cap > 0 and now >= self._mirror.next_full():
                    self.resync()
        finally:
            self._shut_down()

    def _wait(self) -> bool:
        """Wait until there is something to do: outcomes to store, a chore due, or all
        drained (closing). Returns whether drained."""
        while True:
            now = time.monotonic()
            # Looked at before the queue: a run queues its outcome before it leaves
            # inflight, so once drained every outcome is in the queue.
            drained = self._lifecycle.drained(self._inflight)
            if self._outcomes.ready(now) or drained and not self._queue:
                return drained
            due = [self._outcomes.retry_at] if self._queue else []
            if self._lifecycle.is_open:
                due.append(self._poll_at)
                if self._s.cap > 0:
                    due.append(self._mirror.next_full())
            if due and min(due) <= now:
                return drained
            self._wakeup.wait(min(due) - now if due else None)

    def _guarded(self, action: Callable[[], object], what: str) -> bool:
        return guarded(action, what, self._counters)

    def poll_store(self) -> None:
        expired = self._store.requeue_expired()
        if expired:
            self._mirror.sync(self._store.rows(expired))
        if not self._store.notifies and self._store.changed():
            self._mirror.resync()
        self._mirror.settle_watched()

    def resync(self) -> None:
        """The once-per-``resync_interval`` chores."""
        self._guarded(self._mirror.resync, "full re-read")
        self._guarded(self.mark_wall_time, "recording the wall-clock high-water mark")
        self._guarded(self.repair, "repairing leases")
        self._guarded(self.look_for_unclaimed, "counting unclaimed rows")
        if self._s.retention is not None:
            self._guarded(self.prune, "pruning finished rows")

    def look_for_unclaimed(self) -> None:
        """Count the pending rows due for more than ``stale_after`` (no worker took them:
        none serves their task name or queue, or all are busy), for stats()."""
        stale_after = self._s.stale_after
        found = self._store.pending_stats(self._store.now() - stale_after)
        self.unclaimed = found
        if found[0]:
            log.warning("%d pending rows are due for more than %s s and unclaimed",
                        found[0], stale_after)

    def prune(self) -> int:
        """Delete finished rows older than ``retention``, ``retention_batch`` rows per
        transaction, at most ``PRUNE_BATCHES`` per pass (while rows are left, the next
        pass runs at the next poll). Returns how many."""
        assert self._s.retention is not None
        batch = self._s.retention_batch
        before = self._store.now() - self._s.retention
        total = 0
        self._prune_left = False  # a failing delete is retried at the next resync only
        for _ in range(PRUNE_BATCHES):
            started = time.monotonic()
            deleted = self._store.prune(before, batch)
            total += deleted
            if deleted < batch:
                break
            time.sleep(min(time.monotonic() - started, MAX_PRUNE_PAUSE))
        else:
            self._prune_left = True
        self._counters.add("pruned", total)
        return total

    def mark_wall_time(self) -> None:
        """Raise the store's high-water mark to this node's wall time, unless this
        node's time is more than ``max_clock_skew`` ahead of the database's clock."""
        wall = self._timebase.to_wall(self._clock())
        if self._store.reference_clock:
            skew = wall - self._store.now()
            if skew > self._s.max_skew:
                self._counters.add("skew_refusals")
                log.error("this node's time is %.3f s ahead of the database's clock (limit %s s):"
                          " not raising the shared wall-clock mark", skew, self._s.max_skew)
                return
        self._store.wall_high_water(wall)

    def repair(self) -> None:
        """Rows running with no lease, or pending or running under an absurd one, are
        pending again with no lease; rows in
        states this version does not know are reported (once per task id)."""
        repaired = self._store.repair_leases(max(100 * self._s.lease, 86_400.0))
        if repaired:
            self._counters.add("repaired", len(repaired))
            log.warning("rows with no usable lease (running with none, or one expiring"
                        " absurdly far ahead) released, pending again: %s", repaired[:20])
            self._mirror.sync(self._store.rows(repaired))
        unknown = [(i, st) for i, st in self._store.unknown_states()
                   if i not in self.unknown_reported]
        if unknown:
            self.unknown_reported.update(i for i, _ in unknown)
            log.error("rows in states this pysched does not know (left alone): %s", unknown)
