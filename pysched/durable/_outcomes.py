"""Outcomes: store the end of each run in batches, then settle its Future.

A batch the store could not take (the connection was lost) is put back and
tried again, first in line, after a backoff: an outcome is dropped only once
the store answered for it. Finishing is conditional on the claim's token, so
trying again is safe: a second try of a recorded outcome changes nothing.
"""

from __future__ import annotations

import logging
from collections import Counter

from ._backoff import Backoff
from ._counters import Counters, guarded
from ._mirror import Mirror
from ._outcome_queue import OutcomeQueue, Queued
from .store import COMPLETED, ERROR, FAILED, PENDING, Store

__all__ = ["Outcomes"]

log = logging.getLogger("pysched.durable")

_COUNTER = {PENDING: "handed_back", COMPLETED: "completed", FAILED: "failed", ERROR: "errors"}


class Outcomes:
    """Drains the outcome queue into the store (called by the housekeeping thread)."""

    def __init__(self, store: Store, queue: OutcomeQueue, mirror: Mirror, counters: Counters,
                 *, poll: float) -> None:
        self._store = store
        self._queue = queue
        self._mirror = mirror
        self._counters = counters
        self._backoff = Backoff(poll / 4, max(poll, 5.0))
        self.retry_at = 0.0  # time.monotonic() before which a failed batch is not retried

    def ready(self, now: float) -> bool:
        """Whether there are outcomes to store at ``now`` (time.monotonic())."""
        return bool(self._queue) and now >= self.retry_at

    def store(self, now: float) -> None:
        """Store every queued outcome in one batch, if ``ready``."""
        if not self.ready(now):
            return
        batch = self._queue.take()
        try:
            recorded = self._store.finish([outcome for outcome, _, _ in batch])
        except Exception:
            delay = self._backoff.failed()
            log.exception("storing %d outcomes failed; retrying in %.2f s", len(batch), delay)
            self._counters.add("store_errors")
            self._queue.put_back(batch)
            self.retry_at = now + delay
            return
        self._queue.stored()
        self._backoff.succeeded()
        self.retry_at = 0.0
        self._settle(batch, recorded)

    def _settle(self, batch: list[Queued], recorded: list[bool]) -> None:
        reread = []
        counts: Counter[str] = Counter()
        for (outcome, _, _), ok in zip(batch, recorded, strict=True):
            key = "retried" if outcome.retry_at is not None else _COUNTER[outcome.state]
            counts[key if ok else "not_recorded"] += 1
            # Not recorded: a newer version may have waited for the lease released
            # just now. A retry: pending again, and no store tells its writer.
            if not ok or outcome.retry_at is not None:
                reread.append(outcome.task_id)
        self._counters.add_all(counts)
        for outcome, future, value in batch:
            if future is None or future.done() or outcome.state == PENDING:
                continue
            if outcome.state == COMPLETED:
                future.set_result(value)
            else:
                future.set_exception(value)
        if reread:
            guarded(lambda: self._mirror.sync(self._store.rows(reread)),
                    "re-reading finished rows", self._counters)
