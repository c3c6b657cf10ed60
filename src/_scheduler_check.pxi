# Scheduler._check(): every invariant the docs and the twin's _check() state.

cdef int _check_scheduler(Scheduler self) except -1:
    """Assert the ladder, slot and counter invariants of ``self``: Scheduler._check(), as the twin's."""
    cdef Py_ssize_t slot, live = 0, pending = 0, running = 0
    cdef HeapEntry entry
    cdef list live_slots = []
    self._ids._check()
    # The ladder's own order and counts; then, over what it holds:
    # live entries are the pending versions that are not parked, one each.
    for slot, seq in _ladder_check(&self._pending):
        entry.slot = slot
        entry.seq = seq
        if self._is_live(&entry):
            assert 0 <= slot < self._ids.slot_limit(), "live entry's slot"
            live_slots.append(slot)
    live = len(live_slots)
    assert live == len(set(live_slots)), "one live entry a slot"
    assert live + len(self._parked) == self._live, "pending count"
    # The documented bound: stale entries never outnumber live ones above the floor.
    assert self._pending.size <= max(2 * live, _REBUILD_FLOOR), "stale bound"
    # Per slot: a known id is pending or running; a pending one has its fn.
    for slot in range(self._ids.slot_limit()):
        task_id = self._ids.key(slot)
        if task_id is _FREE:
            assert self._rec(slot).pending_seq == 0, "a free slot is pending"
            continue
        assert self._rec(slot).pending_seq or self._ids.ref(slot, _RUN) is not None, \
            "a forgotten id is kept"
        assert ((self._ids.ref(slot, _FN) is not None) == bool(self._rec(slot).pending_seq)), \
            "fn iff pending"
        assert self._rec(slot).pending_seq <= self._seq, "pending seq"
        pending += bool(self._rec(slot).pending_seq)
        task = self._ids.ref(slot, _RUN)
        if task is not None:
            running += 1
            assert task.state is _RUNNING and task.task_id is task_id, "running task"
            assert (<Task>task)._slot == slot, "running task's slot"
            assert (<Task>task)._version <= self._rec(slot).version, "running version"
    assert pending == self._live and running == self._running, "counters"
    # A parked entry is its slot's pending version, held back by a running one.
    for slot, parked in self._parked.items():
        assert self._rec(slot).pending_seq == parked[2], "parked entry"
        assert self._ids.ref(slot, _RUN) is not None, "parked behind a run"
    # The counters add up: every version handed out is pending, replaced,
    # cancelled, running or finished.
    assert self._seq == (self._live + self._replaced + self._cancelled + self._running
                         + self._completed + self._failed + self._released), "version count"
    return 0
