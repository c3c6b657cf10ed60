# The scheduler's heap: entries and the 4-ary heap operations on a C array of them.
#
# Heap invariant (4-ary): entry k is not after any of its children
# 4k+1 .. 4k+4 under (run_at, -priority, seq). A 4-ary heap halves the depth
# of a binary one and keeps a node's children in one or two cache lines; pops
# dominate a scheduler's work and measured faster with it (see benchmarks).
#
# An entry holds run_at as ``key``, an unsigned integer in the same order
# (_time_key), so that the common comparison, of two different times, is one
# integer compare that compiles to a conditional move: with random times a
# branch there mispredicts at nearly every level of a pop.

cdef enum:
    _ARITY = 4


ctypedef struct HeapEntry:
    uint64_t key       # _time_key(run_at) of a finite run_at
    int64_t priority   # higher runs first
    uint64_t seq       # unique and increasing: FIFO among equal keys, and the liveness stamp
    Py_ssize_t slot    # the id's slot; the entry is live iff pending_seq[slot] == seq


ctypedef struct SlotRecord:  # the scheduler's record of an id in its id table
    Py_hash_t hash        # the id table's: the id's hash
    uint64_t version      # newest version handed out; a pending version is always the newest
    uint64_t pending_seq  # seq of the pending version's entry; 0 when none is pending


cdef union _DoubleBits:
    double value
    uint64_t bits


cdef uint64_t _SIGN = 0x8000000000000000ULL


cdef inline uint64_t _time_key(double run_at) noexcept nogil:
    """An unsigned integer in the order of ``run_at`` (finite): equal times, equal keys.

    IEEE 754 orders non-negative doubles as their bit patterns; setting the
    sign bit lifts them above the negative ones, whose bits are inverted to
    reverse their order. -0.0 is taken as 0.0 first, as the two are equal.
    """
    cdef _DoubleBits u
    u.value = run_at + 0.0  # -0.0 + 0.0 is 0.0
    return u.bits ^ ((0 - (u.bits >> 63)) | _SIGN)


cdef inline double _key_time(uint64_t key) noexcept nogil:
    """The run_at of a key: _time_key's inverse (a -0.0 comes back as 0.0)."""
    cdef _DoubleBits u
    u.bits = key ^ (((key >> 63) - 1) | _SIGN)
    return u.value


cdef inline bint _before(const HeapEntry* a, const HeapEntry* b) noexcept nogil:
    if a.key != b.key:
        return a.key < b.key
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


cdef inline Py_ssize_t _best_of_four(const HeapEntry* heap, Py_ssize_t first) noexcept nogil:
    """_best_child(heap, first, first + 4), without a branch on the outcome of a compare.

    A tournament: the better of each pair, then the better of the two winners,
    chosen by arithmetic on the compare's 0 or 1. Equal keys are rare with
    real times and go to _best_child, which also compares priority and seq.
    """
    cdef uint64_t k0 = heap[first].key, k1 = heap[first + 1].key
    cdef uint64_t k2 = heap[first + 2].key, k3 = heap[first + 3].key
    cdef Py_ssize_t left = first + (k1 < k0)
    cdef Py_ssize_t right = first + 2 + (k3 < k2)
    cdef uint64_t left_key = k1 if k1 < k0 else k0
    cdef uint64_t right_key = k3 if k3 < k2 else k2
    # Any tie: one test of all three pairs, a branch that is nearly always not taken.
    if (k0 == k1) | (k2 == k3) | (left_key == right_key):
        return _best_child(heap, first, first + _ARITY)
    # left, or right when right_key is smaller: a mask of all ones or zeros selects.
    return left ^ ((left ^ right) & -<Py_ssize_t>(right_key < left_key))


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
        best = _best_of_four(heap, first)
        heap[pos] = heap[best]
        pos = best
        first = _ARITY * pos + 1
    if first < n:  # a last node with fewer children, all leaves
        best = _best_child(heap, first, n)
        heap[pos] = heap[best]
        pos = best
    heap[pos] = item
    _sift_up(heap, start, pos)
