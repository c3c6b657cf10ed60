"""Pure-Python Scheduler: the readable spec that the Cython core mirrors.

Heap invariant: ``heap[k] <= heap[2*k+1]`` and ``heap[k] <= heap[2*k+2]`` under
the key ``(run_at, -priority, seq)``: earliest time first, then the highest
priority, then submission order. ``seq`` is unique and only grows, so keys
never tie and task ids and functions are never compared.

Lazy deletion: an entry is live while its slot still names the entry's ``seq``
as the pending one (``slot.pending_seq == seq``). Replacing or cancelling a
task only changes the slot, which makes the old entry stale in O(1). Stale
entries are dropped when they reach the root, or all at once by a rebuild as
soon as they outnumber the live ones (above REBUILD_FLOOR entries), so the heap
never holds more than ``max(2 * live, REBUILD_FLOOR)`` entries.

One version of a task id runs at a time: a newer version that comes due while
an older one still runs is parked (taken out of the heap, its entry kept aside)
and pushed back with its original key when the older version finishes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from heapq import heapify, heappop, heappush
from typing import Any

from ._errors import InvalidTransition
from ._validate import check_callable, check_hashable, check_priority, check_time

PENDING = "pending"
RUNNING = "running"
CANCELLED = "cancelled"
COMPLETED = "completed"
FAILED = "failed"

# Below this many heap entries stale ones are left for the pops to drop:
# rebuilding a tiny heap costs more than it saves.
REBUILD_FLOOR = 64


class Task:
    """One claimed version of a task: what ``Scheduler.next()`` hands out.

    ``state`` is ``"running"`` until the task is finished through its scheduler
    as ``"completed"`` or ``"failed"`` (then ``exception`` holds the error).
    ``cancel_requested`` turns true when ``cancel()`` reaches it while it runs;
    stopping is up to the running code. The attributes are read-only.
    """

    __slots__ = (
        "_task_id",
        "_version",
        "_run_at",
        "_priority",
        "_fn",
        "_state",
        "_cancel_requested",
        "_exception",
    )

    def __init__(self, task_id: Hashable, version: int, run_at: float, priority: int,
                 fn: Callable[[], Any]) -> None:
        self._task_id = task_id
        self._version = version
        self._run_at = run_at
        self._priority = priority
        self._fn = fn
        self._state = RUNNING
        self._cancel_requested = False
        self._exception: BaseException | None = None

    # Typed read-only properties: type checkers read this twin for pysched.Task.
    @property
    def task_id(self) -> Hashable:
        """The task id this version belongs to."""
        return self._task_id

    @property
    def version(self) -> int:
        """The version number, from 1 per task id."""
        return self._version

    @property
    def run_at(self) -> float:
        """When it was due, on the clock's scale."""
        return self._run_at

    @property
    def priority(self) -> int:
        """Its priority; higher runs first."""
        return self._priority

    @property
    def fn(self) -> Callable[[], Any]:
        """The callable to run."""
        return self._fn

    @property
    def state(self) -> str:
        """running, completed or failed."""
        return self._state

    @property
    def cancel_requested(self) -> bool:
        """True once cancel() reached this task while it ran."""
        return self._cancel_requested

    @property
    def exception(self) -> BaseException | None:
        """The error of a failed task."""
        return self._exception

    def __repr__(self) -> str:
        return (f"<Task {self._task_id!r} v{self._version} {self._state}"
                f" run_at={self._run_at!r} priority={self._priority}>")


class _Slot:
    """What the scheduler knows of one task id while a version of it is pending or running."""

    __slots__ = ("task_id", "version", "pending_seq", "fn", "running")

    def __init__(self, task_id: Hashable) -> None:
        self.task_id = task_id
        self.version = 0  # the newest version handed out; a pending version is always the newest
        self.pending_seq = 0  # seq of the pending version's entry; 0 when none is pending
        self.fn: Callable[[], Any] | None = None  # the pending version's callable
        self.running: Task | None = None  # the version now running, if any


_Entry = tuple[float, int, int, _Slot]  # (run_at, -priority, seq, slot)

__all__ = ["REBUILD_FLOOR", "Scheduler", "Task"]


