"""From a scheduler's task events to the four things a metrics backend records.

Every scheduler's ``add_listener(fn, kinds=...)`` calls ``fn(event)`` for the
kinds listed in ``KINDS`` (``pysched.events``). ``EventListener`` turns each
``TaskEvent`` into one or two calls on the ``Recorder`` of its labels, which a
``Sink`` gives once per label set: ``scheduled``, ``started`` (with the start
lateness), ``ran`` (with the run time, for a run that returned or raised) and
``ended`` (with the outcome). Both backends (``prometheus``, ``otel``) are
sinks, so the mapping from events to instruments lives here once.
"""

from __future__ import annotations

from typing import Protocol

from ..events import (
    CANCELLED,
    EVICTED,
    FAILED,
    HANDED_BACK,
    LEASE_LOST,
    REPLACED,
    RETRIED,
    SCHEDULED,
    STARTED,
    SUCCEEDED,
    TaskEvent,
)
from .labels import OTHER, BoundedValues

__all__ = ["KINDS", "OUTCOMES", "EventListener", "Labels", "Recorder", "Sink"]

# (scheduler, queue, name): the labels every task instrument carries.
Labels = tuple[str, str, str]

# The kinds that end a version (or one attempt of it), each counted as an outcome.
OUTCOMES = (SUCCEEDED, FAILED, RETRIED, CANCELLED, REPLACED, EVICTED, LEASE_LOST, HANDED_BACK)
KINDS = (SCHEDULED, STARTED, *OUTCOMES)


class Recorder(Protocol):
    """What a metrics backend records for one set of labels; any thread may call it."""

    def scheduled(self) -> None: ...
    def started(self, lateness: float) -> None: ...
    def ran(self, duration: float) -> None: ...
    def ended(self, outcome: str) -> None: ...


class Sink(Protocol):
    """A metrics backend: the one ``Recorder`` of each set of labels."""

    def recorder(self, labels: Labels) -> Recorder: ...


class EventListener:
    """The listener one attached scheduler calls; ``scheduler`` is its label value.

    Queue and task name pass through the backend's ``BoundedValues``, so a
    task id never becomes a label and the number of series stays bounded.
    """

    __slots__ = ("scheduler", "sink", "names", "queues", "_recorders")

    def __init__(self, scheduler: str, sink: Sink, names: BoundedValues,
                 queues: BoundedValues) -> None:
        self.scheduler = scheduler
        self.sink = sink
        self.names = names
        self.queues = queues
        # The Recorder of each (queue, name) kept as it is: at most max_queues x
        # max_names entries, since a folded one is never cached (and is counted
        # by its BoundedValues each time).
        self._recorders: dict[tuple[str | None, str], Recorder] = {}

    def __call__(self, event: object) -> None:
        # A series' own events share some kinds ("failed"); only task events count here.
        if not isinstance(event, TaskEvent):
            return
        recorder = self._recorders.get((event.queue, event.name))
        if recorder is None:
            recorder = self._recorder_of(event.queue, event.name)
        kind = event.kind
        if kind == SCHEDULED:
            recorder.scheduled()
            return
        if kind == STARTED:
            if event.lateness is not None:
                recorder.started(event.lateness)
            return
        if event.duration is not None:  # succeeded or failed: the function ran
            recorder.ran(event.duration)
        recorder.ended(kind)

    def _recorder_of(self, queue: str | None, name: str) -> Recorder:
        labels = (self.scheduler, self.queues.get(queue), self.names.get(name))
        recorder = self.sink.recorder(labels)
        if OTHER not in labels[1:]:
            self._recorders[(queue, name)] = recorder
        return recorder
