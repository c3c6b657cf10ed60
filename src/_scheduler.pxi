# Scheduler and Task: mirrors pysched/_scheduler_py.py, which states the design.
#
# Heap invariant (4-ary): entry k is not after any of its children
# 4k+1 .. 4k+4 under (run_at, -priority, seq). A 4-ary heap halves the depth
# of a binary one and keeps a node's children in one or two cache lines; pops
# dominate a scheduler's work and measured faster with it (see benchmarks).

DEF _ARITY = 4

from time import monotonic as _monotonic

cdef str _PENDING = "pending"
cdef str _RUNNING = "running"
cdef str _CANCELLED = "cancelled"
cdef str _COMPLETED = "completed"
cdef str _FAILED = "failed"

# Below this many heap entries stale ones are left for the pops to drop.
REBUILD_FLOOR = 64
cdef Py_ssize_t _REBUILD_FLOOR = REBUILD_FLOOR


ctypedef struct HeapEntry:
    double run_at      # finite
    int64_t priority   # higher runs first
    uint64_t seq       # unique and increasing: FIFO among equal keys, and the liveness stamp
    Py_ssize_t slot    # the id's slot; the entry is live iff pending_seq[slot] == seq


ctypedef struct SlotState:
    uint64_t version      # newest version handed out; a pending version is always the newest
    uint64_t pending_seq  # seq of the pending version's entry; 0 when none is pending


cdef extern from "Python.h":
    PyObject** PySequence_Fast_ITEMS(object o)


cdef inline bint _before(const HeapEntry* a, const HeapEntry* b) noexcept nogil:
    if a.run_at != b.run_at:
        return a.run_at < b.run_at
    if a.priority != b.priority:
        return a.priority > b.priority
    return a.seq < b.seq


@cython.final
@cython.freelist(16)  # a drain frees each Task before it claims the next
cdef class Task:
    """One claimed version of a task: what ``Scheduler.next()`` hands out.

    ``state`` is ``"running"`` until the task is finished through its scheduler
    as ``"completed"`` or ``"failed"`` (then ``exception`` holds the error).
    ``cancel_requested`` turns true when ``cancel()`` reaches it while it runs;
    stopping is up to the running code. The attributes are read-only.
    """
    cdef readonly object task_id
    cdef uint64_t _version
    cdef readonly double run_at
    cdef readonly int64_t priority
    cdef readonly object fn
    cdef readonly str state
    cdef readonly bint cancel_requested
    cdef readonly object exception
    cdef Py_ssize_t _slot     # its id's slot while running: finishing needs no hash lookup

    @property
    def version(self):
        """The version number, from 1 per task id."""
        return self._version

    def __repr__(self):
        return (f"<Task {self.task_id!r} v{self._version} {self.state}"
                f" run_at={self.run_at!r} priority={self.priority}>")


