# The bounded queue's heaps: nodes and the 4-ary heap operations on C arrays of them.

# Node is defined in C so that the child selection below can read it whole.
cdef extern from *:
    """
    typedef struct {
        int64_t priority;
        uint64_t seq;
        int32_t rec;
    } PyschedBqNode;

    /* The best of four sibling nodes, as 0..3. With a 128-bit integer the
       key (priority, seq) compares in one step and the choice is made with
       conditional moves: random priorities made the branches of a plain
       loop mispredict about once a level. */
    #if defined(__SIZEOF_INT128__)
    static inline unsigned __int128 pysched_bq_key(const PyschedBqNode* n) {
        return ((unsigned __int128)((uint64_t)n->priority ^ 0x8000000000000000ULL) << 64) | n->seq;
    }
    static inline Py_ssize_t pysched_bq_best_of_four(const PyschedBqNode* c) {
        unsigned __int128 k0 = pysched_bq_key(c), k1 = pysched_bq_key(c + 1);
        unsigned __int128 k2 = pysched_bq_key(c + 2), k3 = pysched_bq_key(c + 3);
        Py_ssize_t lo = k1 < k0, hi = 2 + (k3 < k2);
        unsigned __int128 klo = lo ? k1 : k0, khi = hi == 3 ? k3 : k2;
        Py_ssize_t upper = -(Py_ssize_t)(khi < klo);  /* all ones when the upper pair wins */
        return (lo & ~upper) | (hi & upper);
    }
    #else
    static inline int pysched_bq_before(const PyschedBqNode* a, const PyschedBqNode* b) {
        return a->priority != b->priority ? a->priority < b->priority : a->seq < b->seq;
    }
    static inline Py_ssize_t pysched_bq_best_of_four(const PyschedBqNode* c) {
        Py_ssize_t k, top = 0;
        for (k = 1; k < 4; k++) if (pysched_bq_before(c + k, c + top)) top = k;
        return top;
    }
    #endif
    """
    ctypedef struct Node "PyschedBqNode":
        # The record's sort key, copied so that a sift reads no record: at
        # C = 100,000 loading a record per comparison made churn 2x slower.
        # The worst heap stores ~priority and ~seq: bitwise not reverses the order
        # without overflow, so both heaps are min-heaps under one comparison.
        int64_t priority
        uint64_t seq
        int32_t rec          # the record it names (in use while a node names it)
    Py_ssize_t _bq_best_of_four "pysched_bq_best_of_four" (const Node* siblings) noexcept nogil


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
    cdef Py_ssize_t first, top, child
    while True:
        first = _BQ_ARITY * pos + 1
        if first >= n:
            break
        if first + _BQ_ARITY <= n:
            top = first + _bq_best_of_four(&heap[first])
        else:
            top = first
            for child in range(first + 1, n):
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
