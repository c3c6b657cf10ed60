# The scheduler's per-slot arrays and lists: growing them before a change, giving memory back after.
# The ladder's own memory is in _scheduler_ladder.pxi.

cdef int _reserve_slots(Scheduler self, Py_ssize_t n) except -1:
    """Grow the per-slot arrays to cover the next ``n`` slots the id table may hand out.

    Called before the table changes, so a MemoryError leaves everything as it was.
    """
    cdef Py_ssize_t end = self._ids.slot_limit() + n
    cdef Py_ssize_t old = self._slots_capacity
    if end > old:
        _grow(<void**>&self._slots, _grown(old, end), sizeof(SlotState))
        self._slots_capacity = _grown(old, end)
        # A stale entry may name a slot past the old end: it must read as pending nothing.
        memset(&self._slots[old], 0, (self._slots_capacity - old) * sizeof(SlotState))
    # The lists grow to the arrays' capacity, in one step each time it grows.
    if len(self._fns) < end:
        self._fns.extend([None] * (self._slots_capacity - len(self._fns)))
    if len(self._runs) < end:
        self._runs.extend([None] * (self._slots_capacity - len(self._runs)))
    return 0


cdef void _fit_slots(Scheduler self) noexcept:
    """Cut the per-slot arrays down to the id table's slots, which just shrank.

    The cut slots are free: their fns and runs are None, their states
    pending nothing. The lists are cut as far as memory allows.
    """
    cdef Py_ssize_t n = self._ids.slot_limit()
    try:
        del self._fns[n:]
        del self._runs[n:]
    except MemoryError:
        pass  # longer than needed is still whole
    self._slots_capacity = _fitted(<void**>&self._slots, self._slots_capacity, n,
                                   sizeof(SlotState))
