"""The thread pool's task events (``pysched.events``), made from the book's records.

Every function here is called outside the pool's lock, and only once the
caller saw that a listener wants the kind (``kind in events.wanted``): with no
listener the pool builds no event and reads no extra clock.

A series is one record for all its runs: its events carry the series' id,
the version of its first run, and ``str(task_id)`` as their name; its runs
that fire the user's function are started, succeeded or failed (a wake-up
that fires nothing is no event).
"""

from __future__ import annotations

import threading
from typing import Any

from .. import events as ev
from .book import EVICTED, REPLACED
from .pool_book import PoolVersion

__all__ = ["emit_ended", "emit_finished", "emit_scheduled", "emit_started"]

SCHEDULER = "pool"


def _name(run: PoolVersion) -> str:
    if run.series is not None:
        return str(run.future.task_id)  # type: ignore[union-attr]
    return ev.task_name(run.fn)


def emit_scheduled(events: ev.Listeners, run: PoolVersion) -> None:
    """``run`` became the pending version of its task id."""
    fut = run.future
    assert fut is not None
    events.emit(ev.TaskEvent(ev.SCHEDULED, fut.task_id, fut.version, _name(run), SCHEDULER,
                             ev.now(), run_at=run.run_at))


def emit_ended(events: ev.Listeners, run: PoolVersion) -> None:
    """``run``'s version ended unstarted (its Future was just cancelled)."""
    reason = run.cancel_reason or ev.CANCELLED
    kind = ev.REPLACED if reason == REPLACED else ev.EVICTED if reason == EVICTED \
        else ev.CANCELLED
    if kind not in events.wanted:
        return
    fut = run.future
    assert fut is not None
    events.emit(ev.TaskEvent(kind, fut.task_id, fut.version, _name(run), SCHEDULER, ev.now(),
                             reason=reason, run_at=run.run_at))


def emit_started(events: ev.Listeners, run: PoolVersion, task: Any, start: float) -> None:
    """``run``'s claimed version (the core's ``task``) started on this worker at ``start``
    (the pool's clock)."""
    fut = run.future
    assert fut is not None
    events.emit(ev.TaskEvent(ev.STARTED, fut.task_id, task.version, _name(run), SCHEDULER,
                             ev.now(), run_at=task.run_at, started_at=start,
                             lateness=start - task.run_at, attempt=1,
                             worker=threading.current_thread().name))


def emit_finished(events: ev.Listeners, run: PoolVersion, task: Any, start: float, end: float,
                  failure: BaseException | None) -> None:
    """``run``'s version (the core's ``task``), started at ``start``, returned or raised
    ``failure`` at ``end``."""
    kind = ev.SUCCEEDED if failure is None else ev.FAILED
    if kind not in events.wanted:
        return
    fut = run.future
    assert fut is not None
    error_type, error, trace = ev.failure_fields(failure)
    events.emit(ev.TaskEvent(
        kind, fut.task_id, task.version, _name(run), SCHEDULER, ev.now(), run_at=task.run_at,
        started_at=start, lateness=start - task.run_at, duration=end - start, attempt=1,
        worker=threading.current_thread().name, error_type=error_type, error=error,
        traceback=trace))
