"""Task events: one stream of what happens to each task version, on every scheduler.

``ThreadPoolScheduler``, ``AsyncScheduler`` and ``DurableScheduler`` each
emit a ``TaskEvent`` when a version is scheduled, replaced, cancelled,
evicted, started, succeeded, failed or retried, and (durable) when its lease
is lost or a claim is handed back. Beside them run the series events of
``pysched.calendar`` (``pysched.calendar.Event``: skipped, coalesced, late,
failed, stopped, clock_jump). ``add_listener(fn, kinds=...)`` on each
scheduler takes kinds of both families; ``kinds=None`` means every kind.
The kind ``"failed"`` names both a task's failed run (a ``TaskEvent``) and a
series' (a ``pysched.calendar.Event``): tell them apart by type.

Invariants:

- Nothing is built for a kind no listener wants: an emitter first tests
  ``kind in listeners.wanted`` (a frozenset, replaced whole on every change,
  so the test needs no lock).
- Listeners run outside every lock of the scheduler, on the thread where the
  event happened; one that raises is logged on the scheduler's logger and
  the others still run.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Collection, Hashable, Iterable
from typing import Any, NamedTuple, Protocol

__all__ = ["CANCELLED", "ENDED_KINDS", "EVICTED", "FAILED", "HANDED_BACK", "LEASE_LOST",
           "REPLACED", "RETRIED", "SCHEDULED", "STARTED", "SUCCEEDED", "TASK_KINDS",
           "Listeners", "TaskEvent", "add_listener", "check_kinds", "failure_fields",
           "new_event", "remove_listener", "task_name"]

# What happened to a version:
SCHEDULED = "scheduled"  # it became the pending version of its task id
REPLACED = "replaced"  # a newer version of its id replaced it before it started
CANCELLED = "cancelled"  # it ended unstarted (``reason``: cancelled, closed, timeout...)
EVICTED = "evicted"  # a bounded scheduler dropped it for a higher priority one
STARTED = "started"  # its function was called
SUCCEEDED = "succeeded"  # its function returned
FAILED = "failed"  # its function raised (``error_type``, ``error``, ``traceback``)
RETRIED = "retried"  # it failed and runs again at ``next_attempt`` (durable)
LEASE_LOST = "lease_lost"  # its claim's lease was lost: another worker may run it (durable)
HANDED_BACK = "handed_back"  # its claim went back to the store unrun or unfinished (durable)
TASK_KINDS = (SCHEDULED, REPLACED, CANCELLED, EVICTED, STARTED, SUCCEEDED, FAILED, RETRIED,
              LEASE_LOST, HANDED_BACK)
# The kinds that end a version unstarted: the pool and asyncio emit them when its Future
# is cancelled.
ENDED_KINDS = frozenset({REPLACED, CANCELLED, EVICTED})

# The event ``kinds`` a scheduler emits when it has no listener: none.
_NONE: frozenset[str] = frozenset()


class TaskEvent(NamedTuple):
    """One thing that happened to one version of a task (immutable).

    ``task_id`` and ``version`` name the version (``version`` is None where
    the scheduler has none); ``name`` is a bounded label for metrics, never
    the task id: the callable's ``__qualname__`` (pool, asyncio; a series'
    id as a str) or the registered task name (durable). ``scheduler`` is
    "pool", "asyncio" or "durable"; ``queue`` the durable queue (else None).
    ``at`` is the wall time (``time.time()``) the event was made.

    Times on the scheduler's clock (``run_at``, ``started_at``; the durable
    scheduler's are wall instants): ``lateness`` is ``started_at - run_at``
    (started, succeeded, failed); ``duration`` how long the function ran
    (succeeded, failed; None if no listener wanted ``started`` when it began
    on the pool or asyncio, so the start was not read). ``attempt`` counts
    runs from 1; ``next_attempt`` is the wall instant of a retry (retried).
    ``worker`` is the thread name (pool), None (asyncio) or the durable
    worker's owner id. ``reason`` says why a version ended unstarted
    (cancelled: "cancelled", "closed", "timeout"...) or why a claim was
    handed back.

    A NamedTuple rather than a frozen dataclass: one with a listener builds
    several per task, and a frozen dataclass of 18 fields took five times as
    long to make (``object.__setattr__`` per field), measured with timeit.
    """

    kind: str
    task_id: Hashable
    version: int | None
    name: str
    scheduler: str
    at: float
    queue: str | None = None
    reason: str | None = None
    run_at: float | None = None
    started_at: float | None = None
    lateness: float | None = None
    duration: float | None = None
    attempt: int | None = None
    next_attempt: float | None = None
    worker: str | None = None
    error_type: str | None = None
    error: str | None = None
    traceback: str | None = None


# ``new_event(TaskEvent, fields)``: a TaskEvent of all 18 fields, in order. Emitters build
# theirs so, not by ``TaskEvent(...)``: one with a listener builds several per task, and
# NamedTuple.__new__ (a Python call, then keyword matching) took four to seven times as long
# (timeit). Looked up on this module at each call, so a test can count the events built.
new_event = tuple.__new__


def task_name(fn: Any) -> str:
    """The bounded label of a pool or asyncio task: its callable's ``__qualname__`` (a
    ``functools.partial``'s function's)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    name = getattr(fn, "__qualname__", None)
    if isinstance(name, str):
        return name
    return type(fn).__qualname__  # a partial or another callable object