class Scheduler:
    """Cancellable priority scheduler of task versions (single-threaded, never sleeps).

    Tasks run in order of earliest ``run_at``, then highest ``priority``, then
    submission order. Each task id has one valid version at a time: scheduling
    an id again replaces its pending version, which can then never start.

    >>> s = Scheduler(clock=lambda: 0.0)
    >>> s.schedule("a", 1.0, 0, print)
    1
    >>> s.next(now=0.25)
    0.75
    >>> task = s.next(now=1.0)
    >>> task.task_id, task.state
    ('a', 'running')
    >>> s.complete(task)
    >>> s.next(now=2.0) is None
    True
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        check_callable(clock, "clock")
        self._clock = clock
        self._heap: list[_Entry] = []
        self._slot_of: dict[Hashable, _Slot] = {}
        self._parked: dict[_Slot, _Entry] = {}  # due versions waiting for their id's run to end
        self._seq = 0
        self._live = 0  # pending versions, parked ones included
        self._running = 0
        self._stale_discarded = 0
        self._rebuilds = 0
        self._replaced = 0
        self._cancelled = 0
        self._completed = 0
        self._failed = 0

    @property
    def clock(self) -> Callable[[], float]:
        """The clock that ``next()`` reads when it is given no time."""
        return self._clock

    def __len__(self) -> int:
        """The number of pending versions: O(1)."""
        return self._live

    def schedule(self, task_id: Hashable, run_at: float, priority: int,
                 fn: Callable[[], Any]) -> int:
        """Make ``fn`` due at ``run_at`` as the newest version of ``task_id``.

        Returns the new version number. A pending older version is replaced and
        can never start; a running one runs on, and the new version starts only
        after it finishes. O(log n): one heap push; the old entry is left in the
        heap as stale, to be dropped later at O(1) amortised cost.
        """
        check_hashable(task_id, "task_id")
        run_at = check_time(run_at, "run_at")
        priority = check_priority(priority, "priority")
        check_callable(fn, "fn")
        slot = self._slot_of.get(task_id)
        if slot is None:
            slot = self._slot_of[task_id] = _Slot(task_id)
        elif slot.pending_seq:
            self._drop_pending(slot)
            self._replaced += 1
        self._seq += 1
        slot.version += 1
        slot.pending_seq = self._seq
        slot.fn = fn
        self._live += 1
        heappush(self._heap, (run_at, -priority, self._seq, slot))
        self._maybe_rebuild()
        return slot.version

    def cancel(self, task_id: Hashable) -> bool:
        """Cancel the pending version of ``task_id`` and ask its running one to stop.

        Returns False for an id with nothing pending or running. A cancelled
        version never starts; a running one only gets ``cancel_requested`` set
        and counts as running until it is finished. O(1) amortised: the heap
        entry turns stale in place.
        """
        check_hashable(task_id, "task_id")
        slot = self._slot_of.get(task_id)
        if slot is None:
            return False
        if slot.pending_seq:
            self._drop_pending(slot)
            self._cancelled += 1
        if slot.running is not None:
            slot.running._cancel_requested = True
        else:
            del self._slot_of[task_id]
        self._maybe_rebuild()
        return True

    def next(self, now: float | None = None) -> Task | float | None:
        """Claim the head task if it is due, else say how long until it is.

        Returns the claimed ``Task`` (now running) when the head's ``run_at <=
        now``; otherwise the seconds until the earliest pending task is due (a
        float > 0); None when no pending task can come due by time alone
        (nothing is pending, or every pending version waits for its id's
        running version). ``now`` defaults to ``clock()``. A task never starts
        early. O(log n) amortised: stale entries popped on the way were paid
        for when they turned stale.
        """
        now = check_time(self._clock(), "clock()") if now is None else check_time(now, "now")
        heap = self._heap
        while heap:
            run_at, neg_priority, seq, slot = heap[0]
            if slot.pending_seq != seq:
                heappop(heap)
                self._stale_discarded += 1
                continue
            if run_at > now:
                return run_at - now  # > 0: distinct finite floats never subtract to 0
            if slot.running is not None:
                self._parked[slot] = heappop(heap)
                continue
            return self._claim(slot, run_at, -neg_priority)
        return None

    def complete(self, task: Task) -> None:
        """Finish a running task as completed."""
        self._finish(task, COMPLETED, None)

    def fail(self, task: Task, exception: BaseException) -> None:
        """Finish a running task as failed with ``exception``."""
        if not isinstance(exception, BaseException):
            raise TypeError(f"exception must be an exception, not {type(exception).__name__}")
        self._finish(task, FAILED, exception)

    def state(self, task_id: Hashable) -> str | None:
        """The state of the newest version of ``task_id``: pending or running.

        None when nothing of it is pending or running: finished and cancelled
        ids are forgotten, so memory stays proportional to live tasks.
        """
        check_hashable(task_id, "task_id")
        slot = self._slot_of.get(task_id)
        if slot is None:
            return None
        return PENDING if slot.pending_seq else RUNNING

    def stats(self) -> dict[str, int]:
        """Counters and sizes; ``stale`` never exceeds ``max(heap_live, REBUILD_FLOOR)``."""
        heap_live = self._live - len(self._parked)
        return {
            "pending": self._live,
            "running": self._running,
            "parked": len(self._parked),
            "heap_size": len(self._heap),
            "heap_live": heap_live,
            "stale": len(self._heap) - heap_live,
            "stale_discarded": self._stale_discarded,
            "rebuilds": self._rebuilds,
            "scheduled": self._seq,
            "replaced": self._replaced,
            "cancelled": self._cancelled,
            "completed": self._completed,
            "failed": self._failed,
        }

    def _check(self) -> None:
        """Assert the heap, slot and counter invariants (tests call this)."""
        heap = self._heap
        for k in range(1, len(heap)):
            assert heap[(k - 1) // 2][:3] <= heap[k][:3], "heap order"
        live = sum(1 for entry in heap if entry[3].pending_seq == entry[2])
        assert live + len(self._parked) == self._live
        assert len(heap) - live <= max(live, REBUILD_FLOOR), "stale bound"
        for task_id, slot in self._slot_of.items():
            assert slot.task_id is task_id
            assert slot.pending_seq or slot.running is not None, "a forgotten id is kept"

    def _claim(self, slot: _Slot, run_at: float, priority: int) -> Task:
        """Pop the head, which is ``slot``'s pending version, and move it to running."""
        assert slot.fn is not None
        task = Task(slot.task_id, slot.version, run_at, priority, slot.fn)
        heappop(self._heap)
        slot.pending_seq = 0
        slot.fn = None
        slot.running = task
        self._live -= 1
        self._running += 1
        self._maybe_rebuild()
        return task

    def _drop_pending(self, slot: _Slot) -> None:
        """Forget the pending version of ``slot``; its heap entry, if any, turns stale."""
        self._parked.pop(slot, None)
        slot.pending_seq = 0
        slot.fn = None
        self._live -= 1

    def _finish(self, task: Task, state: str, exception: BaseException | None) -> None:
        if not isinstance(task, Task):
            raise TypeError(f"task must be a Task, not {type(task).__name__}")
        slot = self._slot_of.get(task.task_id)
        if task._state != RUNNING or slot is None or slot.running is not task:
            raise InvalidTransition(
                f"cannot finish task {task.task_id!r} version {task.version}: it is "
                f"{task._state}" + ("" if task._state != RUNNING else " in another scheduler"))
        task._state = state
        task._exception = exception
        slot.running = None
        self._running -= 1
        if state == COMPLETED:
            self._completed += 1
        else:
            self._failed += 1
        parked = self._parked.pop(slot, None)
        if parked is not None:
            heappush(self._heap, parked)
        elif not slot.pending_seq:
            del self._slot_of[task.task_id]

    def _maybe_rebuild(self) -> None:
        """Drop every stale entry at once when they outnumber the live ones.

        O(n), amortised O(1).
        """
        heap = self._heap
        heap_live = self._live - len(self._parked)
        if len(heap) > REBUILD_FLOOR and len(heap) - heap_live > heap_live:
            live = [entry for entry in heap if entry[3].pending_seq == entry[2]]
            self._stale_discarded += len(heap) - len(live)
            heapify(live)
            self._heap = live
            self._rebuilds += 1
