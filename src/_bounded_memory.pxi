# The bounded queue's C arrays: room made before a change, memory given back after.

cdef int _reserve(StableBoundedPriorityQueue self, bint keyed, bint new_tenant) except -1:
    """Make room for one more record, one more node in each heap, and a new key or tenant slot.

    Called before anything changes, so a MemoryError leaves the queue as it was.
    """
    cdef Py_ssize_t n, slot
    if not self._n_free and self._n_recs == self._recs_capacity:
        if self._n_recs >= _MAX_RECORDS:
            raise MemoryError("too many entries for one queue")
        n = min(_grown(self._recs_capacity, 0), <Py_ssize_t>_MAX_RECORDS)
        _grow(<void**>&self._recs, n, sizeof(Record))
        _grow(<void**>&self._free, n, sizeof(int32_t))
        self._values.extend([None] * (n - len(self._values)))
        self._recs_capacity = n  # only once every array is this long
    if self._best_len == self._heap_capacity or self._worst_len == self._heap_capacity:
        n = _grown(self._heap_capacity, 0)
        _grow(<void**>&self._best, n, sizeof(Node))
        _grow(<void**>&self._worst, n, sizeof(Node))
        self._heap_capacity = n
    if keyed:
        if self._keys is None:
            self._keys = IdTable()
        slot = self._keys.slot_limit()
        if slot >= self._key_rec_capacity:
            _grow(<void**>&self._key_rec, _grown(self._key_rec_capacity, slot + 1), sizeof(int32_t))
            self._key_rec_capacity = _grown(self._key_rec_capacity, slot + 1)
    if new_tenant:
        if self._tenants is None:
            self._tenants = IdTable()
        slot = self._tenants.slot_limit()
        if slot >= self._tenant_count_capacity:
            _grow(<void**>&self._tenant_count, _grown(self._tenant_count_capacity, slot + 1),
                  sizeof(Py_ssize_t))
            self._tenant_count_capacity = _grown(self._tenant_count_capacity, slot + 1)
    return 0


cdef void _give_back(StableBoundedPriorityQueue self) noexcept:
    """Shrink the arrays once under a quarter of the records are in use.

    The free records at the top are cut off (no node names a free record),
    and every array is left half full, so an oscillating load does not
    resize at every step. A try that cannot cut (a record near the top is
    in use) waits for the length to halve: amortised O(1) a removal.
    """
    cdef Py_ssize_t top = self._n_recs, k, kept, n, longest
    if self._live and self._live >= self._shrink_at:
        return
    while top and not self._recs[top - 1].alive and not self._recs[top - 1].nodes:
        top -= 1
    if top * 2 > self._recs_capacity:
        self._shrink_at = self._live // 2
        return
    n = max(16, 2 * top)
    try:
        del self._values[n:]  # only None past _n_recs: nothing is freed that could call back
    except MemoryError:
        return  # longer than needed is still whole
    kept = 0
    for k in range(self._n_free):
        if self._free[k] < top:
            self._free[kept] = self._free[k]
            kept += 1
    self._n_free = kept
    self._n_recs = top
    _shrink(<void**>&self._recs, n, sizeof(Record))
    _shrink(<void**>&self._free, n, sizeof(int32_t))
    self._recs_capacity = n
    longest = max(self._best_len, self._worst_len)
    if longest * 4 < self._heap_capacity:
        n = max(16, 2 * longest)
        _shrink(<void**>&self._best, n, sizeof(Node))
        _shrink(<void**>&self._worst, n, sizeof(Node))
        self._heap_capacity = n
