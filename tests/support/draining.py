"""Draining a Scheduler (the core's or the twin's) to see what it still held."""

from __future__ import annotations

from typing import Any


def drain_ids(s: Any, now: float = 1e300) -> list[Any]:
    """Claim and complete every task due by ``now``; return their ids in order."""
    out = []
    while True:
        task = s.next(now=now)
        if task is None or isinstance(task, float):
            return out
        out.append(task.task_id)
        s.complete(task)

