# The scheduler's pending set: a ladder queue over heap entries, with two
# heaps as its guards. docs/core-structure.md states the design, its
# invariants and its worst case; in short:
#
# - ``top``: an unsorted array of every entry whose key is >= ``top_start``.
#   Appending is O(1); its smallest and largest keys, and whether it is
#   already in order, are kept as it grows.
# - ``rungs[0 .. depth-1]``: each rung splits a key range into buckets, by
#   value (``(t - tmin) * scale``) or by the key's bits (``(key - lo) >>
#   shift``); both are monotone in the key, so every entry of a bucket comes
#   before every entry of a later one. Rung 0 was spawned from ``top``; rung
#   r + 1 from bucket ``cur`` of rung r, which it now holds. Buckets are
#   unsorted arrays, side by side in one slab from the spawn until one
#   outgrows its room and moves out; a bucket becomes current only when
#   everything before it has gone, and is then sorted (or split again, or
#   heapified) where it lies.
# - ``run``: the current bucket: a sorted array read from ``run_pos``, or, for
#   a big bucket that cannot be split (equal times, or too deep), a 4-ary heap.
# - ``early``: a 4-ary heap that takes what belongs at or before the current
#   bucket (past-due tasks, parked versions coming back, batches below
#   ``top_start``). The head is the first of ``early``'s root and ``run``'s
#   head; when ``run`` is empty, ``early``'s root still goes first while it is
#   before the next bucket.
#
# Entries keep the key order of _before() wherever they are, and the ladder
# holds exactly the entries the twin's heap holds (stale ones included: they
# go when they reach the head, or at a rebuild), so the housekeeping counters
# agree with the twin's. Only inserting allocates: callers reserve room first,
# so a MemoryError leaves the ladder as it was. Moving a bucket down allocates
# too, but falls back on heapifying it in place when memory runs out, so
# finding the head never fails.

cdef enum:
    _MAX_RUNGS = 8      # a bucket this deep is heapified, however its keys spread
    _BUCKET_FILL = 8    # entries per bucket a new rung is made for, on average
    _MAX_BUCKETS = 1024  # buckets a rung: what a scatter writes to at once stays in the cache
    _SORT_MAX = 48      # a current bucket of at most this many entries is sorted
    _SPILL_MIN = 1024   # the early heap is spilled back into the ladder only above this size

cdef extern from *:
    """
    static const unsigned long long PYSCHED_NO_KEY = 0xFFFFFFFFFFFFFFFFULL;
    """
    const uint64_t _NO_KEY "PYSCHED_NO_KEY"  # above every finite time's key


ctypedef struct EntryArray:
    HeapEntry* items
    Py_ssize_t len
    Py_ssize_t cap
    bint owned          # items is its own allocation; else a view into a rung's slab


ctypedef struct Rung:
    EntryArray* buckets
    HeapEntry* slab     # where the spawn put every bucket, one after another (owned)
    Py_ssize_t slab_len
    Py_ssize_t nb       # buckets
    Py_ssize_t cur      # buckets up to cur are used up; cur is split below, or current
    Py_ssize_t count    # entries in buckets after cur
    uint64_t lo         # the smallest key at the spawn: lower keys go to bucket 0
    double tmin         # by value: the time of lo
    double scale        # by value: buckets per second; 0.0 for a rung bucketed by bits
    int shift           # by bits: bucket = (key - lo) >> shift


ctypedef struct Ladder:
    EntryArray top
    uint64_t top_start      # keys >= top_start go to top
    uint64_t top_min        # while top is not empty: its smallest and largest key
    uint64_t top_max
    bint top_sorted         # top is in _before() order (appends usually are, for equal keys)
    Rung rungs[_MAX_RUNGS]
    int depth
    EntryArray run          # the current bucket, owned
    Py_ssize_t run_pos      # sorted: the head is run.items[run_pos]
    bint run_is_heap        # else a 4-ary heap of run.len entries
    void* early_block       # the early heap's allocation; early points inside it
    HeapEntry* early
    Py_ssize_t early_len
    Py_ssize_t early_cap
    Py_ssize_t size         # entries held, stale ones included
    bint head_early         # where _ladder_head() last found the head
    uint64_t moves          # changes whenever where an insert goes may change


