# QueueEntry: an entry as it left the bounded queue (pysched/_bounded_queue_py.py's QueueEntry),
# and Taken: its objects as a call holds them until its commit is done.

from cpython.ref cimport Py_XDECREF

ctypedef struct Taken:
    # An entry _kill took out of the queue: owned references to its objects,
    # which _release_taken drops once the call's commit is done (their
    # finalisers may run then, on a whole queue). value is NULL when unset.
    int64_t priority
    uint64_t seq
    PyObject* value
    PyObject* key     # NULL for none
    PyObject* tenant  # NULL for none


cdef inline void _release_taken(Taken* taken) noexcept:
    Py_XDECREF(taken.value)
    Py_XDECREF(taken.key)
    Py_XDECREF(taken.tenant)
    taken.value = taken.key = taken.tenant = NULL


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


cdef void _bq_fill(QueueEntry entry, Taken* taken, str reason) noexcept:
    """Move what _kill took out into ``entry``: its references pass to the entry."""
    entry.priority = taken.priority
    entry.seq = taken.seq
    entry.value = <object>taken.value
    entry.key = <object>taken.key if taken.key != NULL else None
    entry.tenant = <object>taken.tenant if taken.tenant != NULL else None
    entry.reason = reason
    _release_taken(taken)  # the entry holds them now
