"""Housekeeping: store outcomes, poll, re-read, repair; one thread, one job per step.

Every ``poll_interval``: requeue expired leases, re-read on a SQLite change,
settle Futures of versions run elsewhere. Every ``resync_interval``: a full
re-read of the pending rows, the wall-clock high-water mark (bounded by the
database's clock), repair of rows running with no usable lease, a report of
rows in unknown states. Each step is guarded: a failing store call is
logged and counted and the next steps run.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ._mirror import Mirror
from ._outcomes import Outcomes
from ._shared import OPEN, Shared, log

__all__ = ["Housekeeper"]


class Housekeeper:
    """The housekeeping thread's loop (``run``); ``shut_down`` runs when it ends."""

    def __init__(self, shared: Shared, mirror: Mirror, outcomes: Outcomes,
                 shut_down: Callable[[], None]) -> None:
        self._s = shared
        self._mirror = mirror
        self._outcomes = outcomes
        self._shut_down = shut_down
        self.unknown_reported: set[str] = set()

    def run(self) -> None:
        s = self._s
        poll = time.monotonic() + s.poll
        try:
            while True:
                with s.lock:
                    while not self._outcomes_ready() and not self._drained():
                        full = self._mirror.next_full() if s.cap > 0 else poll
                        left = min(poll, full, self._outcomes.retry_at or poll) - time.monotonic()
                        if left <= 0:
                            break
                        s.chores.wait(left)
                    ready = self._outcomes_ready()
                    batch, s.outcomes = (s.outcomes, []) if ready else ([], s.outcomes)
                    done = not s.outcomes and not batch and self._drained()
                now = time.monotonic()
                if batch:
                    self._outcomes.store(batch, now)
                if done:
                    return
                if s.state != OPEN:
                    continue
                if now >= poll:
                    poll = now + s.poll
                    if s.cap == 0:  # a producer: only its Futures to settle
                        s.guarded(self._mirror.settle_watched, "settling Futures")
                    else:
                        s.guarded(self.poll_store, "polling")
                if now >= self._mirror.next_full() and s.cap > 0:
                    self.resync()
        finally:
            self._shut_down()

    def _outcomes_ready(self) -> bool:
        return bool(self._s.outcomes) and time.monotonic() >= self._outcomes.retry_at

    def _drained(self) -> bool:
        """Closing, and nothing can produce an outcome any more. Lock held."""
        s = self._s
        return s.state != OPEN and not s.dispatching and not s.inflight

    def poll_store(self) -> None:
        s = self._s
        expired = s.store.requeue_expired()
        if expired:
            self._mirror.sync(s.store.rows(expired))
        if not s.store.notifies and s.store.changed():
            self._mirror.resync()
        self._mirror.settle_watched()

    def resync(self) -> None:
        """The once-per-``resync_interval`` chores."""
        s = self._s
        s.guarded(self._mirror.resync, "full re-read")
        s.guarded(self.mark_wall_time, "recording the wall-clock high-water mark")
        s.guarded(self.repair, "repairing leases")
        s.guarded(self.look_for_unclaimed, "counting unclaimed rows")
        if s.retention is not None:
            s.guarded(self.prune, "pruning finished rows")

    def look_for_unclaimed(self) -> None:
        """Count the pending rows due for more than ``stale_after`` (no worker took them:
        none serves their task name or queue, or all are busy), for stats()."""
        s = self._s
        found = s.store.pending_stats(s.store.now() - s.stale_after)
        with s.lock:
            s.unclaimed = found
        if found[0]:
            log.warning("%d pending rows are due for more than %s s and unclaimed",
                        found[0], s.stale_after)

    def prune(self, batch: int = 1000, batches: int = 10) -> int:
        """Delete finished rows older than ``retention``, ``batch`` rows per transaction,
        at most ``batches`` per call (the rest at the next resync). Returns how many."""
        s = self._s
        assert s.retention is not None
        before = s.store.now() - s.retention
        total = 0
        for _ in range(batches):
            deleted = s.store.prune(before, batch)
            total += deleted
            if deleted < batch:
                break
        with s.lock:
            s.counts["pruned"] += total
        return total

    def mark_wall_time(self) -> None:
        """Raise the store's high-water mark to this node's wall time, unless this
        node's time is more than ``max_clock_skew`` ahead of the database's clock."""
        s = self._s
        wall = s.timebase.to_wall(s.clock())
        if s.store.reference_clock:
            skew = wall - s.store.now()
            if skew > s.max_skew:
                with s.lock:
                    s.counts["skew_refusals"] += 1
                log.error("this node's time is %.3f s ahead of the database's clock (limit %s s):"
                          " not raising the shared wall-clock mark", skew, s.max_skew)
                return
        s.store.wall_high_water(wall)

    def repair(self) -> None:
        """Rows running with no lease, or pending or running under an absurd one, are
        pending again with no lease; rows in
        states this version does not know are reported (once per task id)."""
        s = self._s
        repaired = s.store.repair_leases(max(100 * s.lease, 86_400.0))
        if repaired:
            with s.lock:
                s.counts["repaired"] += len(repaired)
            log.warning("rows with no usable lease (running with none, or one expiring"
                        " absurdly far ahead) released, pending again: %s", repaired[:20])
            self._mirror.sync(s.store.rows(repaired))
        unknown = [(i, st) for i, st in s.store.unknown_states()
                   if i not in self.unknown_reported]
        if unknown:
            self.unknown_reported.update(i for i, _ in unknown)
            log.error("rows in states this pysched does not know (left alone): %s", unknown)
