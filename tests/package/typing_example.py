"""User code written against pysched's types, kept clean under ``mypy --strict``.

scripts/check_wheels.sh type-checks this file with ``mypy --strict`` against the
installed wheel (which only works when the wheel ships ``py.typed``), and
tests/package/test_typing_example.py runs it on both implementations, so the types it
relies on are the ones the package really has.

The two protocols state what this code needs, as a user would. Assigning the
compiled core's classes (typed by ``pysched/_core.pyi``) and the pure twin's
classes to them, at the bottom, makes mypy fail if the stub and the twin
disagree on any of it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pysched


class TaskLike(Protocol):
    """What this code reads of a claimed task."""

    @property
    def task_id(self) -> Hashable: ...
    @property
    def version(self) -> int: ...
    @property
    def state(self) -> str: ...
    @property
    def fn(self) -> Callable[[], Any]: ...
    @property
    def exception(self) -> BaseException | None: ...


T = TypeVar("T", bound=TaskLike)


class SchedulerLike(Protocol[T]):
    """What this code calls on a scheduler, generic in its task type."""

    def __len__(self) -> int: ...
    def schedule(
        self, task_id: Hashable, run_at: float, priority: int, fn: Callable[[], Any]
    ) -> int: ...
    def cancel(self, task_id: Hashable) -> bool: ...
    def state(self, task_id: Hashable) -> str | None: ...
    def next(self, now: float | None = None) -> T | float | None: ...
    def complete(self, task: T) -> None: ...
    def fail(self, task: T, exception: BaseException) -> None: ...


# (task_id, version, final state, error message or "")
Record = tuple[Hashable, int, str, str]


def run_due(scheduler: SchedulerLike[T], now: float) -> tuple[list[Record], float | None]:
    """Run every task due at ``now``; a task that raises is failed with its error.

    Returns what ran, in order, and how long until the next task is due (None
    when nothing can come due by time alone).
    """
    ran: list[Record] = []
    while True:
        item = scheduler.next(now)
        if item is None or isinstance(item, float):
            return ran, item
        try:
            item.fn()
        except Exception as exc:  # a user's job failing is data, not a crash
            scheduler.fail(item, exc)
        else:
            scheduler.complete(item)
        error = "" if item.exception is None else str(item.exception)
        ran.append((item.task_id, item.version, item.state, error))


def nightly(scheduler: SchedulerLike[T]) -> list[Record]:
    """Schedule a small night of jobs, replace and cancel some, and run them all."""
    done: list[str] = []

    def job(name: str) -> Callable[[], None]:
        return lambda: done.append(name)

    def broken() -> None:
        raise OSError("disk full")

    scheduler.schedule("backup", 2.0, 0, job("backup"))
    scheduler.schedule("report", 1.0, 0, job("report v1"))
    scheduler.schedule("report", 1.0, 0, job("report v2"))  # replaces v1
    scheduler.schedule(("index", 7), 1.0, 5, job("index"))  # same time, higher priority
    scheduler.schedule("vacuum", 1.5, 0, broken)
    scheduler.schedule("spam", 1.0, 9, job("spam"))
    assert scheduler.cancel("spam")
    assert scheduler.state("report") == "pending" and len(scheduler) == 4

    ran: list[Record] = []
    now = 0.0
    while True:
        batch, wait = run_due(scheduler, now)
        ran.extend(batch)
        if wait is None:
            break
        now += wait
    assert done == ["index", "report v2", "backup"]
    return ran


def run_public(clock: Callable[[], float]) -> list[Record]:
    """What most users write: ``pysched.Scheduler``, whichever core it is."""
    return nightly(pysched.Scheduler(clock=clock))


if TYPE_CHECKING:
    from pysched import _core, _scheduler_py

    # Both implementations and the public names satisfy the one protocol.
    def _core_fits(s: _core.Scheduler) -> SchedulerLike[_core.Task]:
        return s

    def _twin_fits(s: _scheduler_py.Scheduler) -> SchedulerLike[_scheduler_py.Task]:
        return s

    def _public_fits(s: pysched.Scheduler) -> SchedulerLike[pysched.Task]:
        return s
