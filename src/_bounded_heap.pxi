# The bounded queue's heaps: nodes and the 4-ary heap operations on C arrays of them.

ctypedef struct Node:
    # The record's sort key, copied so that a sift reads no record: at
    # C = 100,000 loading a record per comparison made churn 2x slower.
    # The worst heap stores ~priority and ~seq: bitwise not reverses the order
    # without overflow, so both heaps are min-heaps under one comparison.
    int64_t priority
    uint64_t seq
    int32_t rec          # the record it names (in use while a node names it)


cdef inline bint _bq_before(const Node* a, const Node* b) noexcept nogil:
    # Seqs are unique, so two nodes never tie.
    if a.priority != b.priority:
        return a.priority < b.priority
    return a.seq < b.seq


@cython.cdivision(True)  # positions are never negative
cdef void _bq_sift_up(Node* heap, Py_ssize_t start, Py_ssize_t pos) noexcept nogil:
    # Precondition: the heap invariant holds everywhere except between ``pos``
    # and its ancestors up to ``start``.
    cdef Node item = heap[pos]
    cdef Py_ssize_t parent
    while pos > start:
        parent = (pos - 1) // _BQ_ARITY
        if not _bq_before(&item, &heap[parent]):
            break
        heap[pos] = heap[parent]
        pos = parent
    heap[pos] = item


cdef void _bq_sift_down(Node* heap, Py_ssize_t n, Py_ssize_t pos) noexcept nogil:
    # Precondition: every subtree below ``pos`` is a heap.
    # Floyd's bottom-up variant, as in heapq and the scheduler: walk the hole
    # down to a leaf along the best children, then sift the item back up. The
    # item is a last node or a newcomer that beat the worst, and belongs near
    # the leaves, so this saves the comparison with it at every level.
    cdef Node item = heap[pos]
    cdef Py_ssize_t start = pos
    cdef Py_ssize_t first, top, child, last
    while True:
        first = _BQ_ARITY * pos + 1
        if first >= n:
            break
        top = first
        last = min(first + _BQ_ARITY, n)
        for child in range(first + 1, last):
            if _bq_before(&heap[child], &heap[top]):
                top = child
        heap[pos] = heap[top]
        pos = top
    heap[pos] = item
    _bq_sift_up(heap, start, pos)


cdef inline int32_t _bq_pop_root(Node* heap, Py_ssize_t* n) noexcept nogil:
    # Precondition: n[0] > 0. Removes the root and returns its record.
    cdef int32_t rec = heap[0].rec
    n[0] -= 1
    if n[0]:
        heap[0] = heap[n[0]]
        _bq_sift_down(heap, n[0], 0)
    return rec


@cython.cdivision(True)
cdef void _bq_heapify(Node* heap, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    if n > 1:
        for k in range((n - 2) // _BQ_ARITY, -1, -1):
            _bq_sift_down(heap, n, k)


cdef inline void _bq_set(Node* node, int64_t priority, uint64_t seq, int32_t rec) noexcept nogil:
    node.priority = priority
    node.seq = seq
    node.rec = rec
