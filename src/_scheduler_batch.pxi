# Scheduler.schedule_many(): its items checked, then scheduled all or nothing.

cdef int _check_items(list items, list ids, Py_hash_t* hashes, double* times,
                      int64_t* priorities, list fns) except -1:
    """Check every ``(task_id, run_at, priority, fn)`` of ``items`` into the arrays and lists;
    a bad one raises naming its index and field (``items[3].run_at``)."""
    cdef Py_ssize_t k
    for k in range(len(items)):
        item = items[k]
        try:
            if type(item) is not tuple and type(item) is not list or len(item) != 4:
                raise TypeError
            task_id, run_at, priority, fn = item
            hashes[k] = hash(task_id)
            times[k] = _check_time(run_at, "run_at")
            priorities[k] = _check_priority(priority, "priority")
            _check_callable(fn, "fn")
        except Exception:
            check_schedule_item(item, f"items[{k}]")  # raises, naming the field
            raise
        ids[k] = task_id
        fns[k] = fn
    return 0


cdef list _schedule_many(Scheduler self, list ids, Py_hash_t* hashes, double* times,
                         int64_t* priorities, list fns, Py_ssize_t* slots, uint64_t* latest,
                         Py_ssize_t* firsts):
    """schedule_many() with checked items: all or nothing.

    ``slots``, ``latest`` and ``firsts`` are scratch room, one of each an item.
    """
    cdef Py_ssize_t k, slot, first, seen, n = len(ids), fresh
    cdef uint64_t edits
    cdef IdTable batch
    cdef list versions, old_fns
    cdef SlotState* state
    while True:
        # Allocate everything first, as _schedule() does: the versions
        # (an id may come more than once), then room in the heap, the id
        # table and the per-slot arrays for every id new to the scheduler.
        # find() may run a key's __eq__, and allocating may
        # start a collection whose finalisers call back in: then look again.
        edits = self._edits
        # The batch's own ids: batch slot s is the id whose first item is
        # firsts[s]. A C table allocates no tracked object per item, so no
        # collection starts to walk the big lists while it fills.
        batch = IdTable()
        versions = [None] * n
        old_fns = [None] * n  # released on return, once the state is whole
        fresh = 0
        for k in range(n):
            seen = batch.find(ids[k], hashes[k])
            if seen >= 0:  # the id came before: its version after its items so far
                first = firsts[seen]
                latest[first] += 1
                slots[k] = -2 - first  # the slot its first item gets
            else:
                first = k
                firsts[batch.add(ids[k], hashes[k])] = k
                slot = self._ids.find(ids[k], hashes[k])
                latest[k] = 1 if slot < 0 else self._slots[slot].version + 1
                slots[k] = slot
                fresh += slot < 0
            versions[k] = latest[first]
        if self._heap_capacity - self._heap_len < n:
            _resize_heap(self, _grown(self._heap_capacity, self._heap_len + n))
        _reserve_slots(self, fresh)  # first: the table's slot limit grows next
        self._ids.reserve(fresh)
        if edits == self._edits:
            break
    # Nothing below allocates: the adds have their room.
    for k in range(n):
        slot = slots[k]
        if slot < -1:
            slot = slots[-2 - slot]  # its id's first item, already placed
        elif slot == -1:
            slot = self._ids.add(ids[k], hashes[k])
            self._slots[slot].version = 0
            self._slots[slot].pending_seq = 0
        slots[k] = slot
        if self._slots[slot].pending_seq:
            old_fns[k] = self._drop_pending(slot)
            self._replaced += 1
        self._seq += 1
        self._edits += 1
        state = &self._slots[slot]
        state.version += 1
        state.pending_seq = self._seq
        self._fns[slot] = fns[k]
        self._live += 1
        self._push(times[k], priorities[k], self._seq, slot)
    # Once, at the end: a shrink of the heap in between would take the room back.
    self._maybe_rebuild()
    return versions
