# Prefetching for the claim path.
#
# At a million tasks every read of a claim misses the caches: the head's
# slot state, its list items and hash, then the id and fn objects those
# point to, and at complete() its id's bucket. A drain claims the next
# head soon after, so each claim starts loading the next one's data in two
# steps: the slot's own data while the pop runs, then what it points to.

cdef inline void _prefetch_next_claim(Scheduler self, Py_ssize_t slot) noexcept:
    """Before popping ``slot``'s entry: load its id's bucket and the likely next head's slot data."""
    self._ids.prefetch(slot)  # complete() reads its bucket; its hash is cached by now
    if self._heap_len < 2:
        return
    # The root's best child is what the pop usually moves up.
    if self._heap_len > _ARITY:
        slot = self._heap[_best_of_four(self._heap, 1)].slot
    else:
        slot = self._heap[_best_child(self._heap, 1, self._heap_len)].slot
    PYSCHED_PREFETCH(&self._slots[slot])
    PYSCHED_PREFETCH(&PySequence_Fast_ITEMS(self._fns)[slot])
    PYSCHED_PREFETCH(&PySequence_Fast_ITEMS(self._runs)[slot])
    PYSCHED_PREFETCH(&PySequence_Fast_ITEMS(self._ids.keys)[slot])
    PYSCHED_PREFETCH(&self._ids.hashes[slot])


cdef inline void _prefetch_head_objects(Scheduler self) noexcept:
    """After the pop: load the id and fn objects of the new head."""
    # Reads what _prefetch_next_claim loaded: if it has not arrived, this
    # waits for what the next claim would have waited for anyway.
    cdef Py_ssize_t slot
    if self._heap_len:
        slot = self._heap[0].slot
        # A stale head may name a slot cut off by a shrink: read only inside the
        # lists (the id table's keys are the shortest of them).
        if slot >= self._ids.slot_limit():
            return
        PYSCHED_PREFETCH(PySequence_Fast_ITEMS(self._ids.keys)[slot])
        PYSCHED_PREFETCH(PySequence_Fast_ITEMS(self._fns)[slot])
