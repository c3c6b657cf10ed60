"""From a scheduler's task events to the four things a metrics backend records.

Every scheduler's ``add_listener(fn, kinds=...)`` calls ``fn(event)`` for the
task events listed in ``TASK_KINDS``. ``EventListener`` turns each into one
call on a ``Sink``: ``scheduled``, ``started`` (with the start lateness),
``ran`` (with the run time, for a run that returned or raised) and ``ended``
(with the outcome). Both backends (``prometheus``, ``otel``) are sinks, so the
mapping from events to instruments lives here once.
"""

from __future__ import annotations

from typing import Protocol

from .labels import BoundedValues

__all__ = ["OUTCOMES", "TASK_KINDS", "EventListener", "Labels", "Sink", "TaskEvent"]

# (scheduler, queue, name): the labels every task instrument carries.
Labels = tuple[str, str, str]

# The kinds that end a version (or one attempt of it) and are counted as its outcome.
OUTCOMES = ("succeeded", "failed", "retried", "cancelled", "replaced", "evicted", "lease_lost",
            "handed_back")
TASK_KINDS = ("scheduled", "started", *OUTCOMES)
_RAN = frozenset(("succeeded", "failed", "retried"))  # a run that returned or raised


class TaskEvent(Protocol):
    """The fields of a task event that metrics read."""

    @property
    def kind(self) -> str: ...
    @property
    def queue(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def lateness(self) -> float | None: ...
    @property
    def duration(self) -> float | None: ...


class Sink(Protocol):
    """What a metrics backend records; each call may come from any thread."""

    def scheduled(self, labels: Labels) -> None: ...
    def started(self, labels: Labels, lateness: float) -> None: ...
    def ran(self, labels: Labels, duration: float) -> None: ...
    def ended(self, labels: Labels, outcome: str) -> None: ...


class EventListener:
    """The listener one attached scheduler calls; ``scheduler`` is its label value.

    Queue and task name pass through the backend's ``BoundedValues``, so a
    task id never becomes a label and the number of series stays bounded.
    """

    __slots__ = ("scheduler", "sink", "names", "queues")

    def __init__(self, scheduler: str, sink: Sink, names: BoundedValues,
                 queues: BoundedValues) -> None:
        self.scheduler = scheduler
        self.sink = sink
        self.names = names
        self.queues = queues

    def __call__(self, event: TaskEvent) -> None:
        kind = event.kind
        labels = (self.scheduler, self.queues.get(event.queue), self.names.get(event.name))
        if kind == "scheduled":
            self.sink.scheduled(labels)
            return
        if kind == "started":
            lateness = event.lateness
            if lateness is not None:
                self.sink.started(labels, lateness)
            return
        if kind in _RAN:
            duration = event.duration
            if duration is not None:
                self.sink.ran(labels, duration)
        self.sink.ended(labels, kind)
