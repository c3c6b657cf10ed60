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

One version of a task id runs at a time: a newer version that reaches the head
while an older one still runs is parked (taken out of the heap, its entry kept
aside) and pushed back with its original key when the older version finishes.

Task life cycle: ``next()`` claims a pending version as a running Task; a
running Task ends exactly once, by ``complete()`` (completed), ``fail()``
(failed) or ``release()`` (cancelled: it never started). Finishing a Task that
is not running, or not this scheduler's, raises InvalidTransition.

Re-entrancy: a finaliser of a freed object, or a collection that an allocation
starts, may run Python code that calls back in. So each call allocates before
it commits and looks again when such code edited the scheduler (``_edits``
changed), and objects it takes out (an old fn, a forgotten id) are released
only when it returns, once the state is whole. Forgotten slots hold nothing,
so stale heap entries keep no id or fn alive. The twin's dict also hashes an
id while inserting it; the Cython core stores hashes and never calls back then.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Hashable, Iterable
from heapq import heapify, heappop, heappush
from typing import Any

# The state names and REBUILD_FLOOR, shared with the Cython core.
from ._constants import CANCELLED, COMPLETED, FAILED, PENDING, REBUILD_FLOOR, RUNNING
from ._errors import InvalidTransition
from ._validate import (
    check_callable,
    check_capacity,
    check_hashable,
    check_iterable,
    check_priority,
    check_schedule_item,
    check_time,
    not_a_task,
)


