# Scheduler.schedule_many(): its items checked, then scheduled all or nothing.

from cpython.tuple cimport PyTuple_GET_ITEM

cdef enum:
    _LOOKAHEAD = 8  # items ahead whose hash buckets are loaded while this one is placed


ctypedef struct BatchItem:
    # One checked item of a batch. Its id and fn stay in the item's tuple.
    Py_hash_t hash
    double run_at
    int64_t priority
    Py_ssize_t slot    # its id's slot; -1: new to the scheduler; -2 - k: its slot came first as item k
    uint64_t version   # the version it gets


cdef int _check_items(list items, BatchItem* batch) except -1:
    """Check every ``(task_id, run_at, priority, fn)`` of ``items`` into ``batch``;
    a bad one raises naming its index and field (``items[3].run_at``).

    Leaves every item an exact tuple: the commit reads ids and fns from them,
    and a list or a tuple subclass could change or answer differently later.
    """
    cdef Py_ssize_t k
    for k in range(len(items)):
        item = items[k]
        try:
            if type(item) is tuple:
                if len(<tuple>item) != 4:
                    raise TypeError
                task_id = <object>PyTuple_GET_ITEM(item, 0)
                run_at = <object>PyTuple_GET_ITEM(item, 1)
                priority = <object>PyTuple_GET_ITEM(item, 2)
                fn = <object>PyTuple_GET_ITEM(item, 3)
            else:
                if not isinstance(item, (tuple, list)) or len(item) != 4:
                    raise TypeError
                task_id, run_at, priority, fn = item
                items[k] = (task_id, run_at, priority, fn)
            batch[k].hash = hash(task_id)
            batch[k].run_at = _check_time(run_at, "run_at")
            batch[k].priority = _check_priority(priority, "priority")
            _check_callable(fn, "fn")
        except Exception:
            check_schedule_item(item, f"items[{k}]")  # raises, naming the field
            raise
    return 0


cdef inline object _item_id(list items, Py_ssize_t k):
    return <object>PyTuple_GET_ITEM(items[k], 0)


cdef Py_ssize_t _first_of(list items, BatchItem* batch, int32_t* index, size_t mask, int shift,
                          Py_ssize_t k) except -2:
    """The batch's first item of item ``k``'s slot, or -1 if ``k`` is the first (then indexed).

    Item ``k``'s slot is the known id's (``batch[k].slot >= 0``), else one for
    its id among the batch's new ids, as the twin looks in ``_slot_of`` and then
    in ``fresh``: two ids equal to one known id share its slot even when they
    differ from each other. ``index`` is an open-addressing table of item
    numbers, -1 where empty.
    """
    cdef Py_ssize_t slot = batch[k].slot
    cdef object task_id = None if slot >= 0 else _item_id(items, k)
    cdef Py_hash_t h = batch[k].hash
    cdef size_t i = _home(<Py_hash_t>slot if slot >= 0 else h, shift)
    cdef int32_t j
    while True:
        j = index[i]
        if j < 0:
            index[i] = <int32_t>k
            return -1
        if slot >= 0:
            if batch[j].slot == slot:
                return j
        elif batch[j].slot == -1 and batch[j].hash == h:
            other = _item_id(items, j)
            if other is task_id or other == task_id:  # __eq__ may call back: the caller looks again
                return j
        i = (i + 1) & mask


cdef list _schedule_many(Scheduler self, list items, BatchItem* batch, int32_t* index,
                         size_t buckets):
    """schedule_many() with checked items: all or nothing.

    ``batch`` holds the checked items; ``index`` is scratch room of ``buckets``
    int32s (a power of two above twice the items) to find a slot's repeats.
    """
    cdef Py_ssize_t k, slot, first, n = len(items), fresh, replacing, r, to_top
    cdef uint64_t edits
    cdef int shift = 64
    cdef list versions
    cdef list old_fns = None  # released on return, once the state is whole
    cdef SlotRecord* state
    while (<size_t>1 << (64 - shift)) < buckets:
        shift -= 1
    while True:
        # Allocate everything first, as _schedule() does: the versions
        # (an id may come more than once), then room in the heap, the id
        # table and the per-slot arrays for every id new to the scheduler,
        # and a list for the fns that replaced versions drop.
        # An id's __eq__ may run, and allocating may start a collection
        # whose finalisers call back in: then look again.
        edits = self._edits
        memset(index, -1, buckets * sizeof(int32_t))
        versions = [None] * n
        fresh = replacing = to_top = 0
        for k in range(n):
            to_top += _time_key(batch[k].run_at) >= self._pending.top_start
            if k + _LOOKAHEAD < n:  # a big batch misses the caches on each id's buckets: load ahead
                PYSCHED_PREFETCH(&index[_home(batch[k + _LOOKAHEAD].hash, shift)])  # a new id's
                self._ids.prefetch_hash(batch[k + _LOOKAHEAD].hash)
            slot = self._ids.find(_item_id(items, k), batch[k].hash)
            batch[k].slot = slot
            first = _first_of(items, batch, index, buckets - 1, shift, k)
            if first >= 0:  # the slot came before: its version after its items so far
                batch[first].version += 1
                batch[k].slot = -2 - first
                replacing += 1
            else:
                first = k
                if slot < 0:
                    batch[k].version = 1
                    fresh += 1
                else:
                    batch[k].version = self._rec(slot).version + 1
                    replacing += self._rec(slot).pending_seq != 0
            versions[k] = batch[first].version
        _ladder_reserve_batch(&self._pending, to_top, n - to_top)
        self._ids.reserve(fresh)
        old_fns = [None] * replacing if replacing else None
        if edits == self._edits:
            break
    # Nothing below allocates: the adds have their room.
    r = 0
    for k in range(n):
        if k + _LOOKAHEAD < n and batch[k + _LOOKAHEAD].slot == -1:
            self._ids.prefetch_hash(batch[k + _LOOKAHEAD].hash)
        slot = batch[k].slot
        if slot < -1:
            slot = batch[-2 - slot].slot  # its slot's first item, already placed
        elif slot == -1:
            slot = self._ids.add(_item_id(items, k), batch[k].hash)
            self._rec(slot).version = 0
            self._rec(slot).pending_seq = 0
        batch[k].slot = slot
        if self._rec(slot).pending_seq:
            old_fns[r] = self._drop_pending(slot)
            r += 1
            self._replaced += 1
        self._seq += 1
        self._edits += 1
        state = self._rec(slot)
        state.version += 1
        state.pending_seq = self._seq
        self._ids.set_ref(slot, _FN, <object>PyTuple_GET_ITEM(items[k], 3))
        self._live += 1
        self._push(batch[k].run_at, batch[k].priority, self._seq, slot, _BATCH)
    # Once, at the end: a shrink in between would take the room back.
    self._maybe_rebuild()
    return versions