# -- buckets and rungs ----------------------------------------------------

cdef inline Py_ssize_t _bucket_of(const Rung* rung, uint64_t key) noexcept nogil:
    """The bucket of ``key`` in ``rung``: monotone in the key, clamped to the rung's buckets."""
    cdef double x
    cdef uint64_t b
    if key < rung.lo:
        return 0
    if rung.scale != 0.0:
        # Finite: key >= lo, so the difference is >= 0 (at worst +inf, then clamped).
        x = (_key_time(key) - rung.tmin) * rung.scale
        return <Py_ssize_t>x if x < rung.nb else rung.nb - 1
    b = (key - rung.lo) >> rung.shift
    return <Py_ssize_t>b if b < <uint64_t>rung.nb else rung.nb - 1


cdef inline int _append(EntryArray* array, const HeapEntry* entry) noexcept nogil:
    # Precondition: array.len < array.cap.
    array.items[array.len] = entry[0]
    array.len += 1
    return 0


cdef int _reserve_array(EntryArray* array, Py_ssize_t n) except -1:
    """Room for ``n`` more entries in ``array`` (moved out of its slab if it is a view);
    a MemoryError leaves it as it was."""
    cdef Py_ssize_t cap
    cdef HeapEntry* moved
    if array.cap - array.len >= n:
        return 0
    cap = _grown(array.cap, array.len + n)
    if array.owned or array.items == NULL:
        _grow(<void**>&array.items, cap, sizeof(HeapEntry))
    else:
        moved = <HeapEntry*>PyMem_Malloc(cap * sizeof(HeapEntry))
        if moved == NULL:
            raise MemoryError()
        memcpy(moved, array.items, array.len * sizeof(HeapEntry))
        array.items = moved
    array.owned = True
    array.cap = cap
    return 0


cdef inline void _fit_array(EntryArray* array) noexcept:
    """Give memory back once under a quarter of ``array`` is used (freed when empty);
    a view keeps its room in the slab."""
    if not array.owned:
        if array.len == 0:
            array.items = NULL
            array.cap = 0
    elif array.len == 0:
        _free_array(array)
    else:
        array.cap = _fitted(<void**>&array.items, array.cap, array.len, sizeof(HeapEntry))


cdef inline void _free_array(EntryArray* array) noexcept:
    """Empty ``array``, freeing its items if they are its own."""
    if array.owned:
        PyMem_Free(array.items)
    array.items = NULL
    array.len = 0
    array.cap = 0
    array.owned = False


cdef HeapEntry* _alloc_entries(Py_ssize_t n) noexcept:
    """Room for ``n`` entries, or NULL; a big block asks for huge pages (see _grow)."""
    cdef HeapEntry* items = <HeapEntry*>PyMem_Malloc(max(1, n) * sizeof(HeapEntry))
    if items != NULL and n * sizeof(HeapEntry) >= _HUGE_ENOUGH:
        _advise_huge(items, n * sizeof(HeapEntry))
    return items


cdef void _pop_rung(Ladder* L) noexcept:
    """Drop the lowest rung, used up (its buckets are empty), with its slab."""
    cdef Rung* rung = &L.rungs[L.depth - 1]
    cdef Py_ssize_t j
    for j in range(rung.nb):
        _free_array(&rung.buckets[j])  # all empty, some still holding their room
    PyMem_Free(rung.buckets)
    PyMem_Free(rung.slab)
    rung.buckets = NULL
    rung.slab = NULL
    L.depth -= 1