class Task:
    """One claimed version of a task: what ``Scheduler.next()`` hands out.

    ``state`` is ``"running"`` until the task is finished through its scheduler
    as ``"completed"``, ``"failed"`` (then ``exception`` holds the error) or
    ``"cancelled"`` (released unstarted).
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
        """running, completed, failed or cancelled."""
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
        self.task_id: Hashable = task_id  # None once forgotten: stale entries keep no id alive
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
    >>> s.peek()
    (1.0, 'a')
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
        self._parked: dict[_Slot, _Entry] = {}  # versions waiting for their id's run to end
        self._seq = 0
        self._edits = 0  # changes with every edit of heap or slots: detects re-entrant edits
        self._live = 0  # pending versions, parked ones included
        self._running = 0
        self._stale_discarded = 0
        self._rebuilds = 0
        self._replaced = 0
        self._cancelled = 0
        self._completed = 0
        self._failed = 0
        self._released = 0

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
        after it finishes. O(log n): one insert; the old entry is left behind
        as stale, to be dropped later at O(1) amortised cost.
        """
        check_hashable(task_id, "task_id")
        run_at = check_time(run_at, "run_at")
        priority = check_priority(priority, "priority")
        check_callable(fn, "fn")
        return self._schedule(task_id, run_at, priority, fn)

    def schedule_many(self, items: Iterable[tuple[Hashable, float, int, Callable[[], Any]]],
                      ) -> list[int]:
        """Schedule each ``(task_id, run_at, priority, fn)`` of ``items`` in order.

        Returns the version numbers, as ``schedule()`` would one by one. All or
        nothing: every item is checked first, and a bad one raises naming its
        index and argument (``items[3].run_at``); a MemoryError raises before
        the first change. Either way nothing is scheduled. O(k log n).
        """
        checked = [check_schedule_item(item, f"items[{index}]")
                   for index, item in enumerate(check_iterable(items, "items"))]
        return self._schedule_many(checked)

    def cancel(self, task_id: Hashable) -> bool:
        """Cancel the pending version of ``task_id`` and ask its running one to stop.

        Returns False for an id with nothing pending or running. A cancelled
        version never starts; a running one only gets ``cancel_requested`` set
        and counts as running until it is finished. O(1) amortised: the heap
        entry turns stale in place.
        """
        check_hashable(task_id, "task_id")
        return self._cancel(task_id, True)

    def cancel_pending(self, task_id: Hashable) -> bool:
        """Cancel the pending version of ``task_id``; a running one is left alone.

        Returns True if a pending version was cancelled, False if none was
        pending (a running version then runs on, ``cancel_requested`` unset).
        O(1) amortised, as ``cancel()``.
        """
        check_hashable(task_id, "task_id")
        return self._cancel(task_id, False)

    def peek(self) -> tuple[float, Hashable] | None:
        """``(run_at, task_id)`` of the version ``next()`` would claim first, or None.

        ``run_at`` is the time it was scheduled for, as a float (an int time
        comes back equal to itself). None when nothing can come due by time
        alone. Like ``next()``, it drops stale entries and parks versions whose
        id is running on the way. O(log n) amortised.
        """
        entry = self._head()
        return None if entry is None else (entry[0], entry[3].task_id)

    def next(self, now: float | None = None) -> Task | float | None:
        """Claim the head task if it is due, else say how long until it is.

        Returns the claimed ``Task`` (now running) when the head's ``run_at <=
        now``; otherwise the seconds until the head is due (a float > 0, at
        most the largest float); None when no pending task can come due by
        time alone (nothing is pending, or every pending version waits for its
        id's running version). The head is the version ``peek()`` names: a
        version whose id is running is parked until that run ends. ``now``
        defaults to ``clock()``. A task never starts early. O(log n) amortised:
        stale entries popped on the way were paid for when they turned stale.
        """
        now = check_time(self._clock(), "clock()") if now is None else check_time(now, "now")
        while True:
            entry = self._head()
            if entry is None:
                return None
            if entry[0] > now:
                return _wait(entry[0], now)
            edits = self._edits
            task = self._new_task(entry)
            if edits == self._edits:  # else a finaliser edited the scheduler: look again
                self._claim(entry[3], task)
                self._maybe_rebuild()
                return task

    def pop_due(self, now: float | None = None, limit: int | None = None) -> list[Task]:
        """Claim up to ``limit`` due tasks (all that are due when None), in ``next()`` order.

        The same as calling ``next(now)`` until it returns no Task or ``limit``
        tasks are claimed, with one reading of the clock. ``limit`` must be an
        int >= 0. A claimed task is never lost: on a MemoryError after some
        claims, those are returned. O(k log n) amortised.
        """
        now = check_time(self._clock(), "clock()") if now is None else check_time(now, "now")
        limit = -1 if limit is None else check_capacity(limit, "limit")
        claimed: list[Any] = []
        # next()'s loop. Room in the list comes before the claim, so a
        # MemoryError never drops a claimed task: with some claimed, the call
        # hands them out and the next call raises.
        while len(claimed) != limit:
            try:
                entry = self._head()
                if entry is None or entry[0] > now:
                    break
                edits = self._edits
                task = self._new_task(entry)
                claimed.append(None)
            except MemoryError:
                if claimed:
                    break
                raise
            if edits == self._edits:
                claimed[-1] = self._claim(entry[3], task)
            else:
                claimed.pop()  # a finaliser edited the scheduler: look again
        # Once a call, as every other call: the claims above may have tipped the stale bound.
        self._maybe_rebuild()
        return claimed

    def complete(self, task: Task) -> None:
        """Finish a running task as completed."""
        self._finish(task, COMPLETED, None)

    def complete_many(self, tasks: Iterable[Task]) -> None:
        """Finish each running task of ``tasks`` as completed, as ``complete()`` would one by one.

        All or nothing: every task is checked first, and one that is not a
        Task (TypeError naming its index), not this scheduler's running task
        or there twice (InvalidTransition) raises before any is finished.
        O(k) amortised: a worker that claimed a batch with ``pop_due()``
        finishes it in one call.
        """
        checked = check_iterable(tasks, "tasks")
        while True:
            # Looking ids up may run their __eq__, which may call back in: then
            # check again before the first change.
            edits = self._edits
            slots = []
            for index, task in enumerate(checked):
                if not isinstance(task, Task):
                    raise not_a_task(task, f"tasks[{index}]")
                slots.append(self._running_slot(task))
            if len(set(map(id, checked))) != len(checked):
                raise InvalidTransition("cannot finish a task twice in one call")
            if edits == self._edits:
                break
        for slot, task in zip(slots, checked, strict=True):
            self._end_run(slot, task, COMPLETED, None)

    def fail(self, task: Task, exception: BaseException) -> None:
        """Finish a running task as failed with ``exception``."""
        if not isinstance(exception, BaseException):
            raise TypeError(f"exception must be an exception, not {type(exception).__name__}")
        self._finish(task, FAILED, exception)

    def release(self, task: Task) -> None:
        """Finish a claimed task that never started, as cancelled.

        For a caller that claimed ``task`` with ``next()`` and then decided not
        to run it (its cancel came first): ``task.state`` becomes
        ``"cancelled"``, it counts as ``released`` rather than completed, and a
        newer version of its id that was parked behind it becomes eligible.
        Raises InvalidTransition unless ``task`` is this scheduler's running task.
        """
        self._finish(task, CANCELLED, None)

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
        """Counters and sizes; ``heap_size`` never exceeds ``max(2 * heap_live, REBUILD_FLOOR)``."""
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
            "released": self._released,
        }

    def _check(self) -> None:
        """Assert the heap, slot and counter invariants (tests call this after each step)."""
        heap = self._heap
        # Heap order: no entry is before its parent.
        for k in range(1, len(heap)):
            assert heap[(k - 1) // 2][:3] <= heap[k][:3], "heap order"
        # Live entries are the pending versions that are not parked, one each.
        live = [entry[3] for entry in heap if entry[3].pending_seq == entry[2]]
        assert len(live) == len(set(map(id, live))), "one live entry a slot"
        assert len(live) + len(self._parked) == self._live, "pending count"
        # The documented bound: stale entries never outnumber live ones above the floor.
        assert len(heap) <= max(2 * len(live), REBUILD_FLOOR), "stale bound"
        # Per slot: a known id is pending or running; a pending one has its fn.
        pending = running = 0
        for task_id, slot in self._slot_of.items():
            assert slot.task_id is task_id, "slot names its id"
            assert slot.pending_seq or slot.running is not None, "a forgotten id is kept"
            assert (slot.fn is not None) == bool(slot.pending_seq), "fn iff pending"
            assert slot.pending_seq <= self._seq, "pending seq"
            pending += bool(slot.pending_seq)
            if slot.running is not None:
                running += 1
                task = slot.running
                assert task._state == RUNNING and task._task_id is task_id, "running task"
                assert task._version <= slot.version, "running version"
        assert pending == self._live and running == self._running, "counters"
        # A parked entry is its slot's pending version, held back by a running one.
        for slot, entry in self._parked.items():
            assert entry[3] is slot and slot.pending_seq == entry[2], "parked entry"
            assert slot.running is not None, "parked behind a run"
            assert self._slot_of.get(slot.task_id) is slot, "parked slot is known"
        # The counters add up: every version handed out is pending, replaced,
        # cancelled, running or finished.
        assert self._seq == (self._live + self._replaced + self._cancelled + self._running
                             + self._completed + self._failed + self._released), "version count"

    # -- internals ---------------------------------------------------------

    def _schedule(self, task_id: Hashable, run_at: float, priority: int,
                  fn: Callable[[], Any]) -> int:
        """schedule() with checked arguments."""
        while True:
            # Allocate first (a collection may run a finaliser that calls back
            # in), then commit only if nothing was edited meanwhile.
            edits = self._edits
            known = self._slot_of.get(task_id)
            slot = _Slot(task_id) if known is None else known
            entry: _Entry = (run_at, -priority, self._seq + 1, slot)
            if edits == self._edits:
                break
        _old_fn = None  # held until return: released once the state is whole
        if known is None:
            self._slot_of[task_id] = slot
        elif slot.pending_seq:
            _old_fn = self._drop_pending(slot)
            self._replaced += 1
        self._seq += 1
        self._edits += 1
        slot.version += 1
        slot.pending_seq = self._seq
        slot.fn = fn
        self._live += 1
        heappush(self._heap, entry)
        self._maybe_rebuild()
        return slot.version

    def _schedule_many(self, items: list[tuple[Hashable, float, int, Callable[[], Any]]],
                       ) -> list[int]:
        """schedule_many() with checked items: all or nothing."""
        while True:
            # Allocate everything first, as _schedule() does: the slots of new
            # ids, the entries, the versions (an id may come more than once).
            edits = self._edits
            fresh: dict[Hashable, _Slot] = {}  # ids new to the scheduler
            newest: dict[_Slot, int] = {}  # each slot's version after its items so far
            slots: list[_Slot] = []
            versions: list[int] = []
            entries: list[_Entry] = []
            for k, (task_id, run_at, priority, _fn) in enumerate(items):
                slot = self._slot_of.get(task_id)
                if slot is None:
                    slot = fresh.get(task_id)
                if slot is None:
                    slot = fresh[task_id] = _Slot(task_id)
                newest[slot] = newest.get(slot, slot.version) + 1
                slots.append(slot)
                versions.append(newest[slot])
                entries.append((run_at, -priority, self._seq + 1 + k, slot))
            fresh_ids = list(fresh)
            old_fns: list[Any] = [None] * len(items)  # held until return, as in _schedule()
            if edits == self._edits:
                break
        # The only steps that may still fail are growing the dict and the heap:
        # undone on failure (deleting from a dict never allocates).
        inserted = 0
        start = len(self._heap)
        try:
            for task_id in fresh_ids:
                self._slot_of[task_id] = fresh[task_id]
                inserted += 1
            self._heap.extend(entries)
        except BaseException:
            for task_id in fresh_ids[:inserted]:
                del self._slot_of[task_id]
            raise
        for k in range(len(items)):
            slot = slots[k]
            if slot.pending_seq:
                old_fns[k] = self._drop_pending(slot)
                self._replaced += 1
            self._seq += 1
            self._edits += 1
            slot.version = versions[k]
            slot.pending_seq = self._seq
            slot.fn = items[k][3]
            self._live += 1
            _sift_up(self._heap, start + k)
        self._maybe_rebuild()
        return versions

    def _cancel(self, task_id: Hashable, stop_running: bool) -> bool:
        """cancel() (``stop_running``) or cancel_pending() with a checked id."""
        slot = self._slot_of.get(task_id)
        if slot is None or not (slot.pending_seq or stop_running):
            return False
        _old_fn = _old_id = None  # held until return: released once the state is whole
        if slot.pending_seq:
            _old_fn = self._drop_pending(slot)
            self._cancelled += 1
        if slot.running is None:
            _old_id = self._forget(slot)
        elif stop_running:
            slot.running._cancel_requested = True
        self._maybe_rebuild()
        return True

    def _head(self) -> _Entry | None:
        """Make the root the version ``next()`` would claim first and return it, or None.

        Drops stale entries and parks versions whose id is running on the way.
        """
        while True:
            heap = self._heap
            if not heap:
                return None
            entry = heap[0]
            slot = entry[3]
            if slot.pending_seq != entry[2]:
                heappop(heap)
                self._stale_discarded += 1
                self._edits += 1
            elif slot.running is not None:
                self._parked[slot] = heappop(heap)
                self._edits += 1
                self._maybe_rebuild()  # parking lowers heap_live: the bound may call for one
            else:
                return entry

    def _new_task(self, entry: _Entry) -> Task:
        """The Task that claiming ``entry``, the root, would hand out (nothing changes yet)."""
        run_at, neg_priority, _seq, slot = entry
        assert slot.fn is not None
        return Task(slot.task_id, slot.version, run_at, -neg_priority, slot.fn)

    def _claim(self, slot: _Slot, task: Task) -> Task:
        """Pop the root, which is ``slot``'s pending version, as the running ``task``.

        The caller calls _maybe_rebuild() before it returns: pop_due() once for all its claims.
        """
        heappop(self._heap)
        self._edits += 1
        slot.pending_seq = 0
        slot.fn = None  # task.fn holds it
        slot.running = task
        self._live -= 1
        self._running += 1
        return task

    def _drop_pending(self, slot: _Slot) -> Callable[[], Any] | None:
        """Forget the pending version of ``slot``; return its fn, for the caller to drop last.

        Its heap entry, if any, turns stale.
        """
        self._parked.pop(slot, None)
        self._edits += 1
        fn = slot.fn
        slot.pending_seq = 0
        slot.fn = None
        self._live -= 1
        return fn

    def _forget(self, slot: _Slot) -> Hashable:
        """Forget the id of ``slot``, now idle; return the id, for the caller to drop last."""
        task_id = slot.task_id
        slot.task_id = None  # its stale entries keep no id alive
        del self._slot_of[task_id]
        self._edits += 1
        return task_id

    def _finish(self, task: Task, state: str, exception: BaseException | None) -> None:
        if not isinstance(task, Task):
            raise not_a_task(task, "task")
        self._end_run(self._running_slot(task), task, state, exception)

    def _running_slot(self, task: Task) -> _Slot:
        """The slot of ``task``; InvalidTransition unless it is this scheduler's running task."""
        slot = self._slot_of.get(task.task_id)
        if task._state != RUNNING or slot is None or slot.running is not task:
            raise InvalidTransition(
                f"cannot finish task {task.task_id!r} version {task.version}: it is "
                f"{task._state}" + ("" if task._state != RUNNING else " in another scheduler"))
        return slot

    def _end_run(self, slot: _Slot, task: Task, state: str,
                 exception: BaseException | None) -> None:
        """Finish ``task``, the running task of ``slot``."""
        task._state = state
        task._exception = exception
        slot.running = None
        self._edits += 1
        self._running -= 1
        if state is COMPLETED:
            self._completed += 1
        elif state is FAILED:
            self._failed += 1
        else:
            self._released += 1
        parked = self._parked.pop(slot, None)
        if parked is not None:
            heappush(self._heap, parked)
        elif not slot.pending_seq:
            self._forget(slot)  # task still holds the id

    def _maybe_rebuild(self) -> None:
        """Drop every stale entry at once when they outnumber the live ones.

        O(n), amortised O(1).
        """
        heap_live = self._live - len(self._parked)
        while len(self._heap) > REBUILD_FLOOR and len(self._heap) - heap_live > heap_live:
            edits = self._edits
            live = [entry for entry in self._heap if entry[3].pending_seq == entry[2]]
            if edits != self._edits:  # a finaliser edited the heap meanwhile: look again
                heap_live = self._live - len(self._parked)
                continue
            self._stale_discarded += len(self._heap) - len(live)
            heapify(live)
            self._heap = live
            self._edits += 1
            self._rebuilds += 1
            return


def _wait(run_at: float, now: float) -> float:
    """Seconds from ``now`` to a later ``run_at``: > 0, and finite even across the whole range."""
    # Distinct finite floats never subtract to 0, but can overflow to inf.
    return min(run_at - now, sys.float_info.max)


def _sift_up(heap: list[Any], pos: int) -> None:
    """Move ``heap[pos]`` up to its place in ``heap[:pos + 1]``, given ``heap[:pos]`` is a heap.

    heapq's own ``_siftdown(heap, 0, pos)``, which heapq keeps private: the
    entries ``schedule_many`` appended at once are placed one by one.
    """
    entry = heap[pos]
    while pos > 0:
        parent = (pos - 1) >> 1
        if not entry < heap[parent]:
            break
        heap[pos] = heap[parent]
        pos = parent
    heap[pos] = entry
