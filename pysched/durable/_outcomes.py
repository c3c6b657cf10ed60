"""Outcomes: store the end of each run in batches, then settle its Future.

A batch the store could not take (the connection was lost) is kept and tried
again, first in line, after a backoff: an outcome is dropped only once the
store answered for it. Finishing is conditional on the claim's token, so
trying again is safe: a second try of a recorded outcome changes nothing.
"""

from __future__ import annotations

from typing import Any

from ._futures import DurableFuture
from ._mirror import Mirror
from ._shared import Backoff, Shared, log
from .store import COMPLETED, ERROR, FAILED, PENDING, Outcome

__all__ = ["Outcomes"]

_COUNTER = {PENDING: "handed_back", COMPLETED: "completed", FAILED: "failed", ERROR: "errors"}


class Outcomes:
    """Drains ``shared.outcomes`` into the store (called by the housekeeping thread)."""

    def __init__(self, shared: Shared, mirror: Mirror) -> None:
        self._s = shared
        self._mirror = mirror
        self._backoff = Backoff(shared.poll / 4, max(shared.poll, 5.0))
        self.retry_at = 0.0  # time.monotonic() before which a failed batch is not retried

    def store(self, batch: list[tuple[Outcome, DurableFuture | None, Any]], now: float) -> None:
        s = self._s
        try:
            recorded = s.store.finish([o for o, _, _ in batch])
        except Exception:
            delay = self._backoff.failed()
            log.exception("storing %d outcomes failed; retrying in %.2f s", len(batch), delay)
            with s.lock:
                s.counts["store_errors"] += 1
                s.outcomes[:0] = batch
            self.retry_at = now + delay
            return
        self._backoff.succeeded()
        self.retry_at = 0.0
        reread = []
        with s.lock:
            for (outcome, _, _), ok in zip(batch, recorded, strict=True):
                key = "retried" if outcome.retry_at is not None else _COUNTER[outcome.state]
                s.counts[key if ok else "not_recorded"] += 1
                # Not recorded: a newer version may have waited for the lease released
                # just now. A retry: pending again, and no store tells its writer.
                if not ok or outcome.retry_at is not None:
                    reread.append(outcome.task_id)
        for outcome, future, value in batch:
            if future is None or future.done() or outcome.state == PENDING:
                continue
            if outcome.state == COMPLETED:
                future.set_result(value)
            else:
                future.set_exception(value)
        if reread:
            s.guarded(lambda: self._mirror.sync(s.store.rows(reread)), "re-reading finished rows")