cdef void _compact_slab(Rung* rung) noexcept:
    """Move the buckets still in the slab to a slab of their size, once they fill
    under a quarter of it: memory follows the entries as a rung is used up.

    O(entries moved), at most a quarter of what was taken since the last move.
    Nothing happens when memory runs out. Precondition: no current bucket lies in
    the slab (the run is empty).
    """
    cdef Py_ssize_t j, n = 0
    cdef HeapEntry* slab
    for j in range(rung.cur + 1, rung.nb):
        if not rung.buckets[j].owned:
            n += rung.buckets[j].len
    slab = _alloc_entries(n)
    if slab == NULL:
        return
    n = 0
    for j in range(rung.cur + 1, rung.nb):
        if rung.buckets[j].owned:
            continue
        n = _copy_out(slab, n, rung.buckets[j].items, rung.buckets[j].len)
        rung.buckets[j].items = &slab[n - rung.buckets[j].len] if rung.buckets[j].len else NULL
        rung.buckets[j].cap = rung.buckets[j].len
    PyMem_Free(rung.slab)
    rung.slab = slab
    rung.slab_len = n


cdef int _bits(uint64_t value) noexcept nogil:
    """The number of bits of ``value``: 0 for 0."""
    cdef int bits = 0
    while bits < 64 and (value >> bits):
        bits += 1
    return bits


cdef Py_ssize_t _count_buckets(const Rung* rung, const HeapEntry* items, Py_ssize_t n,
                               EntryArray* buckets) noexcept nogil:
    """Count ``items`` into ``buckets[j].cap`` by bucket; return the largest count."""
    cdef Py_ssize_t k, j, most = 0
    for j in range(rung.nb):
        buckets[j].cap = 0
    for k in range(n):
        buckets[_bucket_of(rung, items[k].key)].cap += 1
    for j in range(rung.nb):
        if buckets[j].cap > most:
            most = buckets[j].cap
    return most


