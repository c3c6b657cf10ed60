"""DurableScheduler's task events (``pysched.events``), as this process sees them.

What another process does to a row (runs it, cancels it) is no event here:
each process tells of its own calls and of the runs it claims. Times are
wall instants (POSIX seconds, the store's timeline); ``worker`` is the
owner id; ``name`` is the registered task name (the row's ``ref``).
``queue`` is the row's queue on ``scheduled``, the task's registered queue
on events of a run (a claim does not carry its row's queue).

Every method is called outside the scheduler's locks, and only after the
caller saw ``self.listeners.wanted`` non-empty: with no listener nothing is
built and no clock is read. Each method checks its own kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import events as ev
from .registry import TaskRegistry
from .store import NewTask

__all__ = ["DurableEvents"]

SCHEDULER = "durable"


class DurableEvents:
    """Builds and emits the task events of one DurableScheduler."""

    def __init__(self, listeners: ev.Listeners, owner: str, registry: TaskRegistry,
                 wall_now: Callable[[], float]) -> None:
        self.listeners = listeners
        self._owner = owner
        self._registry = registry
        self._wall_now = wall_now  # the scheduler's wall instant now (its timebase)

    def _emit(self, kind: str, task_id: str, version: int | None, name: str,
              queue: str | None, *, post_only: bool = False, **fields: Any) -> None:
        event = ev.TaskEvent(kind, task_id, version, name, SCHEDULER, ev.now(), queue, **fields)
        if post_only:
            self.listeners.post(event)
        else:
            self.listeners.emit(event)

    def _queue(self, ref: str) -> str | None:
        return self._registry.options(ref).queue

    def scheduled(self, new: Iterable[tuple[NewTask, int]]) -> None:
        """Versions this process stored: (the task, its version). Posted only, before
        this process can claim them; the caller delivers them then."""
        if ev.SCHEDULED in self.listeners.wanted:
            for task, version in new:
                self._emit(ev.SCHEDULED, task.task_id, version, task.ref, task.queue,
                           run_at=task.run_at, post_only=True)

    def ended(self, kind: str, task_id: str, version: int | None, row: dict[str, Any] | None,
              reason: str, post_only: bool = False) -> None:
        """A version this process cancelled or replaced, with its row if read."""
        if kind in self.listeners.wanted:
            name = "unknown" if row is None else str(row.get("ref"))
            queue = None if row is None else row.get("queue")
            self._emit(kind, task_id, version, name, queue, reason=reason, post_only=post_only)

    def started(self, claim: Any) -> float:
        """A claimed version starts here now: its wall start, read once."""
        start = self._wall_now()
        if ev.STARTED in self.listeners.wanted:
            self._emit(ev.STARTED, claim.task_id, claim.version, claim.ref,
                       self._queue(claim.ref), run_at=claim.run_at, started_at=start,
                       lateness=start - claim.run_at, attempt=claim.attempts,
                       worker=self._owner)
        return start

    def finished(self, claim: Any, start: float | None, failure: BaseException | None,
                 retry_at: float | None) -> None:
        """A started run returned, or raised ``failure`` (and runs again at ``retry_at``)."""
        wanted = self.listeners.wanted
        kind = ev.SUCCEEDED if failure is None else ev.FAILED
        if kind in wanted:
            end = self._wall_now()
            error_type, error, trace = ev.failure_fields(failure)
            self._emit(kind, claim.task_id, claim.version, claim.ref, self._queue(claim.ref),
                       run_at=claim.run_at, started_at=start,
                       lateness=None if start is None else start - claim.run_at,
                       duration=None if start is None else end - start,
                       attempt=claim.attempts, worker=self._owner, error_type=error_type,
                       error=error, traceback=trace)
        if retry_at is not None and ev.RETRIED in wanted:
            self._emit(ev.RETRIED, claim.task_id, claim.version, claim.ref,
                       self._queue(claim.ref), run_at=claim.run_at, attempt=claim.attempts,
                       next_attempt=retry_at, worker=self._owner)

    def handed_back(self, claim: Any, reason: str) -> None:
        """A claim went back to the store unrun (or stopped by the closing pool)."""
        if ev.HANDED_BACK in self.listeners.wanted:
            self._emit(ev.HANDED_BACK, claim.task_id, claim.version, claim.ref,
                       self._queue(claim.ref), reason=reason, run_at=claim.run_at,
                       attempt=claim.attempts, worker=self._owner)

    def lease_lost(self, runs: Iterable[Any]) -> None:
        """The heartbeat found these runs' leases lost (``RunningTask``s)."""
        if ev.LEASE_LOST in self.listeners.wanted:
            for run in runs:
                self._emit(ev.LEASE_LOST, run.task_id, run.version, run.ref,
                           self._queue(run.ref), run_at=run.run_at, attempt=run.attempt,
                           worker=self._owner)
