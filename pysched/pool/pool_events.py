"""The thread pool's task events (``pysched.events``), made from the book's records.

Every function here is called outside the pool's lock but the ``post_``
ones (which call no user code, and only queue their events), and only once
the caller saw that a listener wants the kind (``kind in events.wanted``):
with no listener the pool builds no event and reads no extra clock.

Events are built by ``pysched.events.new_event``, every field in
``TaskEvent``'s order. A version's name is found once and kept on it
(``event_name``); the wall clock is read once per event.

A series is one record for all its runs: its events carry the series' id,
the version of its first run, and ``str(task_id)`` as their name; its runs
that fire the user's function are started, succeeded or failed (a wake-up
that fires nothing is no event).
"""

from __future__ import annotations

import time
from typing import Any

from .. import events as ev
from ..events import CANCELLED, FAILED, STARTED, SUCCEEDED, TaskEvent
from .book import EVICTED, REPLACED
from .pool_book import PoolVersion

__all__ = ["Finish", "emit_ended", "emit_started", "finish_of", "name_of", "post_finished",
           "post_scheduled"]

SCHEDULER = "pool"
_wall = time.time  # an event's ``at``


def name_of(run: PoolVersion, task_id: Any) -> str:
    """The event name of ``run``, a version of ``task_id``; found once, then kept on it."""
    if run.series is not None:
        return str(task_id)
    name = run.event_name
    if name is None:
        run.event_name = name = ev.task_name(run.fn)
    return name


def post_scheduled(events: ev.Listeners, run: PoolVersion, name: str) -> None:
    """``run`` just became the pending version of its task id: queue its event (under the
    pool's lock, so that it comes before its start; ``deliver`` it once released)."""
    fut = run.future
    assert fut is not None
    events.post(ev.new_event(TaskEvent, (
        ev.SCHEDULED, fut.task_id, fut.version, name, SCHEDULER, _wall(), None, None,
        run.run_at, None, None, None, None, None, None, None, None, None)))


def emit_ended(events: ev.Listeners, run: PoolVersion) -> None:
    """``run``'s version ended unstarted (its Future was just cancelled)."""
    reason = run.cancel_reason or CANCELLED
    kind = ev.REPLACED if reason == REPLACED else ev.EVICTED if reason == EVICTED \
        else CANCELLED
    if kind not in events.wanted:
        return
    fut = run.future
    assert fut is not None
    events.emit(ev.new_event(TaskEvent, (
        kind, fut.task_id, fut.version, name_of(run, fut.task_id), SCHEDULER, _wall(), None,
        reason, run.run_at, None, None, None, None, None, None, None, None, None)))


def emit_started(events: ev.Listeners, run: PoolVersion, task: Any, start: float,
                 worker: str) -> None:
    """``run``'s claimed version (the core's ``task``) started on the thread ``worker`` at
    ``start`` (the pool's clock)."""
    events.emit(_started(run, task, start, worker))


def _started(run: PoolVersion, task: Any, start: float, worker: str) -> TaskEvent:
    fut = run.future
    assert fut is not None
    run_at = task.run_at
    return ev.new_event(TaskEvent, (
        STARTED, fut.task_id, task.version, name_of(run, fut.task_id), SCHEDULER, _wall(),
        None, None, run_at, start, start - run_at, None, 1, None, worker, None, None, None))


class Finish:
    """A run's end as its events tell it, built before the pool's lock (``finish_of``) and
    queued under it (``post_finished``): the lock is held only to queue them."""

    __slots__ = ("started", "ended", "ran_failure", "task", "told")

    def __init__(self, started: TaskEvent | None, ended: TaskEvent | None,
                 ran_failure: BaseException | None, task: Any, told: bool) -> None:
        self.started = started  # a series' run, told to have started only now
        self.ended = ended  # succeeded or failed, as fn's outcome says (None: not wanted)
        self.ran_failure = ran_failure  # what fn raised
        self.task = task  # the run's core Task (the book drops a series' as it finishes)
        self.told = told  # a listener is there, and the run fired the user's function


def finish_of(events: ev.Listeners, run: PoolVersion, failure: BaseException | None,
              start: float, end: float, worker: str) -> Finish | None:
    """What to tell and log of ``run``'s run, started at ``start`` and ended at ``end``
    with ``failure`` (what fn raised, or None); None when there is nothing. Read before
    the lock: once it is released, another worker may start the series' next wake-up on
    this same record (and its Task).

    A series' run is told to have started only now, once it is known to have fired its
    function (a wake-up that fired none is no run, and never fails).
    """
    wanted = events.wanted
    series = run.series
    task = run.task
    if not wanted or not (series is None or series.fired):  # nothing to tell: to log?
        if failure is None and not wanted:
            return None  # with no listener, the book's own failures are not logged
        return Finish(None, None, failure, task, False)
    started = ended = None
    if failure is None:
        if SUCCEEDED in wanted:
            ended = _ended(run, task, SUCCEEDED, start, end, worker, _NO_FAILURE)
        elif series is None and run.timeout is None:
            return None  # a success nobody wants told, which the book cannot fail
    elif FAILED in wanted:
        ended = _ended(run, task, FAILED, start, end, worker, ev.failure_fields(failure))
    if series is not None and STARTED in wanted:
        started = _started(run, task, start, worker)
    return Finish(started, ended, failure, task, True)


_NO_FAILURE = (None, None, None)


def _ended(run: PoolVersion, task: Any, kind: str, start: float, end: float, worker: str,
           raised: tuple[str | None, str | None, str | None]) -> TaskEvent:
    fut = run.future
    assert fut is not None
    run_at = task.run_at
    error_type, error, trace = raised
    return ev.new_event(TaskEvent, (
        kind, fut.task_id, task.version, name_of(run, fut.task_id), SCHEDULER, _wall(), None,
        None, run_at, start, start - run_at, end - start, 1, None, worker, error_type, error,
        trace))


def post_finished(events: ev.Listeners, finish: Finish, run: PoolVersion,
                  failure: BaseException | None, start: float, end: float,
                  worker: str) -> None:
    """Queue ``finish``'s events, under the pool's lock where the book finished ``run``
    with ``failure`` (so they come before those of a later version of its id).

    The book's ``failure`` differs from what fn raised when it made its own (a
    timeout, or a series that cannot go on, of a run that may have returned): the
    event is then failed, with its type and message (fn's, if of the same type) and
    the traceback of what fn raised.
    """
    if not finish.told:
        return
    if finish.started is not None:
        events.post(finish.started)
    ended = finish.ended
    if failure is None or failure is finish.ran_failure:  # as fn's outcome says
        if ended is not None:
            events.post(ended)
        return
    if FAILED not in events.wanted:
        return
    error_type, error, trace = _NO_FAILURE if ended is None else ended[-3:]
    if error_type != type(failure).__qualname__:
        error_type, error = type(failure).__qualname__, str(failure)
    events.post(_ended(run, finish.task, FAILED, start, end, worker, (error_type, error, trace)))
