"""What a running task can see of itself: ``current_task()`` in a worker thread.

The run's record lives in a thread-local for the duration of one run, so a
handler can read its attempt number (to make itself idempotent) and whether
``cancel()`` reached it while it runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ._inflight import RunningTask

_current = threading.local()

__all__ = ["current_task", "inside", "running"]


def current_task() -> RunningTask | None:
    """The durable task running in this thread, or None outside one."""
    return getattr(_current, "task", None)


@contextmanager
def running(task: RunningTask, scheduler: object) -> Iterator[None]:
    """Make ``task``, a run of ``scheduler``, the current task of this thread for the
    ``with`` block."""
    _current.task, _current.scheduler = task, scheduler
    try:
        yield
    finally:
        _current.task = _current.scheduler = None


def inside(scheduler: object) -> bool:
    """True when called from a task that ``scheduler`` is running."""
    return current_task() is not None and _current.scheduler is scheduler
