"""What a running task can see of itself: ``current_task()`` in a worker thread.

The record lives in a thread-local for the duration of one run, so a
handler can read its attempt number (to make itself idempotent) and whether
``cancel()`` reached it while it runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import Claim

_current = threading.local()

__all__ = ["RunningTask", "current_task"]


class RunningTask:
    """One claimed version while this process holds its lease.

    ``attempt`` counts the claims of this version (1 on the first run; more
    after a crash or an expired lease: at-least-once). ``cancel_requested``
    turns true when ``cancel(task_id)`` reaches this process while it runs;
    stopping is up to the running code. ``lease_lost`` turns true when the
    heartbeat finds that this run's lease is gone (this process was paused or
    starved for longer than the lease): another worker may run the version
    again, and this run's outcome will not be recorded.
    """

    __slots__ = ("_scheduler", "attempt", "cancel_requested", "lease_lost", "live_until",
                 "run_at", "superseded", "task_id", "token", "version")

    def __init__(self, scheduler: Any, claim: Claim, live_until: float = float("inf")) -> None:
        self._scheduler = scheduler
        self.task_id = claim.task_id
        self.version = claim.version
        self.attempt = claim.attempts
        self.run_at = claim.run_at  # wall-clock instant it was due
        self.token = claim.token
        self.cancel_requested = False
        # A newer version reached this process after the claim: if it has not
        # started yet, it never starts.
        self.superseded = False
        # The local clock's reading before which the lease is known to be live: the
        # send time of the claim or of its latest renewal, plus the lease, less a
        # margin. The run never starts at or after it.
        self.live_until = live_until
        self.lease_lost = False

    def __repr__(self) -> str:
        return f"<RunningTask {self.task_id!r} v{self.version} attempt {self.attempt}>"


def current_task() -> RunningTask | None:
    """The durable task running in this thread, or None outside one."""
    return getattr(_current, "task", None)


@contextmanager
def running(task: RunningTask) -> Iterator[None]:
    """Make ``task`` the current task of this thread for the ``with`` block."""
    _current.task = task
    try:
        yield
    finally:
        _current.task = None


def inside(scheduler: Any) -> bool:
    """True when called from a task that ``scheduler`` is running."""
    task = current_task()
    return task is not None and task._scheduler is scheduler
