# Prefetching for the claim path.
#
# At a million tasks every read of a claim misses the caches: the head's
# record and references in the id table, then the id object they point to,
# and at complete() its id's bucket. Loads are started in two
# steps: the slot's own data, then (once that has arrived) what it points to.
# When a bucket becomes current its order is known, so its claims' second
# step and the next bucket's first step start then, a bucket ahead of the
# claims; in a heap only the next head is known, so each claim starts on it.

cdef enum:
    _PREFETCH_AHEAD = 32  # most entries of a bucket loaded ahead, and most buckets looked at


cdef inline void _prefetch_slot(Scheduler self, Py_ssize_t slot) noexcept:
    """Start loading what claiming an entry of ``slot`` reads first: its record and references."""
    # A stale entry may name a slot cut off by a shrink: load only inside the table.
    if slot < self._ids.slot_limit():
        self._ids.prefetch_slot(slot)


cdef inline void _prefetch_slot_objects(Scheduler self, Py_ssize_t slot) noexcept:
    """Start loading what an entry of ``slot`` points to: its id and its id's bucket."""
    # A stale entry may name a slot cut off by a shrink: read only inside the
    # lists (the id table's keys are the shortest of them).
    if slot >= self._ids.slot_limit():
        return
    self._ids.prefetch_key(slot)
    self._ids.prefetch(slot)


cdef void _prefetch_new_run(Scheduler self) noexcept:
    """A bucket just became current: start loading for its claims and the next bucket's."""
    cdef Ladder* L = &self._pending
    cdef Rung* rung
    cdef EntryArray* bucket
    cdef Py_ssize_t k, j, end
    if L.run_is_heap or L.run_pos != 0:
        return
    for k in range(min(L.run.len, _PREFETCH_AHEAD)):
        _prefetch_slot_objects(self, L.run.items[k].slot)
    if not L.depth:
        return
    rung = &L.rungs[L.depth - 1]
    end = min(rung.nb, rung.cur + 1 + _PREFETCH_AHEAD)
    for j in range(rung.cur + 1, end):
        bucket = &rung.buckets[j]
        if bucket.len:
            for k in range(min(bucket.len, _PREFETCH_AHEAD)):
                _prefetch_slot(self, bucket.items[k].slot)
            return


cdef inline const HeapEntry* _next_after_head(const Ladder* L) noexcept:
    """The entry likely to be the head once the head goes, if it is at hand; else NULL."""
    cdef const HeapEntry* heap
    cdef Py_ssize_t n
    if L.head_early:
        heap, n = L.early, L.early_len
    elif L.run_is_heap:
        heap, n = L.run.items, L.run.len
    else:
        return &L.run.items[L.run_pos + 1] if L.run_pos + 1 < L.run.len else NULL
    # A heap's root's best child is what the pop usually moves up.
    if n < 2:
        return NULL
    if n > _ARITY:
        return &heap[_best_of_four(heap, 1)]
    return &heap[_best_child(heap, 1, n)]


cdef inline void _prefetch_next_claim(Scheduler self, Py_ssize_t slot) noexcept:
    """Before taking ``slot``'s entry, the head: load its id's bucket and the likely next head's slot data."""
    cdef const HeapEntry* after
    if not (self._pending.head_early or self._pending.run_is_heap):
        return  # a sorted run's loads started when it became current
    after = _next_after_head(&self._pending)
    self._ids.prefetch(slot)  # complete() reads its bucket; its hash is cached by now
    if after != NULL:
        _prefetch_slot(self, after.slot)


cdef inline void _prefetch_head_objects(Scheduler self) noexcept:
    """After the head went: load the id object of the next one, if it is at hand."""
    # Reads what _prefetch_next_claim loaded: if it has not arrived, this
    # waits for what the next claim would have waited for anyway. Nothing
    # moves here: a bucket moved down would change where inserts go.
    cdef const Ladder* L = &self._pending
    cdef const HeapEntry* head
    cdef Py_ssize_t slot
    if L.run_pos < L.run.len:
        head = &L.run.items[0 if L.run_is_heap else L.run_pos]
    elif L.early_len:
        head = &L.early[0]
    else:
        return
    slot = head.slot
    # A stale head may name a slot cut off by a shrink: read only inside the table.
    if slot < self._ids.slot_limit():
        self._ids.prefetch_key(slot)