def failure_fields(exc: BaseException | None) -> tuple[str | None, str | None, str | None]:
    """``error_type``, ``error`` and ``traceback`` of an event, from ``exc`` (None: none)."""
    if exc is None:
        return None, None, None
    return (type(exc).__qualname__, str(exc),
            "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def now() -> float:
    """The wall time of an event."""
    return time.time()


TaskListener = Callable[[TaskEvent], object]


class Listeners:
    """The task-event listeners of one scheduler and the kinds they want; thread-safe.

    ``wanted`` is the union of the kinds they want: an emitter tests it
    before it builds an event. Events are delivered in the order they were
    posted, by one thread at a time: ``post`` only queues one (safe under a
    scheduler's lock: it calls no user code), ``deliver`` hands every queued
    event to each listener that wants its kind, in the order the listeners
    were added; one that raises is logged on ``logger`` and the others still
    run. A scheduler posts an event where the state change it tells of is
    decided (``scheduled``: under its lock, before any worker can start the
    version), so a version's events reach listeners in the order they
    happened, whichever threads made them; the thread that delivers them may
    be another one. A listener that causes an event (a listener that
    schedules) gets it after it returns, never inside itself.
    """

    __slots__ = ("wanted", "_entries", "_lock", "_logger", "_queue", "_delivering")

    def __init__(self, logger: logging.Logger) -> None:
        self.wanted: frozenset[str] = _NONE
        self._entries: tuple[tuple[TaskListener, frozenset[str]], ...] = ()
        self._lock = threading.Lock()
        self._logger = logger
        self._queue: deque[TaskEvent] = deque()  # posted, not yet delivered
        self._delivering = threading.Lock()  # held by the one thread delivering

    def add(self, fn: TaskListener, kinds: frozenset[str]) -> None:
        """Call ``fn(event)`` for each event of ``kinds`` from now on."""
        with self._lock:
            self._entries = (*self._entries, (fn, kinds))
            self._recount()

    def remove(self, fn: TaskListener) -> bool:
        """Stop calling ``fn`` (every time it was added); whether it was there."""
        with self._lock:
            kept = tuple(entry for entry in self._entries if entry[0] != fn)
            found = len(kept) != len(self._entries)
            self._entries = kept
            self._recount()
        return found

    def _recount(self) -> None:
        wanted: set[str] = set()
        for _, kinds in self._entries:
            wanted |= kinds
        self.wanted = frozenset(wanted)

    def post(self, event: TaskEvent) -> None:
        """Queue ``event`` for ``deliver``; calls no user code."""
        self._queue.append(event)

    def emit(self, event: TaskEvent) -> None:
        """``post(event)`` then ``deliver()``."""
        self._queue.append(event)
        self.deliver()

    def deliver(self) -> None:
        """Deliver the queued events, unless another thread is delivering (it delivers
        them); never raises Exception."""
        queue = self._queue
        while queue:  # again once released: an event posted as the deliverer finished
            if not self._delivering.acquire(False):
                return
            try:
                while queue:
                    event = queue.popleft()
                    kind = event[0]  # .kind
                    for fn, kinds in self._entries:  # as they are now: one may add another
                        if kind in kinds:
                            try:
                                fn(event)
                            except Exception:
                                self._logger.exception("a task event listener raised on %r",
                                                       event)
            finally:
                self._delivering.release()


class SeriesHub(Protocol):
    """The series events' hub of a scheduler (``pysched.calendar.EventHub``)."""

    def add_listener(self, fn: Callable[[Any], object],
                     kinds: Collection[str] | None = None) -> None: ...

    def remove_listener(self, fn: Callable[[Any], object]) -> None: ...


def check_kinds(kinds: Iterable[str] | None, known: Collection[str]) -> frozenset[str]:
    """``kinds`` as a frozenset of known kind names (None: all of ``known``)."""
    if kinds is None:
        return frozenset(known)
    if isinstance(kinds, str) or not isinstance(kinds, Iterable):
        raise TypeError(f"kinds must be an iterable of event kinds or None, not"
                        f" {type(kinds).__name__}")
    chosen = frozenset(kinds)
    unknown = sorted(map(repr, chosen - frozenset(known)))
    if unknown:
        raise ValueError(f"kinds has unknown event kinds {', '.join(unknown)}; known:"
                         f" {', '.join(sorted(known))}")
    return chosen


def add_listener(fn: Callable[[Any], object], kinds: Iterable[str] | None,
                 tasks: Listeners, series: SeriesHub, series_kinds: Collection[str]) -> None:
    """A scheduler's ``add_listener``: ``fn`` gets the task events of ``kinds`` from
    ``tasks`` and the series events of ``kinds`` from ``series``; checked first."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, not {type(fn).__name__}")
    chosen = check_kinds(kinds, (*TASK_KINDS, *series_kinds))
    task_kinds = chosen & frozenset(TASK_KINDS)
    for_series = chosen & frozenset(series_kinds)
    if task_kinds:
        tasks.add(fn, task_kinds)
    if for_series:
        series.add_listener(fn, for_series)


def remove_listener(fn: Callable[[Any], object], tasks: Listeners, series: SeriesHub) -> None:
    """A scheduler's ``remove_listener``: KeyError if ``fn`` was not added."""
    found = tasks.remove(fn)
    try:
        series.remove_listener(fn)
    except KeyError:
        if not found:
            raise
