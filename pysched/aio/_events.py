"""AsyncScheduler's task events (``pysched.events``), made from the book's records.

Everything here runs on the loop's thread, and only once the caller saw that
a listener wants the kind (``kind in events.wanted``): with no listener the
scheduler builds no event and reads no extra clock. Times are on
``loop.time()``; ``worker`` is None (there is one loop).

A version that runs a series' fire time has a ``FireKey`` as its task id:
its events carry the series' id as theirs, and ``str(series_id)`` as their
name.

Events are built by ``pysched.events.new_event``, every field in
``TaskEvent``'s order; a version's name is kept on it once found
(``event_name``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable
from typing import Any

from .. import events as ev
from ..events import TaskEvent
from ._version import AioVersion

__all__ = ["emit_ended", "emit_outcome", "emit_scheduled", "emit_started", "name_of"]

SCHEDULER = "asyncio"
_wall = time.time  # an event's ``at``


def _id(task_id: Hashable, series_key: type | None) -> Hashable:
    """The task id an event names: a series' own id for a run of its fire time."""
    if series_key is not None and task_id.__class__ is series_key:
        return task_id[0]  # type: ignore[index,no-any-return]
    return task_id


def name_of(task_id: Hashable, fn: Any, series_key: type | None) -> str:
    """The event name of a version of ``task_id`` running ``fn``."""
    if series_key is not None and task_id.__class__ is series_key:
        return str(task_id[0])  # type: ignore[index]  # the series' id
    return ev.task_name(fn)


def emit_scheduled(events: ev.Listeners, run: AioVersion, fn: Any, run_at: float,
                   series_key: type | None) -> None:
    """``run`` became the pending version of its task id, due at ``run_at``; its name is
    kept on it for the events of its end (the core holds its fn while it is pending)."""
    fut = run.future
    run.event_name = name = name_of(fut.task_id, fn, series_key)
    events.emit(ev.new_event(TaskEvent, (
        ev.SCHEDULED, _id(fut.task_id, series_key), fut.version, name, SCHEDULER, _wall(), None,
        None, run_at, None, None, None, None, None, None, None, None, None)))


def _pending_name(run: AioVersion, series_key: type | None) -> str:
    """The name of a version that may not have been claimed: "unknown" if it was pending
    and scheduled while no listener wanted ``scheduled``."""
    if run.event_name is not None:
        return run.event_name
    task = getattr(run, "task", None)
    if task is not None:
        return name_of(run.future.task_id, task.fn, series_key)
    return "unknown"


def emit_ended(events: ev.Listeners, run: AioVersion, reason: str,
               series_key: type | None) -> None:
    """``run``'s version ended unstarted, for ``reason`` (its Future was just cancelled)."""
    kind = ev.REPLACED if reason == ev.REPLACED else ev.EVICTED if reason == ev.EVICTED \
        else ev.CANCELLED
    if kind not in events.wanted:
        return
    fut = run.future
    events.emit(ev.new_event(TaskEvent, (
        kind, _id(fut.task_id, series_key), fut.version, _pending_name(run, series_key),
        SCHEDULER, _wall(), None, reason, None, None, None, None, None, None, None, None, None,
        None)))


def emit_started(events: ev.Listeners, run: AioVersion, start: float,
                 series_key: type | None) -> None:
    """``run``'s claimed version starts at ``start``: its fn is about to be called."""
    task = run.task
    fut = run.future
    run_at = task.run_at
    events.emit(ev.new_event(TaskEvent, (
        ev.STARTED, _id(fut.task_id, series_key), task.version, _name(run, series_key),
        SCHEDULER, _wall(), None, None, run_at, start, start - run_at, None, 1, None, None, None,
        None, None)))


def _name(run: AioVersion, series_key: type | None) -> str:
    """The name of a claimed version: kept on it if a listener was there when it was
    scheduled, else found now (and kept)."""
    name = run.event_name
    if name is None:
        run.event_name = name = name_of(run.future.task_id, run.task.fn, series_key)
    return name


def emit_outcome(events: ev.Listeners, run: AioVersion, start: float | None, end: float,
                 exc: BaseException | None, series_key: type | None) -> None:
    """``run``'s started version ended at ``end``: it returned, raised ``exc``, or was
    cancelled while it ran (a CancelledError: kind cancelled, reason its stop reason).
    ``start`` is None when no listener wanted events as it started."""
    if exc is None:
        kind = ev.SUCCEEDED
    elif isinstance(exc, asyncio.CancelledError):
        kind = ev.CANCELLED
    else:
        kind = ev.FAILED
    if kind not in events.wanted:
        return
    task = run.task
    fut = run.future
    error_type, error, trace = ev.failure_fields(exc if kind == ev.FAILED else None)
    reason = (run.stop_reason or ev.CANCELLED) if kind == ev.CANCELLED else None
    run_at = task.run_at
    events.emit(ev.new_event(TaskEvent, (
        kind, _id(fut.task_id, series_key), task.version, _name(run, series_key), SCHEDULER,
        _wall(), None, reason, run_at, start, None if start is None else start - run_at,
        None if start is None else end - start, 1, None, None, error_type, error, trace)))
