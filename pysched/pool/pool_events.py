"""The thread pool's task events (``pysched.events``), made from the book's records.

Every function here is called outside the pool's lock but the ``post_``
ones (which call no user code, and only queue their events), and only once
the caller saw that a listener wants the kind (``kind in events.wanted``):
with no listener the pool builds no event and reads no extra clock.

A series is one record for all its runs: its events carry the series' id,
the version of its first run, and ``str(task_id)`` as their name; its runs
that fire the user's function are started, succeeded or failed (a wake-up
that fires nothing is no event).
"""

from __future__ import annotations

from typing import Any

from .. import events as ev
from .book import EVICTED, REPLACED
from .pool_book import PoolVersion

__all__ = ["emit_ended", "emit_started", "name_of", "post_finished", "post_scheduled"]

SCHEDULER = "pool"


def name_of(run: PoolVersion, task_id: Any) -> str:
    """The event name of ``run``, a version of ``task_id``."""
    if run.series is not None:
        return str(task_id)
    return ev.task_name(run.fn)


def _name(run: PoolVersion) -> str:
    return name_of(run, run.future.task_id)  # type: ignore[union-attr]


def post_scheduled(events: ev.Listeners, run: PoolVersion, name: str) -> None:
    """``run`` just became the pending version of its task id: queue its event (under the
    pool's lock, so that it comes before its start; ``deliver`` it once released)."""
    fut = run.future
    assert fut is not None
    events.post(ev.TaskEvent(ev.SCHEDULED, fut.task_id, fut.version, name, SCHEDULER,
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


def emit_started(events: ev.Listeners, run: PoolVersion, task: Any, start: float,
                 worker: str) -> None:
    """``run``'s claimed version (the core's ``task``) started on the thread ``worker`` at
    ``start`` (the pool's clock)."""
    events.emit(started_event(run, task, start, worker))


def started_event(run: PoolVersion, task: Any, start: float, worker: str) -> ev.TaskEvent:
    fut = run.future
    assert fut is not None
    return (ev.TaskEvent(ev.STARTED, fut.task_id, task.version, _name(run), SCHEDULER,
                             ev.now(), run_at=task.run_at, started_at=start,
                             lateness=start - task.run_at, attempt=1, worker=worker))


def post_finished(events: ev.Listeners, run: PoolVersion, task: Any, start: float,
                  end: float, failure: BaseException | None, worker: str,
                  raised: tuple[str | None, str | None, str | None]) -> None:
    """``run``'s version (the core's ``task``), started at ``start``, returned or ended with
    ``failure`` at ``end``: queue its events (under the pool's lock, where the book
    finished it, so they come before those of a later version of its id). ``raised`` is
    ``failure_fields`` of what fn raised, formatted before the lock; ``failure`` differs
    when the book made its own (a timeout), whose type and message then tell.

    A series' run is told to have started only now, once it is known to have fired its
    function (a wake-up that fired none is no run).
    """
    wanted = events.wanted
    if run.series is not None and ev.STARTED in wanted:
        events.post(started_event(run, task, start, worker))
    kind = ev.SUCCEEDED if failure is None else ev.FAILED
    if kind not in wanted:
        return
    fut = run.future
    assert fut is not None
    error_type, error, trace = raised
    if failure is not None and error_type != type(failure).__qualname__:
        error_type, error = type(failure).__qualname__, str(failure)
    events.post(ev.TaskEvent(
        kind, fut.task_id, task.version, _name(run), SCHEDULER, ev.now(), run_at=task.run_at,
        started_at=start, lateness=start - task.run_at, duration=end - start, attempt=1,
        worker=worker, error_type=error_type, error=error, traceback=trace))
