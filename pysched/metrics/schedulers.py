"""The schedulers a metrics backend watches: their listeners and their gauges.

A scheduler is recognised by its class (or a base class), by module and name,
so that nothing here imports the pool, asyncio or durable packages: a process
that uses one of them loads only that one. Gauges are read through each
scheduler's public ``stats()`` when the backend is collected:

- ``ThreadPoolScheduler``: ``pending``, ``running``, and ``max_workers`` workers;
- ``AsyncScheduler``: ``pending``, ``running``, and ``max_concurrency`` workers
  (none reported when it has no limit);
- ``DurableScheduler``: this process's view: ``local_pending`` rows it holds
  due, ``inflight`` runs, and ``max_workers`` workers (the store's own counts
  are ``pysched status``'s).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

from .labels import BoundedValues
from .listener import KINDS, EventListener, Sink

__all__ = ["Attachments", "Gauges", "Watchable", "scheduler_kind"]


class Watchable(Protocol):
    """What metrics use of a scheduler."""

    def add_listener(self, fn: Callable[[Any], object], *, kinds: Any = ...) -> None: ...
    def remove_listener(self, fn: Callable[[Any], object]) -> None: ...
    def stats(self) -> dict[str, Any]: ...


class Gauges(NamedTuple):
    """The current sizes of one scheduler (or the sum of several under one label)."""

    pending: int
    running: int
    workers: int | None  # None: no limit

    def __add__(self, other: object) -> Gauges:
        if not isinstance(other, Gauges):
            return NotImplemented
        workers = (None if self.workers is None or other.workers is None
                   else self.workers + other.workers)
        return Gauges(self.pending + other.pending, self.running + other.running, workers)


# (module, class) -> (the scheduler label by default, the stats() keys of pending,
# running and workers).
_SCHEDULERS: Mapping[tuple[str, str], tuple[str, tuple[str, str, str]]] = {
    ("pysched.pool.scheduler", "ThreadPoolScheduler"):
        ("pool", ("pending", "running", "max_workers")),
    ("pysched.aio._scheduler", "AsyncScheduler"):
        ("asyncio", ("pending", "running", "max_concurrency")),
    ("pysched.durable.runner", "DurableScheduler"):
        ("durable", ("local_pending", "inflight", "max_workers")),
}


def _entry(scheduler: object) -> tuple[str, tuple[str, str, str]]:
    for cls in type(scheduler).__mro__:
        found = _SCHEDULERS.get((cls.__module__, cls.__qualname__))
        if found is not None:
            return found
    raise TypeError("scheduler must be a ThreadPoolScheduler, AsyncScheduler or"
                    f" DurableScheduler, not {type(scheduler).__name__}")


def scheduler_kind(scheduler: object) -> str:
    """``"pool"``, ``"asyncio"`` or ``"durable"``; TypeError for anything else."""
    return _entry(scheduler)[0]


class _Attached(NamedTuple):
    scheduler: Watchable
    listener: EventListener
    keys: tuple[str, str, str]

    def gauges(self) -> Gauges:
        stats = self.scheduler.stats()
        pending, running, workers = self.keys
        return Gauges(int(stats[pending]), int(stats[running]),
                      None if stats.get(workers) is None else int(stats[workers]))


class Attachments:
    """The schedulers one backend watches, each with its listener and label. Thread-safe."""

    def __init__(self, sink: Sink, max_names: int, max_queues: int) -> None:
        self.sink = sink
        self.names = BoundedValues(max_names, "max_names")
        self.queues = BoundedValues(max_queues, "max_queues")
        self._lock = threading.Lock()
        self._attached: dict[int, _Attached] = {}  # by id(scheduler)

    def attach(self, scheduler: Watchable, label: str | None = None) -> None:
        """Listen to ``scheduler``'s task events and read its gauges, under ``label``
        (default its kind). ValueError if it is attached already."""
        kind, keys = _entry(scheduler)
        if label is None:
            label = kind
        elif not isinstance(label, str) or not label:
            raise TypeError(f"label must be a non-empty str, not {label!r}")
        listener = EventListener(label, self.sink, self.names, self.queues)
        with self._lock:
            if id(scheduler) in self._attached:
                raise ValueError(f"{type(scheduler).__name__} is attached already")
            self._attached[id(scheduler)] = _Attached(scheduler, listener, keys)
        try:
            scheduler.add_listener(listener, kinds=KINDS)
        except BaseException:
            with self._lock:
                del self._attached[id(scheduler)]
            raise

    def detach(self, scheduler: Watchable | None = None) -> None:
        """Stop watching ``scheduler`` (None: every one). ValueError if it is not attached.
        What was counted stays counted."""
        with self._lock:
            if scheduler is None:
                gone = list(self._attached.values())
                self._attached.clear()
            else:
                found = self._attached.pop(id(scheduler), None)
                if found is None:
                    raise ValueError(f"{type(scheduler).__name__} is not attached")
                gone = [found]
        for attached in gone:
            attached.scheduler.remove_listener(attached.listener)

    def gauges(self) -> dict[str, Gauges]:
        """The gauges of every attached scheduler, summed by label."""
        with self._lock:
            attached = list(self._attached.values())
        totals: dict[str, Gauges] = {}
        for one in attached:
            label = one.listener.scheduler
            gauges = one.gauges()
            totals[label] = totals[label] + gauges if label in totals else gauges
        return totals