cdef bint _spawn_rung(Ladder* L, EntryArray* items, uint64_t kmin, uint64_t kmax) noexcept:
    """Scatter ``items`` (emptied here) into a new lowest rung, keys kmin .. kmax.

    Returns False, changing nothing, when memory runs out. Precondition:
    kmin < kmax and depth < _MAX_RUNGS.
    """
    cdef Rung* rung = &L.rungs[L.depth]
    cdef Py_ssize_t n = items.len
    cdef Py_ssize_t nb = max(2, min(n // _BUCKET_FILL, _MAX_BUCKETS)), j, k, most = n, at
    cdef uint64_t span = kmax - kmin
    cdef int width
    cdef double seconds, scale
    cdef EntryArray* buckets = <EntryArray*>PyMem_Malloc((nb + 1) * sizeof(EntryArray))
    if buckets == NULL:
        return False
    rung.lo = kmin
    rung.nb = nb
    # By value first: it spreads evenly spread times evenly. Refused when the
    # range is too wide or too narrow for doubles, or when it piles most
    # entries into one bucket (times spread by orders of magnitude), where
    # the key's bits, which grow with the logarithm, spread them better.
    rung.tmin = _key_time(kmin)
    seconds = _key_time(kmax) - rung.tmin
    scale = nb / seconds if isfinite(seconds) and seconds > 0.0 else 0.0
    rung.scale = scale if isfinite(scale) else 0.0
    if rung.scale != 0.0:
        most = _count_buckets(rung, items.items, n, buckets)
    if most * 2 > n:
        # By bits: a power-of-two number of buckets of 2**shift keys each.
        width = _bits(nb) - 1  # log2 of the largest power of two <= nb
        rung.scale = 0.0
        rung.shift = max(0, _bits(span) - width)
        rung.nb = <Py_ssize_t>(span >> rung.shift) + 1  # <= 2**width <= nb
        _count_buckets(rung, items.items, n, buckets)
    nb = rung.nb
    rung.slab = _alloc_entries(n)
    if rung.slab == NULL:
        PyMem_Free(buckets)
        return False
    rung.slab_len = n
    # Each bucket's room, in order, in the slab: the entries are then spread
    # over at most _MAX_BUCKETS places, one after another in each.
    at = 0
    for j in range(nb):
        buckets[j].items = &rung.slab[at] if buckets[j].cap else NULL
        buckets[j].len = 0
        buckets[j].owned = False
        at += buckets[j].cap
    for k in range(n):
        _append(&buckets[_bucket_of(rung, items.items[k].key)], &items.items[k])
    _free_array(items)
    rung.buckets = buckets
    rung.cur = -1
    rung.count = n
    L.depth += 1
    return True


# -- sorting a bucket ---------------------------------------------------------

cdef void _insertion_sort(HeapEntry* a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k, j
    cdef HeapEntry item
    for k in range(1, n):
        item = a[k]
        j = k
        while j > 0 and _before(&item, &a[j - 1]):
            a[j] = a[j - 1]
            j -= 1
        a[j] = item


cdef void _sort_entries(HeapEntry* a, Py_ssize_t n) noexcept nogil:
    """Sort ``a[:n]`` (n <= _SORT_MAX) in _before() order: runs of 8 by insertion, then merges."""
    cdef HeapEntry scratch[_SORT_MAX]
    cdef HeapEntry* src = a
    cdef HeapEntry* dst = scratch
    cdef HeapEntry* swap
    cdef Py_ssize_t width = 8, start, mid, end, i, j, k
    if n <= 16:
        _insertion_sort(a, n)
        return
    start = 0
    while start < n:
        _insertion_sort(&a[start], min(width, n - start))
        start += width
    while width < n:
        start = 0
        while start < n:
            mid = min(start + width, n)
            end = min(start + 2 * width, n)
            i = start
            j = mid
            k = start
            while i < mid and j < end:
                if _before(&src[j], &src[i]):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < end:
                dst[k] = src[j]
                j += 1
                k += 1
            start += 2 * width
        swap = src
        src = dst
        dst = swap
        width *= 2
    if src != a:
        memcpy(a, src, n * sizeof(HeapEntry))


cdef bint _in_order(const HeapEntry* a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(1, n):
        if _before(&a[k], &a[k - 1]):
            return False
    return True


cdef void _heapify(HeapEntry* heap, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    for k in range((n - 2) // _ARITY, -1, -1):
        _sift_down(heap, n, k)


# -- the current bucket ---------------------------------------------------------

cdef void _settle(Ladder* L, EntryArray* items, bint in_order, uint64_t kmin,
                  uint64_t kmax) noexcept:
    """Make ``items`` (taken over here) the current bucket: sorted, split or heapified where it lies.

    Precondition: the run is empty (freed).
    """
    if in_order or items.len <= _SORT_MAX:
        if not in_order:
            _sort_entries(items.items, items.len)
        L.run_is_heap = False
    elif kmin != kmax and L.depth < _MAX_RUNGS and _spawn_rung(L, items, kmin, kmax):
        return
    else:
        # Equal times, too deep, or no memory: a heap, O(n) to make, O(log n) a pop.
        _heapify(items.items, items.len)
        L.run_is_heap = True
    L.run = items[0]
    L.run_pos = 0


cdef void _take_bucket(Ladder* L) noexcept:
    """Make bucket cur + 1 of the lowest rung, which is not empty, the current bucket."""
    cdef Rung* rung = &L.rungs[L.depth - 1]
    cdef EntryArray bucket
    cdef uint64_t kmin = _NO_KEY, kmax = 0
    cdef bint in_order = True
    cdef Py_ssize_t k
    rung.cur += 1
    L.moves += 1
    bucket = rung.buckets[rung.cur]
    rung.buckets[rung.cur].items = NULL  # the run takes it over
    rung.buckets[rung.cur].len = 0
    rung.buckets[rung.cur].cap = 0
    rung.buckets[rung.cur].owned = False
    rung.count -= bucket.len
    if bucket.len > _SORT_MAX:
        for k in range(bucket.len):
            kmin = min(kmin, bucket.items[k].key)
            kmax = max(kmax, bucket.items[k].key)
        in_order = _in_order(bucket.items, bucket.len)
    else:
        in_order = False
    _settle(L, &bucket, in_order, kmin, kmax)


cdef void _take_top(Ladder* L) noexcept:
    """Make everything in top, which is not empty, the current bucket (or the first rung)."""
    cdef EntryArray top = L.top
    L.top.items = NULL
    L.top.len = 0
    L.top.cap = 0
    L.top.owned = False
    L.moves += 1
    # Keys up to top_max now belong below top. top_max is finite, so the
    # sum stays below _NO_KEY.
    L.top_start = L.top_max + 1
    _settle(L, &top, L.top_sorted, L.top_min, L.top_max)


cdef inline bint _run_empty(const Ladder* L) noexcept nogil:
    return L.run_pos >= L.run.len


cdef inline HeapEntry* _run_head(Ladder* L) noexcept nogil:
    return &L.run.items[0 if L.run_is_heap else L.run_pos]


cdef bint _next_bucket(Ladder* L) noexcept:
    """Step the lowest rung over its empty buckets, dropping used-up rungs; False when
    no rung is left. Then bucket cur + 1 of the lowest rung is the next one to take."""
    cdef Rung* rung
    cdef Py_ssize_t j
    while L.depth:
        rung = &L.rungs[L.depth - 1]
        if rung.count:
            if rung.count * 4 < rung.slab_len and rung.slab_len >= 4096:
                _compact_slab(rung)
            j = rung.cur + 1
            while rung.buckets[j].len == 0:
                j += 1
            if rung.cur != j - 1:
                rung.cur = j - 1  # the empty ones are used up: a later key there goes early
                L.moves += 1
            return True
        _pop_rung(L)
        L.moves += 1
    return False


cdef HeapEntry* _ladder_head(Ladder* L) noexcept:
    """The first entry in _before() order, or NULL when there is none.

    Moves buckets down as needed, and records in ``head_early`` where it found it.
    """
    cdef HeapEntry* head
    cdef bint more
    while True:
        if not _run_empty(L):
            head = _run_head(L)
            L.head_early = L.early_len and _before(&L.early[0], head)
            return &L.early[0] if L.head_early else head
        if L.run.items != NULL:  # used up
            _free_array(&L.run)
            L.run_pos = 0
        more = _next_bucket(L)
        # The early root goes first while it is before everything the next
        # bucket (or top) can hold: a key in an earlier bucket of the lowest
        # rung is before every key in this one.
        if L.early_len:
            if more:
                L.head_early = (_bucket_of(&L.rungs[L.depth - 1], L.early[0].key)
                                <= L.rungs[L.depth - 1].cur)
            else:
                L.head_early = L.top.len == 0 or L.early[0].key < L.top_min
            if L.head_early:
                return &L.early[0]
        if more:
            _take_bucket(L)
        elif L.top.len:
            _take_top(L)
        else:
            return NULL


cdef void _ladder_pop_head(Ladder* L) noexcept:
    """Drop the entry _ladder_head() returns. Precondition: there is one."""
    _ladder_head(L)
    L.size -= 1
    if L.head_early:
        _early_pop(L)
    elif L.run_is_heap:
        L.run.len -= 1
        if L.run.len:
            L.run.items[0] = L.run.items[L.run.len]
            _sift_down(L.run.items, L.run.len, 0)
    else:
        L.run_pos += 1


# -- inserting -----------------------------------------------------------------

cdef EntryArray* _bucket_for(Ladder* L, uint64_t key, Rung** owner) noexcept:
    """The bucket an entry of ``key`` below top_start belongs in, or NULL for early."""
    cdef Rung* rung
    cdef Py_ssize_t b
    cdef int r
    for r in range(L.depth):
        rung = &L.rungs[r]
        b = _bucket_of(rung, key)
        if b > rung.cur:
            owner[0] = rung
            return &rung.buckets[b]
        if b < rung.cur:
            return NULL
        # b == cur: inside the rung below, or the current bucket itself.
    return NULL


cdef int _ladder_reserve(Ladder* L, uint64_t key) except -1:
    """Room for one entry of ``key``, where _ladder_push() will put it."""
    cdef Rung* rung
    cdef EntryArray* bucket
    if key >= L.top_start:
        return _reserve_array(&L.top, 1)
    bucket = _bucket_for(L, key, &rung)
    if bucket != NULL:
        return _reserve_array(bucket, 1)
    return _reserve_early(L, 1)


cdef void _ladder_push(Ladder* L, const HeapEntry* entry) noexcept:
    """Insert ``entry`` where it belongs. Precondition: _ladder_reserve() for its key."""
    cdef Rung* rung
    cdef EntryArray* bucket
    if entry.key >= L.top_start:
        _push_top(L, entry)
        return
    bucket = _bucket_for(L, entry.key, &rung)
    if bucket != NULL:
        _append(bucket, entry)
        rung.count += 1
        L.size += 1
    else:
        _ladder_push_early(L, entry)


cdef int _ladder_reserve_batch(Ladder* L, Py_ssize_t to_top, Py_ssize_t to_early) except -1:
    """Room for ``to_top`` entries at or above top_start and ``to_early`` below it
    (_ladder_push_batch() puts those in the early heap)."""
    _reserve_array(&L.top, to_top)
    _reserve_early(L, to_early)
    return 0


cdef inline void _ladder_push_batch(Ladder* L, const HeapEntry* entry) noexcept:
    """Insert ``entry`` with room reserved by _ladder_reserve_batch()."""
    if entry.key >= L.top_start:
        _push_top(L, entry)
    else:
        _ladder_push_early(L, entry)


cdef inline void _push_top(Ladder* L, const HeapEntry* entry) noexcept:
    if L.top.len == 0:
        L.top_min = L.top_max = entry.key
        L.top_sorted = True
    else:
        if entry.key < L.top_min:
            L.top_min = entry.key
        if entry.key > L.top_max:
            L.top_max = entry.key
        if L.top_sorted and _before(entry, &L.top.items[L.top.len - 1]):
            L.top_sorted = False
    _append(&L.top, entry)
    L.size += 1


# -- the early heap ---------------------------------------------------------------

cdef int _resize_early(Ladder* L, Py_ssize_t n) except -1:
    # A node's four children are 128 bytes, two cache lines if they start
    # on a line and three if not. Children start at entries 1, 5, 9, ...,
    # so the heap begins 32 bytes before a line: the block has room to
    # shift it there, and its data moves if a realloc changes the shift.
    cdef size_t old_shift = <char*>L.early - <char*>L.early_block
    cdef size_t shift
    n = max(16, n)
    _grow(&L.early_block, n * sizeof(HeapEntry) + 64, 1)
    shift = (32 - <size_t>L.early_block) & 63
    if L.early_len and shift != old_shift:
        memmove(<char*>L.early_block + shift, <char*>L.early_block + old_shift,
                L.early_len * sizeof(HeapEntry))
    L.early = <HeapEntry*>(<char*>L.early_block + shift)
    L.early_cap = n
    return 0


cdef int _reserve_early(Ladder* L, Py_ssize_t n) except -1:
    if L.early_cap - L.early_len < n:
        _resize_early(L, _grown(L.early_cap, L.early_len + n))
    return 0


cdef inline void _ladder_push_early(Ladder* L, const HeapEntry* entry) noexcept:
    """Push ``entry`` on the early heap. Precondition: room reserved."""
    L.early[L.early_len] = entry[0]
    L.early_len += 1
    L.size += 1
    _sift_up(L.early, 0, L.early_len - 1)


cdef inline void _early_pop(Ladder* L) noexcept:
    L.early_len -= 1
    if L.early_len:
        L.early[0] = L.early[L.early_len]
        _sift_down(L.early, L.early_len, 0)


# -- housekeeping ----------------------------------------------------------------

cdef inline bint _entry_live(const HeapEntry* entry, const SlotRecord* slots,
                             Py_ssize_t n_slots) noexcept nogil:
    # A stale entry may name a slot cut off by a shrink: at or past n_slots it
    # is stale, and below it a cut slot's pending_seq is 0 (or a newer seq).
    return entry.slot < n_slots and slots[entry.slot].pending_seq == entry.seq


cdef Py_ssize_t _keep_live(HeapEntry* items, Py_ssize_t n, const SlotRecord* slots,
                           Py_ssize_t n_slots) noexcept nogil:
    """Move the live entries of ``items[:n]`` to its front, in order; return how many."""
    cdef Py_ssize_t k, kept = 0
    for k in range(n):
        if _entry_live(&items[k], slots, n_slots):
            items[kept] = items[k]
            kept += 1
    return kept


cdef Py_ssize_t _ladder_drop_stale(Ladder* L, const SlotRecord* slots,
                                   Py_ssize_t n_slots) noexcept:
    """Drop every stale entry, wherever it is; return how many went. O(size + buckets)."""
    cdef Py_ssize_t before = L.size, kept, j
    cdef Rung* rung
    cdef int r
    L.top.len = _keep_live(L.top.items, L.top.len, slots, n_slots)
    _fit_array(&L.top)  # top_min and top_max stay bounds; order is kept
    for r in range(L.depth):
        rung = &L.rungs[r]
        for j in range(rung.cur + 1, rung.nb):
            kept = _keep_live(rung.buckets[j].items, rung.buckets[j].len, slots, n_slots)
            rung.count -= rung.buckets[j].len - kept
            rung.buckets[j].len = kept
            _fit_array(&rung.buckets[j])
    if L.run_is_heap:
        L.run.len = _keep_live(L.run.items, L.run.len, slots, n_slots)
        _heapify(L.run.items, L.run.len)
    elif not _run_empty(L):
        L.run.len = _keep_live(&L.run.items[L.run_pos], L.run.len - L.run_pos, slots, n_slots)
        memmove(L.run.items, &L.run.items[L.run_pos], L.run.len * sizeof(HeapEntry))
        L.run_pos = 0
    if L.run.len:
        _fit_array(&L.run)
    L.early_len = _keep_live(L.early, L.early_len, slots, n_slots)
    _heapify(L.early, L.early_len)
    L.size = _ladder_count(L)
    return before - L.size


cdef Py_ssize_t _ladder_count(const Ladder* L) noexcept:
    """The entries in every part, counted."""
    cdef Py_ssize_t total = L.top.len + L.early_len, j
    cdef int r
    total += L.run.len if L.run_is_heap else L.run.len - L.run_pos
    for r in range(L.depth):
        for j in range(L.rungs[r].cur + 1, L.rungs[r].nb):
            total += L.rungs[r].buckets[j].len
    return total


cdef void _ladder_fit(Ladder* L) noexcept:
    """Give memory back from top and the early heap once under a quarter of either is used."""
    if L.top.len * 4 < L.top.cap and L.top.cap > 16:
        _fit_array(&L.top)
    if L.early_len * 4 < L.early_cap and L.early_cap > 16:
        # To half full; if the allocator cannot move it, it stays as it is.
        try:
            _resize_early(L, max(16, L.early_len * 2))
        except MemoryError:
            pass


cdef bint _ladder_wants_spill(const Ladder* L) noexcept:
    """The early heap holds most entries: they would be cheaper in the ladder."""
    return L.early_len >= _SPILL_MIN and 2 * L.early_len > L.size


cdef inline Py_ssize_t _copy_out(HeapEntry* dst, Py_ssize_t at, const HeapEntry* src,
                                 Py_ssize_t n) noexcept nogil:
    """Copy ``src[:n]`` to ``dst[at:]`` (src may be NULL when n is 0); return the new end."""
    if n:
        memcpy(&dst[at], src, n * sizeof(HeapEntry))
    return at + n


cdef void _ladder_spill(Ladder* L) noexcept:
    """Put every entry back in top, and the ladder to its start; nothing on no memory.

    O(size). Called when the early heap holds most entries, which each came by
    an insert or a parked version coming back: amortised O(1) for each of them.
    """
    cdef HeapEntry* items = <HeapEntry*>PyMem_Malloc(max(1, L.size) * sizeof(HeapEntry))
    cdef Py_ssize_t n = 0, j, k, first
    cdef Rung* rung
    cdef int r
    if items == NULL:
        return
    L.moves += 1
    n = _copy_out(items, n, L.top.items, L.top.len)
    _free_array(&L.top)
    # The run first: it may lie in the lowest rung's slab.
    first = 0 if L.run_is_heap else L.run_pos
    if L.run.len > first:
        n = _copy_out(items, n, &L.run.items[first], L.run.len - first)
    _free_array(&L.run)
    L.run_pos = 0
    L.run_is_heap = False
    while L.depth:
        rung = &L.rungs[L.depth - 1]
        for j in range(rung.cur + 1, rung.nb):
            n = _copy_out(items, n, rung.buckets[j].items, rung.buckets[j].len)
        _pop_rung(L)
    n = _copy_out(items, n, L.early, L.early_len)
    L.early_len = 0
    L.top.items = items
    L.top.len = n
    L.top.cap = max(1, L.size)
    L.top.owned = True
    L.top_start = 0
    if n:
        L.top_min = L.top_max = items[0].key
        for k in range(1, n):
            L.top_min = min(L.top_min, items[k].key)
            L.top_max = max(L.top_max, items[k].key)
        L.top_sorted = _in_order(items, n)
    _ladder_fit(L)


cdef void _ladder_free(Ladder* L) noexcept:
    _free_array(&L.top)
    _free_array(&L.run)
    while L.depth:
        _pop_rung(L)
    PyMem_Free(L.early_block)
    L.early_block = NULL
    L.early = NULL
    L.early_len = L.early_cap = 0
    L.size = 0


# -- checking (tests call Scheduler._check(), which calls this) ------------------

cdef list _ladder_check(Ladder* L):
    """Assert the ladder's invariants; return every entry it holds, as ``(slot, seq)``."""
    cdef list held = []
    cdef Rung* rung
    cdef Rung* upper
    cdef HeapEntry* entry
    cdef Py_ssize_t j, k, count, first
    cdef int r, q
    # top: every key at or above top_start, within top_min .. top_max; in order if it says so.
    for k in range(L.top.len):
        entry = &L.top.items[k]
        assert entry.key >= L.top_start, "top entry below top_start"
        assert L.top_min <= entry.key <= L.top_max, "top's key bounds"
        held.append((entry.slot, entry.seq))
    assert not (L.top.len and L.top_sorted) or _in_order(L.top.items, L.top.len), "top order"
    assert 0 <= L.depth <= _MAX_RUNGS
    for r in range(L.depth):
        rung = &L.rungs[r]
        assert 2 <= rung.nb and -1 <= rung.cur < rung.nb, "rung's buckets"
        count = 0
        for j in range(rung.nb):
            if j <= rung.cur:
                assert rung.buckets[j].len == 0, "a used-up bucket holds entries"
                continue
            assert 0 <= rung.buckets[j].len <= rung.buckets[j].cap, "bucket size"
            count += rung.buckets[j].len
            for k in range(rung.buckets[j].len):
                entry = &rung.buckets[j].items[k]
                # Below top, in its own bucket, and in the split bucket of every rung above.
                assert entry.key < L.top_start, "rung entry at or above top_start"
                assert _bucket_of(rung, entry.key) == j, "entry in another bucket"
                for q in range(r):
                    upper = &L.rungs[q]
                    assert _bucket_of(upper, entry.key) == upper.cur, "entry outside its rung"
                held.append((entry.slot, entry.seq))
        assert count == rung.count, "rung count"
    # The run: the current bucket of every rung, in order (or a heap).
    first = 0 if L.run_is_heap else L.run_pos
    assert 0 <= first <= L.run.len <= L.run.cap or (L.run.items == NULL and L.run.len == 0)
    for k in range(first, L.run.len):
        entry = &L.run.items[k]
        assert entry.key < L.top_start, "run entry at or above top_start"
        for q in range(L.depth):
            upper = &L.rungs[q]
            assert _bucket_of(upper, entry.key) == upper.cur, "run entry outside the current bucket"
        held.append((entry.slot, entry.seq))
    if L.run_is_heap:
        _check_heap(L.run.items, L.run.len)
    elif L.run.len > first:
        assert _in_order(&L.run.items[first], L.run.len - first), "run order"
    # The early heap: anything, in heap order.
    assert 0 <= L.early_len <= L.early_cap
    _check_heap(L.early, L.early_len)
    for k in range(L.early_len):
        held.append((L.early[k].slot, L.early[k].seq))
    assert len(held) == L.size == _ladder_count(L), "ladder size"
    return held


cdef int _check_heap(const HeapEntry* heap, Py_ssize_t n) except -1:
    """Heap order: no entry is before its parent."""
    cdef Py_ssize_t k, child
    for k in range(n):
        for child in range(_ARITY * k + 1, min(_ARITY * k + _ARITY + 1, n)):
            assert not _before(&heap[child], &heap[k]), "heap order"
    return 0
