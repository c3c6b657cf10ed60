# QueueEntry: an entry as it left the bounded queue (pysched/_bounded_queue_py.py's QueueEntry).

@cython.final
@cython.freelist(8)
cdef class QueueEntry:
    """An entry as it left the queue: what ``push_or_evict()`` and ``pop_entry()`` return.

    ``reason`` says why: ``"evicted"`` (an old worst entry made room for a
    better newcomer), ``"capacity"`` or ``"quota"`` (the newcomer itself was
    refused), ``"popped"``. The attributes are read-only.
    """
    cdef readonly int64_t priority
    cdef readonly uint64_t seq
    cdef readonly object value
    cdef readonly object key
    cdef readonly object tenant
    cdef readonly str reason

    def __repr__(self):
        return (f"<QueueEntry {self.reason} priority={self.priority} seq={self.seq}"
                f" value={self.value!r} key={self.key!r} tenant={self.tenant!r}>")


cdef QueueEntry _bq_entry(int64_t priority, uint64_t seq, object value, object key,
                          object tenant, str reason):
    cdef QueueEntry entry = QueueEntry.__new__(QueueEntry)
    entry.priority = priority
    entry.seq = seq
    entry.value = value
    entry.key = key
    entry.tenant = tenant
    entry.reason = reason
    return entry
