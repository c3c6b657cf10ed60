# The scheduler's heap: entries and the 4-ary heap operations on a C array of them.
#
# Heap invariant (4-ary): entry k is not after any of its children
# 4k+1 .. 4k+4 under (run_at, -priority, seq). A 4-ary heap halves the depth
# of a binary one and keeps a node's children in one or two cache lines; pops
# dominate a scheduler's work and measured faster with it (see benchmarks).

cdef enum:
    _ARITY = 4


ctypedef struct HeapEntry:
    double run_at      # finite
    int64_t priority   # higher runs first
    uint64_t seq       # unique and increasing: FIFO among equal keys, and the liveness stamp
    Py_ssize_t slot    # the id's slot; the entry is live iff pending_seq[slot] == seq


cdef inline bint _before(const HeapEntry* a, const HeapEntry* b) noexcept nogil:
    if a.run_at != b.run_at:
        return a.run_at < b.run_at
    if a.priority != b.priority:
        return a.priority > b.priority
    return a.seq < b.seq


cdef inline void _prefetch_children_block(const HeapEntry* block) noexcept nogil:
    # The children of four siblings: 16 entries of 32 bytes, 8 cache lines.
    cdef const char* p = <const char*>block
    PYSCHED_PREFETCH(p)
    PYSCHED_PREFETCH(p + 64)
    PYSCHED_PREFETCH(p + 128)
    PYSCHED_PREFETCH(p + 192)
    PYSCHED_PREFETCH(p + 256)
    PYSCHED_PREFETCH(p + 320)
    PYSCHED_PREFETCH(p + 384)
    PYSCHED_PREFETCH(p + 448)


cdef inline Py_ssize_t _best_child(const HeapEntry* heap, Py_ssize_t first,
                                   Py_ssize_t last) noexcept nogil:
    """The position of the first of the children ``first .. last - 1`` in heap order."""
    cdef Py_ssize_t child, best = first
    for child in range(first + 1, last):
        if _before(&heap[child], &heap[best]):
            best = child
    return best


@cython.cdivision(True)  # positions are never negative
cdef void _sift_up(HeapEntry* heap, Py_ssize_t start, Py_ssize_t pos) noexcept nogil:
    # Precondition: the heap invariant holds everywhere except between
    # ``pos`` and its ancestors up to ``start``.
    cdef HeapEntry item = heap[pos]
    cdef Py_ssize_t parent
    while pos > start:
        parent = (pos - 1) // _ARITY
        if not _before(&item, &heap[parent]):
            break
        heap[pos] = heap[parent]
        pos = parent
    heap[pos] = item


@cython.cdivision(True)
cdef void _sift_down(HeapEntry* heap, Py_ssize_t n, Py_ssize_t pos) noexcept nogil:
    # Precondition: every subtree below ``pos`` is a heap.
    # Floyd's bottom-up variant, as in heapq: walk the hole down to a leaf
    # along the best children, then sift the item back up. The moved item
    # is usually a late one that belongs near the leaves, so this saves the
    # comparison with it at every level.
    cdef HeapEntry item = heap[pos]
    cdef Py_ssize_t start = pos
    cdef Py_ssize_t first = _ARITY * pos + 1
    cdef Py_ssize_t best
    # Whole nodes first: a fixed number of children, no bound to check.
    while first + _ARITY <= n:
        if _ARITY * (first + _ARITY) < n:
            # The next level's sixteen entries, the children of these four: start
            # loading them while this level is compared.
            _prefetch_children_block(&heap[_ARITY * first + 1])
        best = _best_child(heap, first, first + _ARITY)
        heap[pos] = heap[best]
        pos = best
        first = _ARITY * pos + 1
    if first < n:  # a last node with fewer children, all leaves
        best = _best_child(heap, first, n)
        heap[pos] = heap[best]
        pos = best
    heap[pos] = item
    _sift_up(heap, start, pos)
