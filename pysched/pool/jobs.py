"""``jobs()`` and ``describe()`` of the in-process schedulers, over their book's versions.

The pool and the asyncio scheduler keep their versions in a
``pysched.pool.book.Book`` (``pending`` and ``running``, by task id). Each
gives ``collect`` a list of ``Held`` read under its own lock (cheap: no user
code, no clock), and then, unlocked, ``build`` turns them into snapshots,
reading each series under its series lock. A task id may have a running and
a pending version at once (the newer waits): both are listed, and
``describe`` gives the newest, the pending one.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

from ..calendar import Reading, Series
from ..calendar.ledger import RunLedger
from ..calendar.snapshot import series_info
from ..jobs import JOB_STATES, Job, JobPage, TaskInfo, wall_datetime

__all__ = ["Held", "build", "check_state", "describe_one"]

PENDING = "pending"
RUNNING = "running"


class Held(NamedTuple):
    """One job as the scheduler's book held it: a task version (``series`` None), or a
    series with its priority and whether a run of it is in progress."""

    task_id: Hashable
    state: str  # "pending" or "running"
    due: float
    priority: int
    version: int | None
    series: Series | None = None


def check_state(state: Any) -> str | None:
    """``state`` if it is None or one of ``JOB_STATES``; else ValueError naming it."""
    if state is not None and state not in JOB_STATES:
        raise ValueError(f"state must be None or one of {', '.join(JOB_STATES)},"
                         f" got {state!r}")
    return state  # type: ignore[no-any-return]


def task_info(held: Held, now: Reading) -> TaskInfo:
    """The snapshot of a held task version at ``now``."""
    return TaskInfo(held.task_id, held.state, held.due,
                    wall_datetime(held.due - now.mono + now.wall), held.priority, held.version,
                    1 if held.state == RUNNING else 0)


def build(held: Iterable[Held], now: Reading, ledger: RunLedger,
          lock: AbstractContextManager[object], state: str | None = None) -> JobPage:
    """The page of every held job in ``state`` (None: any): series first (by their order
    in ``held``), then tasks in due order."""
    series: list[Job] = []
    tasks: list[TaskInfo] = []
    for one in held:
        if one.series is None:
            if state is None or state == one.state:
                tasks.append(task_info(one, now))
            continue
        with lock:
            info = series_info(one.series, now, ledger, one.priority, one.state == RUNNING)
        if state is None or state == info.state or (state == RUNNING and info.running):
            series.append(info)
    tasks.sort(key=lambda t: t.due if t.due is not None else 0.0)
    return JobPage(tuple(series) + tuple(tasks))


def describe_one(found: list[Held], now: Reading, ledger: RunLedger,
                 lock: AbstractContextManager[object]) -> Job | None:
    """The snapshot of the newest of ``found`` (one task id's versions or series, as
    held), None if it is empty."""
    if not found:
        return None
    newest = next((h for h in found if h.state == PENDING), found[0])
    return build([newest], now, ledger, lock).jobs[0]
