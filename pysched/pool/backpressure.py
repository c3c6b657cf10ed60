"""Backpressure: a bound on pending versions, and what a full scheduler does.

``max_pending`` bounds the versions waiting in the core (parked ones
included). Replacing the pending version of an id never needs room. When a
new version would pass the bound:

- ``"reject"``: schedule() raises SchedulerFull; nothing changes.
- ``"evict_lowest"``: the pending version of lowest priority (the most
  recently scheduled among equals) is cancelled to make room, its Future
  cancelled with ``cancel_reason == "evicted"``, if the newcomer's priority is
  strictly higher; otherwise the newcomer is refused with SchedulerFull. The
  pending set is mirrored in a StableBoundedPriorityQueue keyed by task id,
  so finding the victim is O(1) and each schedule, claim or cancel pays
  O(log n) more.

The next run of a recurring series obeys the bound too: a refused run ends
the series, whose Future then fails with SchedulerFull.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from .._validate import check_capacity

REJECT = "reject"
EVICT_LOWEST = "evict_lowest"
OVERFLOWS = (REJECT, EVICT_LOWEST)

__all__ = ["EVICT_LOWEST", "OVERFLOWS", "REJECT", "PendingBound", "SchedulerFull"]


class SchedulerFull(RuntimeError):
    """A schedule was refused: ``max_pending`` versions are already pending."""


class PendingBound:
    """Admission control for one scheduler; the owner calls it under its lock."""

    __slots__ = ("max_pending", "policy", "_queue")

    def __init__(self, max_pending: Any, policy: str,
                 queue_factory: Callable[[int], Any] | None) -> None:
        self.max_pending = check_capacity(max_pending, "max_pending")
        self.policy = policy
        self._queue = None
        if policy == EVICT_LOWEST:
            if queue_factory is None:
                raise ValueError("overflow='evict_lowest' needs pysched.StableBoundedPriorityQueue,"
                                 " which this build does not have")
            self._queue = queue_factory(self.max_pending)

    def admit(self, task_id: Hashable, priority: int, pending: int) -> Hashable | None:
        """Admit a new pending version; return the task id to evict, if any.

        Raises SchedulerFull when refused; then nothing changed. O(log n).
        """
        queue = self._queue
        if queue is None:
            if pending >= self.max_pending:
                raise SchedulerFull(f"{pending} tasks are pending (max_pending={self.max_pending})")
            return None
        # The queue keeps the lowest numbers: ~priority (== -1 - priority) turns
        # "higher priority is better" around and stays inside int64.
        dropped = queue.push_or_evict(~priority, task_id, key=task_id)
        if dropped is None:
            return None
        if dropped.reason != "evicted":
            raise SchedulerFull(f"{pending} tasks are pending (max_pending={self.max_pending}) and"
                                f" none has a priority below {priority}")
        return dropped.value  # type: ignore[no-any-return]

    def replace(self, task_id: Hashable, priority: int) -> None:
        """The pending version of ``task_id`` was replaced by one of ``priority``."""
        if self._queue is not None:
            self._queue.reprioritize(task_id, ~priority)

    def discard(self, task_id: Hashable) -> None:
        """The pending version of ``task_id`` was claimed or cancelled."""
        if self._queue is not None:
            self._queue.remove(task_id)
