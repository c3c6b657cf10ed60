# StableBoundedPriorityQueue._check(): every invariant the docs and the twin's _check() state.

cdef int _check_queue(StableBoundedPriorityQueue self) except -1:
    """Assert every invariant of ``self``: StableBoundedPriorityQueue._check()."""
    cdef Py_ssize_t k, child, live = self._live
    cdef Py_ssize_t bound = max(live, _COMPACT_FLOOR)
    cdef Record* rec
    cdef int32_t r
    cdef list in_best = [0] * self._n_recs
    cdef list in_worst = [0] * self._n_recs
    cdef list keyed = []
    cdef list tenanted = [0] * (self._tenants.slot_limit() if self._tenants is not None else 0)
    cdef Node* node
    # Heap order: no node is before its parent.
    for k in range(self._best_len):
        for child in range(_BQ_ARITY * k + 1, min(_BQ_ARITY * k + _BQ_ARITY + 1, self._best_len)):
            assert not _bq_before(&self._best[child], &self._best[k]), "best heap order"
    for k in range(self._worst_len):
        for child in range(_BQ_ARITY * k + 1, min(_BQ_ARITY * k + _BQ_ARITY + 1, self._worst_len)):
            assert not _bq_before(&self._worst[child], &self._worst[k]), "worst heap order"
    # Nodes name records in use and carry their key (reversed in the worst heap).
    for k in range(self._best_len):
        node = &self._best[k]
        assert 0 <= node.rec < self._n_recs
        assert (node.priority, node.seq) == (self._recs[node.rec].priority, self._recs[node.rec].seq)
        in_best[node.rec] += 1
    for k in range(self._worst_len):
        node = &self._worst[k]
        assert 0 <= node.rec < self._n_recs
        assert (~node.priority, ~node.seq) == (self._recs[node.rec].priority, self._recs[node.rec].seq)
        in_worst[node.rec] += 1
    # Free records are named by no node, and listed once.
    free = [self._free[k] for k in range(self._n_free)]
    assert len(set(free)) == self._n_free
    for r in free:
        assert not self._recs[r].alive and self._recs[r].nodes == 0 and not in_best[r] and not in_worst[r]
    assert len(self._values) == self._recs_capacity >= self._n_recs
    for r in range(self._n_recs):
        rec = &self._recs[r]
        # ``nodes`` counts the nodes naming the record.
        assert rec.nodes == in_best[r] + in_worst[r], "node count"
        if rec.alive:
            # Each live record has exactly one node in each heap.
            assert in_best[r] == in_worst[r] == 1
            assert rec.seq <= self._seq
            live -= 1
            if rec.key_slot >= 0:
                assert self._key_rec[rec.key_slot] == r
                keyed.append(r)
            if rec.tenant_slot >= 0:
                tenanted[rec.tenant_slot] += 1
        else:
            # A dead record holds nothing: its objects are freed once the caller drops them.
            assert self._values[r] is None and rec.key_slot == -1 and rec.tenant_slot == -1
    assert live == 0, "live count"
    for r in range(self._n_recs, self._recs_capacity):
        assert self._values[r] is None
    # Never more entries than the capacity.
    assert self._live <= self._capacity
    # Both roots are live: peeks are O(1) and the admission test reads the true worst.
    assert not self._best_len or self._recs[self._best[0].rec].alive
    assert not self._worst_len or self._recs[self._worst[0].rec].alive
    # The dead-node bound that keeps memory O(capacity).
    assert self._best_len - self._live <= bound and self._worst_len - self._live <= bound, "dead-node bound"
    # The key table names exactly the live keyed records.
    if self._keys is not None:
        self._keys._check()
        assert self._key_rec_capacity >= self._keys.slot_limit(), "key slots covered"
    assert len(keyed) == (len(self._keys) if self._keys is not None else 0)
    # Each tenant counts its live records, is within its limit, and is forgotten at 0.
    if self._tenants is not None:
        self._tenants._check()
        assert self._tenant_count_capacity >= self._tenants.slot_limit(), "tenant slots covered"
        for k in range(self._tenants.slot_limit()):
            if self._tenants.key(k) is _FREE:  # a free slot
                assert tenanted[k] == 0
            else:
                assert self._tenant_count[k] == tenanted[k] > 0
                assert self._quota < 0 or tenanted[k] <= self._quota
    # The counters add up.
    assert self._accepted - self._evicted - self._popped - self._removed == self._live
    return 0