@cython.final
@cython.no_gc_clear  # the per-slot lists must outlive any finaliser that calls back in
cdef class Scheduler:
    """Cancellable priority scheduler of task versions (single-threaded, never sleeps).

    Tasks run in order of earliest ``run_at``, then highest ``priority``, then
    submission order. Each task id has one valid version at a time: scheduling
    an id again replaces its pending version, which can then never start.
    """
    cdef object _clock
    cdef void* _heap_block     # the allocation; _heap points inside it (see _grow_heap)
    cdef HeapEntry* _heap
    cdef Py_ssize_t _heap_len
    cdef Py_ssize_t _heap_capacity
    cdef IdTable _ids
    cdef SlotState* _slots   # by slot, ``_slots_capacity`` long
    cdef Py_ssize_t _slots_capacity
    cdef list _fns           # by slot: the pending version's callable, or None
    cdef list _running       # by slot: the Task now running, or None
    cdef dict _parked        # slot -> (run_at, priority, seq) of a due version waiting for its id's run
    cdef uint64_t _seq
    cdef Py_ssize_t _live    # pending versions, parked ones included
    cdef Py_ssize_t _n_running
    cdef Py_ssize_t _stale_discarded
    cdef Py_ssize_t _rebuilds
    cdef Py_ssize_t _replaced
    cdef Py_ssize_t _cancelled
    cdef Py_ssize_t _completed
    cdef Py_ssize_t _failed

    def __cinit__(self):
        self._ids = IdTable()
        self._fns = []
        self._running = []
        self._parked = {}

    # The default is time.monotonic itself, as in the twin: ``clock=None`` used
    # to be taken for "the default" here while the twin refused it (found by
    # the bad-input table, tests/test_bad_input.py).
    def __init__(self, *, clock=_monotonic):
        check_callable(clock, "clock")
        self._clock = clock

    def __dealloc__(self):
        PyMem_Free(self._heap_block)
        PyMem_Free(self._slots)

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
        after it finishes. O(log n): one heap push; the old entry is left in the
        heap as stale, to be dropped later at O(1) amortised cost.
        """
        cdef Py_hash_t h = _as_hash(task_id, "task_id")
        cdef double when = _as_time(run_at, "run_at")
        cdef int64_t prio = _as_priority(priority, "priority")
        _check_callable(fn, "fn")
        cdef Py_ssize_t slot = self._ids.find(task_id, h)
        cdef object old_fn = None  # dropped on return, once the state is whole
        if self._heap_len == self._heap_capacity:
            self._grow_heap()
        if slot < 0:
            self._reserve_slot()
            slot = self._ids.add(task_id, h)
            self._slots[slot].version = 0
            self._slots[slot].pending_seq = 0
        elif self._slots[slot].pending_seq:
            old_fn = self._drop_pending(slot)
            self._replaced += 1
        self._seq += 1
        cdef SlotState* state = &self._slots[slot]
        state.version += 1
        state.pending_seq = self._seq
        self._fns[slot] = fn
        self._live += 1
        self._push(when, prio, self._seq, slot)
        self._maybe_rebuild()
        return state.version

    def cancel(self, task_id):
        """cancel(task_id) -> bool

        Cancel the pending version of ``task_id`` and ask its running one to stop.

        Returns False for an id with nothing pending or running. A cancelled
        version never starts; a running one only gets ``cancel_requested`` set
        and counts as running until it is finished. O(1) amortised: the heap
        entry turns stale in place.
        """
        cdef Py_hash_t h = _as_hash(task_id, "task_id")
        cdef Py_ssize_t slot = self._ids.find(task_id, h)
        cdef object old_fn = None
        cdef object old_id = None
        cdef Task running
        if slot < 0:
            return False
        if self._slots[slot].pending_seq:
            old_fn = self._drop_pending(slot)
            self._cancelled += 1
        running = self._running[slot]
        if running is not None:
            running.cancel_requested = True
        else:
            old_id = self._ids.remove(slot)
        self._maybe_rebuild()
        return True

    def next(self, now=None):
        """next(now=None) -> Task | float | None

        Claim the head task if it is due, else say how long until it is.

        Returns the claimed ``Task`` (now running) when the head's ``run_at <=
        now``; otherwise the seconds until the earliest pending task is due (a
        float > 0); None when no pending task can come due by time alone
        (nothing is pending, or every pending version waits for its id's
        running version). ``now`` defaults to ``clock()``. A task never starts
        early. O(log n) amortised: stale entries popped on the way were paid
        for when they turned stale.
        """
        cdef double t
        cdef HeapEntry head
        if now is None:
            t = _as_time(self._clock(), "clock()")
        else:
            t = _as_time(now, "now")
        while self._heap_len:
            head = self._heap[0]
            if self._slots[head.slot].pending_seq != head.seq:
                self._pop()
                self._stale_discarded += 1
                continue
            if head.run_at > t:
                return head.run_at - t  # > 0: distinct finite doubles never subtract to 0
            # Allocate before popping, so a MemoryError cannot lose the entry.
            if self._running[head.slot] is not None:
                self._parked[head.slot] = (head.run_at, head.priority, head.seq)
                self._pop()
                continue
            return self._claim(&head)
        return None

    def complete(self, Task task not None):
        """complete(task) -> None

        Finish a running task as completed.
        """
        self._finish(task, _COMPLETED, None)

    def fail(self, Task task not None, exception):
        """fail(task, exception) -> None

        Finish a running task as failed with ``exception``.
        """
        if not isinstance(exception, BaseException):
            raise TypeError(f"exception must be an exception, not {type(exception).__name__}")
        self._finish(task, _FAILED, exception)

    def state(self, task_id):
        """state(task_id) -> str | None

        The state of the newest version of ``task_id``: pending or running.

        None when nothing of it is pending or running: finished and cancelled
        ids are forgotten, so memory stays proportional to live tasks.
        """
        cdef Py_ssize_t slot = self._ids.find(task_id, _as_hash(task_id, "task_id"))
        if slot < 0:
            return None
        return _PENDING if self._slots[slot].pending_seq else _RUNNING

    def stats(self):
        """stats() -> dict

        Counters and sizes; ``stale`` never exceeds ``max(heap_live, REBUILD_FLOOR)``.
        """
        cdef Py_ssize_t heap_live = self._live - len(self._parked)
        return {
            "pending": self._live,
            "running": self._n_running,
            "parked": len(self._parked),
            "heap_size": self._heap_len,
            "heap_live": heap_live,
            "stale": self._heap_len - heap_live,
            "stale_discarded": self._stale_discarded,
            "rebuilds": self._rebuilds,
            "scheduled": self._seq,
            "replaced": self._replaced,
            "cancelled": self._cancelled,
            "completed": self._completed,
            "failed": self._failed,
        }

    def _check(self):
        """Assert the heap, slot and counter invariants (tests call this)."""
        cdef Py_ssize_t k, child, live = 0
        self._ids._check()
        for k in range(self._heap_len):
            for child in range(_ARITY * k + 1, min(_ARITY * k + _ARITY + 1, self._heap_len)):
                assert not _before(&self._heap[child], &self._heap[k]), "heap order"
            if self._slots[self._heap[k].slot].pending_seq == self._heap[k].seq:
                live += 1
        assert live + len(self._parked) == self._live
        assert self._heap_len - live <= max(live, _REBUILD_FLOOR), "stale bound"

    # -- internals ---------------------------------------------------------

    cdef Task _claim(self, HeapEntry* entry):
        """Pop the head ``entry`` and move its pending version to running."""
        cdef Py_ssize_t slot = entry.slot
        cdef Task task = Task.__new__(Task)
        cdef Py_ssize_t upcoming = self._likely_next_head()
        self._ids.prefetch(slot)  # complete() reads its bucket; its hash is cached by now
        if upcoming >= 0:
            self._prefetch_slot(upcoming)  # loads while the pop walks down the heap
        self._pop()
        task.task_id = self._ids.key(slot)
        task._version = self._slots[slot].version
        task.run_at = entry.run_at
        task.priority = entry.priority
        task.fn = self._fns[slot]
        task.state = _RUNNING
        task._slot = slot
        self._slots[slot].pending_seq = 0
        self._fns[slot] = None  # task.fn still holds it: nothing is freed here
        self._running[slot] = task
        self._live -= 1
        self._n_running += 1
        self._maybe_rebuild()
        if self._heap_len:
            self._prefetch_objects(self._heap[0].slot)
        return task

    # At a million tasks every read of a claim misses the caches: the head's
    # slot state, its list items and hash, then the id and fn objects those
    # point to, and at complete() its id's bucket. A drain claims the next
    # head soon after, so each claim starts loading the next one's data in two
    # steps: the slot's own data while the pop runs, then what it points to.

    cdef inline Py_ssize_t _likely_next_head(self) noexcept:
        """The slot of the root's best child, which a pop usually moves up; -1 if none."""
        cdef Py_ssize_t child, best = 1
        if self._heap_len < 2:
            return -1
        for child in range(2, min(_ARITY + 1, self._heap_len)):
            if _before(&self._heap[child], &self._heap[best]):
                best = child
        return self._heap[best].slot

    cdef inline void _prefetch_slot(self, Py_ssize_t slot) noexcept:
        PYSCHED_PREFETCH(&self._slots[slot])
        PYSCHED_PREFETCH(&PySequence_Fast_ITEMS(self._fns)[slot])
        PYSCHED_PREFETCH(&PySequence_Fast_ITEMS(self._running)[slot])
        PYSCHED_PREFETCH(&PySequence_Fast_ITEMS(self._ids.keys)[slot])
        PYSCHED_PREFETCH(&self._ids.hashes[slot])

    cdef inline void _prefetch_objects(self, Py_ssize_t slot) noexcept:
        # Reads what _prefetch_slot loaded: if it has not arrived, this waits
        # for what the next claim would have waited for anyway.
        PYSCHED_PREFETCH(PySequence_Fast_ITEMS(self._ids.keys)[slot])
        PYSCHED_PREFETCH(PySequence_Fast_ITEMS(self._fns)[slot])

    cdef object _drop_pending(self, Py_ssize_t slot):
        """Forget the pending version of ``slot``; return its fn for the caller to drop."""
        if self._parked:
            self._parked.pop(slot, None)
        self._slots[slot].pending_seq = 0
        fn = self._fns[slot]
        self._fns[slot] = None
        self._live -= 1
        return fn

    cdef int _finish(self, Task task, str state, object exception) except -1:
        cdef Py_ssize_t slot = task._slot
        cdef object old_id = None
        cdef object key
        # A task is this scheduler's running one only if its slot holds it; a
        # task of another scheduler may carry any slot number, so check the range.
        if (task.state is not _RUNNING or slot >= len(self._running)
                or self._running[slot] is not task):
            raise InvalidTransition(
                f"cannot finish task {task.task_id!r} version {task._version}: it is "
                f"{task.state}" + ("" if task.state is not _RUNNING else " in another scheduler"))
        # Whatever may allocate comes before the first change, so a MemoryError
        # leaves everything as it was: boxing the slot number for the dict, and
        # heap room for a parked version. (Growing after the change once lost
        # the parked version: tests/test_hardening_regressions.py.)
        parked = None
        if self._parked:
            key = slot
            parked = self._parked.get(key)
        if parked is not None and self._heap_len == self._heap_capacity:
            self._grow_heap()
        task.state = state
        task.exception = exception
        self._running[slot] = None  # the caller still holds task
        self._n_running -= 1
        if state is _COMPLETED:
            self._completed += 1
        else:
            self._failed += 1
        if parked is not None:
            del self._parked[key]  # deleting a present key never allocates
            self._push(parked[0], parked[1], parked[2], slot)
        elif not self._slots[slot].pending_seq:
            old_id = self._ids.remove(slot)
        return 0

    cdef int _reserve_slot(self) except -1:
        """Grow the per-slot arrays to cover any slot the id table may hand out next.

        Called before the table changes, so a MemoryError leaves everything as it was.
        """
        cdef Py_ssize_t slot = self._ids.slot_limit()
        cdef Py_ssize_t n
        cdef SlotState* grown
        if slot >= self._slots_capacity:
            n = max(16, self._slots_capacity * 2)
            grown = <SlotState*>PyMem_Realloc(self._slots, n * sizeof(SlotState))
            if grown == NULL:
                raise MemoryError()
            self._slots = grown
            self._slots_capacity = n
        while len(self._fns) <= slot:
            self._fns.append(None)
        while len(self._running) <= slot:
            self._running.append(None)
        return 0

    cdef int _grow_heap(self) except -1:
        # A node's four children are 128 bytes, two cache lines if they start
        # on a line and three if not. Children start at entries 1, 5, 9, ...,
        # so the heap begins 32 bytes before a line: the block has room to
        # shift it there, and its data moves if a realloc changes the shift.
        cdef Py_ssize_t n = max(16, self._heap_capacity * 2)
        cdef size_t old_shift = <char*>self._heap - <char*>self._heap_block
        cdef char* block = <char*>PyMem_Realloc(self._heap_block, n * sizeof(HeapEntry) + 64)
        cdef size_t shift
        if block == NULL:
            raise MemoryError()
        shift = (32 - <size_t>block) & 63
        if self._heap_len and shift != old_shift:
            memmove(block + shift, block + old_shift, self._heap_len * sizeof(HeapEntry))
        self._heap_block = block
        self._heap = <HeapEntry*>(block + shift)
        self._heap_capacity = n
        return 0

    cdef inline void _push(self, double run_at, int64_t priority, uint64_t seq,
                           Py_ssize_t slot) noexcept:
        # Precondition: _heap_len < _heap_capacity (callers grow first, so a
        # MemoryError leaves the heap untouched).
        cdef HeapEntry item
        item.run_at = run_at
        item.priority = priority
        item.seq = seq
        item.slot = slot
        self._heap[self._heap_len] = item
        self._heap_len += 1
        self._sift_up(0, self._heap_len - 1)

    cdef inline void _pop(self) noexcept:
        # Precondition: _heap_len > 0. Drops the root.
        self._heap_len -= 1
        if self._heap_len:
            self._heap[0] = self._heap[self._heap_len]
            self._sift_down(0)

    cdef void _sift_up(self, Py_ssize_t start, Py_ssize_t pos) noexcept:
        # Precondition: the heap invariant holds everywhere except between
        # ``pos`` and its ancestors up to ``start``.
        cdef HeapEntry item = self._heap[pos]
        cdef Py_ssize_t parent
        while pos > start:
            parent = (pos - 1) // _ARITY
            if not _before(&item, &self._heap[parent]):
                break
            self._heap[pos] = self._heap[parent]
            pos = parent
        self._heap[pos] = item

    cdef void _sift_down(self, Py_ssize_t pos) noexcept:
        # Precondition: every subtree below ``pos`` is a heap.
        # Floyd's bottom-up variant, as in heapq: walk the hole down to a leaf
        # along the best children, then sift the item back up. The moved item
        # is usually a late one that belongs near the leaves, so this saves the
        # comparison with it at every level.
        cdef HeapEntry item = self._heap[pos]
        cdef Py_ssize_t start = pos
        cdef Py_ssize_t n = self._heap_len
        cdef Py_ssize_t first, best, child, last, grandchild
        while True:
            first = _ARITY * pos + 1
            if first >= n:
                break
            best = first
            last = min(first + _ARITY, n)
            # The next level's blocks: start loading them while this one is compared.
            for grandchild in range(_ARITY * first + 1, min(_ARITY * last + 1, n), 2):
                PYSCHED_PREFETCH(&self._heap[grandchild])  # two 32-byte entries a line
            for child in range(first + 1, last):
                if _before(&self._heap[child], &self._heap[best]):
                    best = child
            self._heap[pos] = self._heap[best]
            pos = best
        self._heap[pos] = item
        self._sift_up(start, pos)

    cdef void _maybe_rebuild(self) noexcept:
        """Drop every stale entry at once when they outnumber the live ones: O(n), amortised O(1)."""
        cdef Py_ssize_t heap_live = self._live - len(self._parked)
        cdef Py_ssize_t k, kept = 0
        if self._heap_len <= _REBUILD_FLOOR or self._heap_len - heap_live <= heap_live:
            return
        for k in range(self._heap_len):
            if self._slots[self._heap[k].slot].pending_seq == self._heap[k].seq:
                self._heap[kept] = self._heap[k]
                kept += 1
        self._stale_discarded += self._heap_len - kept
        self._heap_len = kept
        for k in range((kept - 2) // _ARITY, -1, -1):
            self._sift_down(k)
        self._rebuilds += 1
