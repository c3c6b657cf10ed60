# Scheduler: mirrors pysched/_scheduler_py.py, which states the design. Where
# the twin keeps a heap, the core keeps a ladder queue (_scheduler_ladder.pxi,
# on the entries and heaps of _scheduler_heap.pxi) holding the same entries in
# the same order. What it knows of each id lives in its IdTable (_id_table.pxi).
# Its Task is in _scheduler_task.pxi, schedule_many's internals in
# _scheduler_batch.pxi, the claim's prefetching in _scheduler_prefetch.pxi, its
# invariant checks in _scheduler_check.pxi.
#

from time import monotonic as _monotonic

# The constants and state names are the twin's, from the module both read
# (not from the twin itself, so that loading the core does not load the twin).
import pysched._constants as _constants

cdef str _PENDING = _constants.PENDING
cdef str _RUNNING = _constants.RUNNING
cdef str _CANCELLED = _constants.CANCELLED
cdef str _COMPLETED = _constants.COMPLETED
cdef str _FAILED = _constants.FAILED

# Below this many heap entries stale ones are left for the pops to drop.
REBUILD_FLOOR = _constants.REBUILD_FLOOR
cdef Py_ssize_t _REBUILD_FLOOR = REBUILD_FLOOR
cdef double _DBL_MAX = 1.7976931348623157e308


cdef enum:  # the references an id has in the id table, after the id itself
    _FN = 1   # the pending version's callable
    _RUN = 2  # the running Task
    _REFS = 3


cdef enum _Route:  # where Scheduler._push() puts an entry, and the room reserved for it
    _ROUTED  # where its key belongs: _ladder_reserve()
    _EARLY   # the early heap: _reserve_early()
    _BATCH   # top, or the early heap below top_start: _ladder_reserve_batch()


cdef inline double _wait(double run_at, double now) noexcept nogil:
    # Distinct finite doubles never subtract to 0, but can overflow to inf.
    cdef double seconds = run_at - now
    return seconds if seconds <= _DBL_MAX else _DBL_MAX


@cython.final
@cython.no_gc_clear  # the per-slot lists must outlive any finaliser that calls back in
cdef class Scheduler:
    """Cancellable priority scheduler of task versions (single-threaded, never sleeps).

    Tasks run in order of earliest ``run_at``, then highest ``priority``, then
    submission order. Each task id has one valid version at a time: scheduling
    an id again replaces its pending version, which can then never start.
    """
    cdef object _clock
    cdef Ladder _pending       # the entries of pending versions, stale ones included (the twin's heap)
    # Task id -> slot, for ids with a version pending or running; with each a
    # SlotRecord and two references: the pending version's fn (_FN) and the
    # running Task (_RUN), each None when there is none.
    cdef IdTable _ids
    cdef dict _parked          # slot -> (run_at, priority, seq) of a version waiting for its id's run
    cdef uint64_t _seq
    cdef uint64_t _edits       # changes with every edit of the heap or the slots: detects re-entrant edits
    cdef Py_ssize_t _live      # pending versions, parked ones included
    cdef Py_ssize_t _running
    cdef Py_ssize_t _stale_discarded
    cdef Py_ssize_t _rebuilds
    cdef Py_ssize_t _replaced
    cdef Py_ssize_t _cancelled
    cdef Py_ssize_t _completed
    cdef Py_ssize_t _failed
    cdef Py_ssize_t _released

    def __cinit__(self):
        self._ids = IdTable(sizeof(SlotRecord), _REFS)
        self._parked = {}

    # The default is time.monotonic itself, as in the twin (None is refused).
    def __init__(self, *, clock=_monotonic):
        check_callable(clock, "clock")
        self._clock = clock

    def __dealloc__(self):
        _ladder_free(&self._pending)

    @property
    def clock(self):
        """The clock that ``next()`` reads when it is given no time."""
        return self._clock

    def __len__(self):
        """The number of pending versions: O(1)."""
        return self._live

    def schedule(self, task_id, run_at, priority, fn):
        """schedule(task_id, run_at, priority, fn) -> int

        Make ``fn`` due at ``run_at`` as the newest version of ``task_id``.

        Returns the new version number. A pending older version is replaced and
        can never start; a running one runs on, and the new version starts only
        after it finishes. O(log n): one insert; the old entry is left behind
        as stale, to be dropped later at O(1) amortised cost.
        """
        cdef Py_hash_t h = _check_hashable(task_id, "task_id")
        cdef double when = _check_time(run_at, "run_at")
        cdef int64_t prio = _check_priority(priority, "priority")
        _check_callable(fn, "fn")
        return self._schedule(task_id, h, when, prio, fn)

    def schedule_many(self, items):
        """schedule_many(items) -> list[int]

        Schedule each ``(task_id, run_at, priority, fn)`` of ``items`` in order.

        Returns the version numbers, as ``schedule()`` would one by one. All or
        nothing: every item is checked first, and a bad one raises naming its
        index and argument (``items[3].run_at``); a MemoryError raises before
        the first change. Either way nothing is scheduled. O(k log n).
        """
        cdef list checked = check_iterable(items, "items")
        cdef Py_ssize_t n = len(checked)
        cdef size_t buckets = 8
        while buckets < <size_t>(2 * n):
            buckets *= 2
        cdef BatchItem* batch = <BatchItem*>PyMem_Malloc((n + 1) * sizeof(BatchItem))
        cdef int32_t* index = <int32_t*>PyMem_Malloc(buckets * sizeof(int32_t))
        try:
            if batch == NULL or index == NULL:
                raise MemoryError()
            # Every item is checked before the first is scheduled: all or nothing.
            _check_items(checked, batch)
            return _schedule_many(self, checked, batch, index, buckets)
        finally:
            PyMem_Free(batch)
            PyMem_Free(index)

    def cancel(self, task_id):
        """cancel(task_id) -> bool

        Cancel the pending version of ``task_id`` and ask its running one to stop.

        Returns False for an id with nothing pending or running. A cancelled
        version never starts; a running one only gets ``cancel_requested`` set
        and counts as running until it is finished. O(1) amortised: the heap
        entry turns stale in place.
        """
        return self._cancel(task_id, _check_hashable(task_id, "task_id"), True)

    def cancel_pending(self, task_id):
        """cancel_pending(task_id) -> bool

        Cancel the pending version of ``task_id``; a running one is left alone.

        Returns True if a pending version was cancelled, False if none was
        pending (a running version then runs on, ``cancel_requested`` unset).
        O(1) amortised, as ``cancel()``.
        """
        return self._cancel(task_id, _check_hashable(task_id, "task_id"), False)

    def peek(self):
        """peek() -> tuple[float, Hashable] | None

        ``(run_at, task_id)`` of the version ``next()`` would claim first, or None.

        ``run_at`` is the time it was scheduled for, as a float (an int time
        comes back equal to itself). None when nothing can come due by time
        alone. Like ``next()``, it drops stale entries and parks versions whose
        id is running on the way. O(log n) amortised.
        """
        cdef HeapEntry* head
        if not self._head():
            return None
        head = _ladder_head(&self._pending)
        return (_key_time(head.key), self._ids.key(head.slot))

    def next(self, now=None):
        """next(now=None) -> Task | float | None

        Claim the head task if it is due, else say how long until it is.

        Returns the claimed ``Task`` (now running) when the head's ``run_at <=
        now``; otherwise the seconds until the head is due (a float > 0, at
        most the largest float); None when no pending task can come due by
        time alone (nothing is pending, or every pending version waits for its
        id's running version). The head is the version ``peek()`` names: a
        version whose id is running is parked until that run ends. ``now``
        defaults to ``clock()``. A task never starts early. O(log n) amortised:
        stale entries popped on the way were paid for when they turned stale.
        """
        cdef double t
        if now is None:
            t = _check_time(self._clock(), "clock()")
        else:
            t = _check_time(now, "now")
        return self._next(t)

    def pop_due(self, now=None, limit=None):
        """pop_due(now=None, limit=None) -> list[Task]

        Claim up to ``limit`` due tasks (all that are due when None), in ``next()`` order.

        The same as calling ``next(now)`` until it returns no Task or ``limit``
        tasks are claimed, with one reading of the clock. ``limit`` must be an
        int >= 0. A claimed task is never lost: on a MemoryError after some
        claims, those are returned. O(k log n) amortised.
        """
        cdef double t
        cdef Py_ssize_t cap = -1
        cdef list claimed = []
        if now is None:
            t = _check_time(self._clock(), "clock()")
        else:
            t = _check_time(now, "now")
        cdef uint64_t due = _time_key(t)
        cdef Py_ssize_t n = 0
        cdef uint64_t edits
        cdef Task task
        if limit is not None:
            cap = check_capacity(limit, "limit")
        # next()'s loop, without its per-call costs. Room in the list comes
        # before the claim, so a MemoryError never drops a claimed task: with
        # some claimed, the call hands them out and the next call raises.
        while n != cap:
            try:
                if not self._head() or _ladder_head(&self._pending).key > due:
                    break
                edits = self._edits
                task = Task.__new__(Task)  # may start a collection whose finalisers call back in
                claimed.append(None)
            except MemoryError:
                if n:
                    break
                raise
            if edits == self._edits:
                claimed[n] = self._claim(task)
                n += 1
            else:
                claimed.pop()  # a finaliser edited the scheduler: look again
        # Once a call, as every other call: the claims above may have tipped the stale bound.
        self._maybe_rebuild()
        return claimed

    def complete(self, Task task not None):
        """complete(task) -> None

        Finish a running task as completed.
        """
        self._finish(task, _COMPLETED, None)

    def complete_many(self, tasks):
        """complete_many(tasks) -> None

        Finish each running task of ``tasks`` as completed, as ``complete()`` would one by one.

        All or nothing: every task is checked first, and one that is not a
        Task (TypeError naming its index), not this scheduler's running task
        or there twice (InvalidTransition) raises before any is finished.
        O(k) amortised: a worker that claimed a batch with ``pop_due()``
        finishes it in one call.
        """
        # A copy: the calls below must see the tasks that were checked.
        cdef list checked = list(<list>tasks) if type(tasks) is list else check_iterable(tasks, "tasks")
        cdef Py_ssize_t k, j, n = len(checked)
        cdef Task task
        # Room for every parked version to return first: nothing below allocates
        # unless it raises, so no finaliser can run between the checks and the changes.
        if self._parked:
            _reserve_early(&self._pending, n)
        # As the twin: each task's type and state first, a task given twice last.
        # An error's message may run the caller's code (an id's repr), so the
        # marks come after, in a pass that runs none.
        for k in range(n):
            if type(checked[k]) is not Task:
                raise not_a_task(checked[k], f"tasks[{k}]")
            self._check_running(<Task>checked[k])
        for k in range(n):
            task = <Task>checked[k]
            if task._in_batch:
                for j in range(k):  # before the error is made: its allocation may call back
                    (<Task>checked[j])._in_batch = False
                raise InvalidTransition("cannot finish a task twice in one call")
            task._in_batch = True  # a running task is in one batch at a time
        # Each task holds its id, so the ids that _end_run forgets free nothing here.
        for k in range(n):
            task = <Task>checked[k]
            task._in_batch = False
            self._end_run(task, _COMPLETED, None)

    def fail(self, Task task not None, exception):
        """fail(task, exception) -> None

        Finish a running task as failed with ``exception``.
        """
        if not isinstance(exception, BaseException):
            raise TypeError(f"exception must be an exception, not {type(exception).__name__}")
        self._finish(task, _FAILED, exception)

    def release(self, Task task not None):
        """release(task) -> None

        Finish a claimed task that never started, as cancelled.

        For a caller that claimed ``task`` with ``next()`` and then decided not
        to run it (its cancel came first): ``task.state`` becomes
        ``"cancelled"``, it counts as ``released`` rather than completed, and a
        newer version of its id that was parked behind it becomes eligible.
        Raises InvalidTransition unless ``task`` is this scheduler's running task.
        """
        self._finish(task, _CANCELLED, None)

    def state(self, task_id):
        """state(task_id) -> str | None

        The state of the newest version of ``task_id``: pending or running.

        None when nothing of it is pending or running: finished and cancelled
        ids are forgotten, so memory stays proportional to live tasks.
        """
        cdef Py_ssize_t slot = self._ids.find(task_id, _check_hashable(task_id, "task_id"))
        if slot < 0:
            return None
        return _PENDING if self._rec(slot).pending_seq else _RUNNING

    def stats(self):
        """stats() -> dict

        Counters and sizes; ``heap_size`` never exceeds ``max(2 * heap_live, REBUILD_FLOOR)``.
        """
        cdef Py_ssize_t heap_live = self._live - len(self._parked)
        return {
            "pending": self._live,
            "running": self._running,
            "parked": len(self._parked),
            "heap_size": self._pending.size,
            "heap_live": heap_live,
            "stale": self._pending.size - heap_live,
            "stale_discarded": self._stale_discarded,
            "rebuilds": self._rebuilds,
            "scheduled": self._seq,
            "replaced": self._replaced,
            "cancelled": self._cancelled,
            "completed": self._completed,
            "failed": self._failed,
            "released": self._released,
        }

    def _check(self):
        """Assert the heap, slot and counter invariants (tests call this after each step)."""
        _check_scheduler(self)

    # -- internals ---------------------------------------------------------

    cdef object _schedule(self, object task_id, Py_hash_t h, double run_at, int64_t priority,
                          object fn):
        """schedule() with checked arguments."""
        cdef Py_ssize_t slot
        cdef uint64_t edits
        cdef object old_fn = None  # released on return, once the state is whole
        cdef SlotRecord* state
        while True:
            # find() may run a key's __eq__, and growing may start a collection
            # whose finalisers call back in: then look again before committing.
            edits = self._edits
            slot = self._ids.find(task_id, h)
            _ladder_reserve(&self._pending, _time_key(run_at))
            if edits == self._edits:
                break
        if slot < 0:
            slot = self._ids.add(task_id, h)  # the first change: a MemoryError leaves all as it was
            self._rec(slot).version = 0
            self._rec(slot).pending_seq = 0
        elif self._rec(slot).pending_seq:
            old_fn = self._drop_pending(slot)
            self._replaced += 1
        self._seq += 1
        self._edits += 1
        state = self._rec(slot)
        state.version += 1
        state.pending_seq = self._seq
        self._ids.set_ref(slot, _FN, fn)
        self._live += 1
        self._push(run_at, priority, self._seq, slot, _ROUTED)
        self._maybe_rebuild()
        return state.version

    cdef object _cancel(self, object task_id, Py_hash_t h, bint stop_running):
        """cancel() (``stop_running``) or cancel_pending() with a hashed id."""
        cdef Py_ssize_t slot = self._ids.find(task_id, h)
        cdef object old_fn = None  # released on return, once the state is whole
        cdef object old_id = None
        if slot < 0 or not (self._rec(slot).pending_seq or stop_running):
            return False
        self._ids.prefetch_key(slot)  # forgetting the id may free it: start on that now
        if self._rec(slot).pending_seq:
            old_fn = self._drop_pending(slot)
            self._cancelled += 1
        running = self._ids.ref(slot, _RUN)
        if running is None:
            old_id = self._forget(slot)
        elif stop_running:
            (<Task>running).cancel_requested = True
        self._maybe_rebuild()
        return True

    cdef inline SlotRecord* _rec(self, Py_ssize_t slot) noexcept:
        return <SlotRecord*>self._ids.record(slot)

    cdef inline bint _is_live(self, const HeapEntry* entry) noexcept:
        return _entry_live(entry, <const SlotRecord*>self._ids.records, self._ids.slots)

    cdef int _head(self) except -1:
        """Make the ladder's head the version ``next()`` would claim first; return 1 if there is one.

        Drops stale entries and parks versions whose id is running on the way.
        Moving buckets down counts as an edit: it changes where inserts go.
        """
        cdef uint64_t moves = self._pending.moves
        cdef int found = self._find_head()
        if self._pending.moves != moves:
            self._edits += 1
            _prefetch_new_run(self)
        return found

    cdef int _find_head(self) except -1:
        cdef HeapEntry* entry
        cdef HeapEntry head
        cdef uint64_t edits
        cdef object parked
        while True:
            entry = _ladder_head(&self._pending)
            if entry == NULL:
                return 0
            head = entry[0]
            if not self._is_live(&head):
                _ladder_pop_head(&self._pending)
                self._stale_discarded += 1
                self._edits += 1
            elif self._ids.ref(head.slot, _RUN) is not None:
                edits = self._edits
                parked = (_key_time(head.key), head.priority, head.seq)  # may start a collection
                if edits != self._edits:
                    continue  # a finaliser edited the scheduler: look again
                # Inserting boxes the slot and may grow the dict: no collection
                # can start there, and a MemoryError comes before any change.
                self._parked[head.slot] = parked
                _ladder_pop_head(&self._pending)
                self._edits += 1
                self._maybe_rebuild()  # parking lowers heap_live: the bound may call for one
            else:
                return 1

    cdef object _next(self, double now):
        """next() at a checked time."""
        cdef HeapEntry* head
        cdef uint64_t edits
        cdef Task task
        while self._head():
            head = _ladder_head(&self._pending)
            if head.key > _time_key(now):
                return _wait(_key_time(head.key), now)
            edits = self._edits
            task = Task.__new__(Task)  # may start a collection whose finalisers call back in
            if edits == self._edits:
                self._claim(task)
                self._maybe_rebuild()
                return task
        return None

    cdef Task _claim(self, Task task):
        """Take the head, a pending version whose id is idle, as the running ``task``.

        The caller calls _maybe_rebuild() before it returns: pop_due() once for all its claims.
        """
        cdef HeapEntry head = _ladder_head(&self._pending)[0]
        cdef Py_ssize_t slot = head.slot
        _prefetch_next_claim(self, slot)
        _ladder_pop_head(&self._pending)
        self._edits += 1
        task.task_id = self._ids.key(slot)
        task._version = self._rec(slot).version
        task.run_at = _key_time(head.key)
        task.priority = head.priority
        task.fn = self._ids.ref(slot, _FN)
        task.state = _RUNNING
        task._slot = slot
        self._rec(slot).pending_seq = 0
        self._ids.set_ref(slot, _FN, None)  # task.fn holds it
        self._ids.set_ref(slot, _RUN, task)
        self._live -= 1
        self._running += 1
        _prefetch_head_objects(self)
        return task

    cdef object _drop_pending(self, Py_ssize_t slot):
        """Forget the pending version of ``slot``; return its fn, for the caller to drop last.

        Its heap entry, if any, turns stale.
        """
        if self._parked:
            self._parked.pop(slot, None)
        self._edits += 1
        fn = self._ids.ref(slot, _FN)
        self._rec(slot).pending_seq = 0
        self._ids.set_ref(slot, _FN, None)
        self._live -= 1
        return fn

    cdef object _forget(self, Py_ssize_t slot):
        """Forget the id of ``slot``, now idle; return the id, for the caller to drop last."""
        self._edits += 1
        task_id = self._ids.remove(slot)
        self._ids.shrink()
        return task_id

    cdef int _check_running(self, Task task) except -1:
        """Raise InvalidTransition unless ``task`` is this scheduler's running task."""
        cdef Py_ssize_t slot = task._slot
        # A task is this scheduler's running one only if its slot holds it; a
        # task of another scheduler may carry any slot number, so check the range.
        if (task.state is not _RUNNING or slot >= self._ids.slot_limit()
                or self._ids.ref(slot, _RUN) is not task):
            raise InvalidTransition(
                f"cannot finish task {task.task_id!r} version {task._version}: it is "
                f"{task.state}" + ("" if task.state is not _RUNNING else " in another scheduler"))
        return 0

    cdef int _finish(self, Task task, str state, object exception) except -1:
        self._check_running(task)
        self._end_run(task, state, exception)  # the id it forgets is released on return
        return 0

    cdef object _end_run(self, Task task, str state, object exception):
        """Finish ``task``, this scheduler's running task; return the id it forgot (or None)."""
        cdef Py_ssize_t slot = task._slot
        cdef object old_id = None
        cdef object key
        # Whatever may allocate comes before the first change, so a MemoryError
        # leaves everything as it was: boxing the slot number for the dict, and
        # room for a parked version. No collection starts here: boxing an
        # int and growing the early heap allocate no tracked object.
        parked = None
        if self._parked:
            key = slot
            parked = self._parked.get(key)
        if parked is not None:
            _reserve_early(&self._pending, 1)
        task.state = state
        task.exception = exception
        self._ids.set_ref(slot, _RUN, None)  # the caller still holds task
        self._edits += 1
        self._running -= 1
        if state is _COMPLETED:
            self._completed += 1
        elif state is _FAILED:
            self._failed += 1
        else:
            self._released += 1
        if parked is not None:
            del self._parked[key]  # deleting a present key never allocates
            self._push(parked[0], parked[1], parked[2], slot, _EARLY)
        elif not self._rec(slot).pending_seq:
            old_id = self._forget(slot)
        return old_id

    cdef inline void _push(self, double run_at, int64_t priority, uint64_t seq,
                           Py_ssize_t slot, _Route route) noexcept:
        # Precondition: room reserved for it as ``route`` says, so a MemoryError
        # came before any change.
        cdef HeapEntry item
        item.key = _time_key(run_at)
        item.priority = priority
        item.seq = seq
        item.slot = slot
        if route == _ROUTED:
            _ladder_push(&self._pending, &item)
        elif route == _EARLY:
            _ladder_push_early(&self._pending, &item)
        else:
            _ladder_push_batch(&self._pending, &item)

    cdef void _maybe_rebuild(self) noexcept:
        """Drop every stale entry at once when they outnumber the live ones: O(n), amortised O(1).

        Else spill the early heap back into the ladder when it holds most
        entries. Then give memory back where a part is under a quarter full.
        """
        cdef Py_ssize_t heap_live = self._live - len(self._parked)
        cdef Py_ssize_t size = self._pending.size
        if size <= _REBUILD_FLOOR or size - heap_live <= heap_live:
            if _ladder_wants_spill(&self._pending):
                _ladder_spill(&self._pending)
                self._edits += 1
            _ladder_fit(&self._pending)
            return
        self._stale_discarded += _ladder_drop_stale(
            &self._pending, <const SlotRecord*>self._ids.records, self._ids.slots)
        self._edits += 1
        self._rebuilds += 1
        _ladder_fit(&self._pending)
