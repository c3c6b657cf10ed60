# IdTable: hashable key -> small int slot, for the version table and for
# addressable queue entries; each slot also has a record and a few object
# references for its owner.
#
# The pure twins use a dict. Here a dict of 1,000,000 ids costs 40 to 80 bytes
# an id, plus 32 for each int slot it maps to; this table costs 4 bytes a
# bucket at a load of at most 1/2 plus 8 for the stored hash, which is what
# keeps a pending task under 100 bytes (see the memory benchmark).
#
# Owners keep what they know of each slot in the table, beside the key: a C
# record whose first word is the key's hash (``record_size`` bytes in all),
# and ``stride - 1`` references after the key in ``keys``. The scheduler keeps
# a version and a pending seq in the record and the pending fn and the running
# Task as references, so what a claim reads of an id is in two places of
# memory rather than six: at a million ids each is a cache miss.
#
# Invariants:
# - ``index`` has ``mask + 1`` buckets, a power of two, at least twice ``count``:
#   probing always ends at an empty bucket.
# - A bucket holds -1 (empty) or a slot in use, with _HASH_IS_KEY set when the
#   slot's key is an exact int equal to its hash (most int ids): two such keys
#   with equal hashes are equal, so ``find`` need not load the stored key
#   object, which at a million ids is a cache miss. Every slot in use is in exactly
#   one bucket, reachable from its home bucket by linear probing with no empty
#   bucket between (deletion shifts entries back to keep this; no tombstones).
# - ``keys`` holds ``stride`` items for each of the ``slots`` slots handed out
#   so far: ``keys[stride * s]`` is the key of slot ``s``, or _FREE while ``s``
#   is free (None is a valid key); the owner's references follow it and are
#   None while the slot is free. Every free slot below ``slots`` is on the
#   ``free`` stack, which may also hold slots at or past ``slots`` (left when
#   ``keys`` was cut short): ``add`` skips those.
# - The record of a slot in use starts with its key's hash. A slot's record
#   is zeroed when the slot number first comes below ``slots`` (again after a
#   cut), and only its owner writes the rest: so the record of every slot below
#   ``slots`` holds what its owner last wrote, or zeros. ``records`` and ``free``
#   are ``slot_capacity`` long.
# - Memory follows the live keys: once fewer than a quarter of the slots are in
#   use, ``shrink`` cuts the free slots off the top and halves the arrays and
#   the buckets while they are under a quarter full, so they end half full and
#   an oscillating load does not resize at every step.

cdef enum:
    _MIN_BUCKETS = 8
    _MAX_SLOTS = 0x3FFFFFFF  # slot numbers stay far inside int32_t
    _HASH_IS_KEY = 0x40000000  # a bucket's flag above its slot number (see the invariants)
    _SLOT_BITS = 0x3FFFFFFF


cdef inline bint _hash_is_key(object key, Py_hash_t h) noexcept:
    """``key`` is an exact int equal to ``h``, its hash (every int of magnitude below 2**61 but -1)."""
    cdef int overflow = 0
    cdef long long value
    if not PyLong_CheckExact(key):
        return False
    value = PyLong_AsLongLongAndOverflow(key, &overflow)
    return not overflow and value == h  # hash(-1) is -2


cdef object _FREE = object()


cdef inline size_t _home(Py_hash_t h, int shift) noexcept nogil:
    # Fibonacci hashing: the high bits of h times 2**64/phi spread strided keys
    # (ids like 0, 1024, 2048, ...) that plain masking would pile into one run.
    return <size_t>((<uint64_t>h * <uint64_t>0x9E3779B97F4A7C15ULL) >> shift)


@cython.final
@cython.no_gc_clear  # keys stay a list for the owner's lifetime; cycles break elsewhere
cdef class IdTable:
    cdef int32_t* index
    cdef size_t mask
    cdef int shift            # 64 - log2(mask + 1)
    cdef char* records        # by slot, ``record_size`` bytes each: the key's hash, then the owner's
    cdef size_t record_size
    cdef Py_ssize_t stride    # items of ``keys`` a slot: its key, then the owner's references
    cdef int32_t* free        # stack of free slots below ``slots``
    cdef Py_ssize_t n_free
    cdef Py_ssize_t slot_capacity
    cdef Py_ssize_t slots     # one past the highest slot handed out: len(keys) == stride * slots
    cdef readonly Py_ssize_t count
    cdef list keys            # by slot, ``stride`` items each
    cdef uint64_t stamp       # changes whenever buckets change: detects re-entrant edits
    cdef Py_ssize_t shrink_at  # try to shrink again only below this count (a failed try halves it)
    cdef size_t keys_advised  # the room of ``keys`` last advised to use huge pages (see _grow)

    def __cinit__(self, Py_ssize_t record_size=0, Py_ssize_t stride=1):
        # Records are whole words, so every hash stays aligned.
        self.record_size = <size_t>max(record_size, <Py_ssize_t>sizeof(Py_hash_t))
        self.record_size = (self.record_size + 7) & ~(<size_t>7)
        self.stride = max(stride, 1)
        self.keys = []
        self.shrink_at = PY_SSIZE_T_MAX
        self._alloc_buckets(_MIN_BUCKETS)

    def __dealloc__(self):
        PyMem_Free(self.index)
        PyMem_Free(self.records)
        PyMem_Free(self.free)

    cdef inline Py_hash_t* _hash_at(self, Py_ssize_t s) noexcept:
        return <Py_hash_t*>(self.records + <size_t>s * self.record_size)

    cdef inline void* record(self, Py_ssize_t s) noexcept:
        """The record of slot ``s`` (below ``slot_limit()``): the hash, then the owner's part."""
        return self.records + <size_t>s * self.record_size

    cdef inline object ref(self, Py_ssize_t s, Py_ssize_t k):
        """The owner's reference ``k`` (1 .. stride - 1) of slot ``s``."""
        return self.keys[self.stride * s + k]

    cdef inline int set_ref(self, Py_ssize_t s, Py_ssize_t k, object value) except -1:
        """Set the owner's reference ``k`` of slot ``s``; the old one is released at once,
        so the caller holds it if its release could run code that calls back in."""
        self.keys[self.stride * s + k] = value
        return 0

    cdef int _alloc_buckets(self, size_t n) except -1:
        cdef int32_t* fresh = <int32_t*>PyMem_Malloc(n * sizeof(int32_t))
        cdef size_t i
        cdef int bits = 0
        if fresh == NULL:
            raise MemoryError()
        if n * sizeof(int32_t) >= _HUGE_ENOUGH:
            _advise_huge(fresh, n * sizeof(int32_t))  # before the first touch: see _grow
        for i in range(n):
            fresh[i] = -1
        while (<size_t>1 << bits) < n:
            bits += 1
        PyMem_Free(self.index)
        self.index = fresh
        self.mask = n - 1
        self.shift = 64 - bits
        return 0

    cdef int _rehash(self, size_t n) except -1:
        # Rehash into ``n`` buckets from the stored hashes: no Python code runs.
        cdef Py_ssize_t s
        cdef size_t i
        cdef object key
        self._alloc_buckets(n)
        for s in range(self.slots):
            key = self.keys[self.stride * s]
            if key is not _FREE:
                i = _home(self._hash_at(s)[0], self.shift)
                while self.index[i] >= 0:
                    i = (i + 1) & self.mask
                self.index[i] = self._bucket_value(s, key)
        self.stamp += 1
        return 0

    cdef int _grow_slots(self) except -1:
        cdef Py_ssize_t n = _grown(self.slot_capacity, 0)
        if n > _MAX_SLOTS:
            raise MemoryError("too many live keys for one table")
        _grow(<void**>&self.records, n, self.record_size)
        _grow(<void**>&self.free, n, sizeof(int32_t))
        self.slot_capacity = n  # only once both arrays are this long
        return 0

    cdef int _append_slot(self, object key) except -1:
        """Hand out slot number ``slots`` (room for its record made) to ``key``, or _FREE.

        Appending to a list makes no tracked object, so no collection starts
        here; a MemoryError part-way takes the slot's items back out.
        """
        cdef Py_ssize_t s = self.slots, k
        try:
            self.keys.append(key)
            for k in range(1, self.stride):
                self.keys.append(None)
        except MemoryError:
            # Deleting shrinks without reallocating (the list has just grown), and
            # PyList_SetSlice makes no slice object: this cannot fail in turn.
            _list_cut(self.keys, self.stride * s, PY_SSIZE_T_MAX, NULL)
            raise
        memset(self.record(s), 0, self.record_size)
        self.slots += 1
        self.shrink_at = PY_SSIZE_T_MAX
        if _list_room(self.keys) != self.keys_advised and _list_room(self.keys) >= _HUGE_ENOUGH:
            # The list was just reallocated: its items are read at random too.
            self.keys_advised = _list_room(self.keys)
            _advise_huge(_list_items(self.keys), self.keys_advised)
        return 0

    cdef inline int32_t _bucket_value(self, Py_ssize_t s, object key) noexcept:
        """What the bucket of slot ``s``, holding ``key``, stores."""
        return <int32_t>s | (_HASH_IS_KEY if _hash_is_key(key, self._hash_at(s)[0]) else 0)

    cdef Py_ssize_t find(self, object key, Py_hash_t h) except -2:
        """The slot of ``key`` (whose hash is ``h``), or -1."""
        cdef size_t i
        cdef int32_t s, bucket
        cdef uint64_t stamp
        cdef object other
        cdef int32_t known = _HASH_IS_KEY if _hash_is_key(key, h) else 0
        while True:
            stamp = self.stamp
            i = _home(h, self.shift)
            while True:
                bucket = self.index[i]
                if bucket < 0:
                    return -1
                s = bucket & _SLOT_BITS
                # The slot's references along with its hash: the owner reads
                # them next when this is the key.
                PYSCHED_PREFETCH(&PySequence_Fast_ITEMS(self.keys)[self.stride * s])
                if self._hash_at(s)[0] == h:
                    if bucket & known:
                        return s  # both ints equal to their equal hashes
                    other = self.keys[self.stride * s]
                    if other is key:
                        return s
                    # __eq__ may run Python code that edits this table:
                    # then start again, as dict lookups do.
                    if other == key:
                        if self.stamp == stamp:
                            return s
                        break
                    if self.stamp != stamp:
                        break
                i = (i + 1) & self.mask

    cdef Py_ssize_t add(self, object key, Py_hash_t h) except -1:
        """Give ``key``, which must be absent, a slot and return it.

        A new slot's record is zeros but for the hash; a reused one's holds what
        its owner last wrote. A MemoryError leaves the table as it was.
        """
        cdef Py_ssize_t s
        cdef size_t i
        if <size_t>(self.count + 1) * 2 > self.mask + 1:
            self._rehash((self.mask + 1) * 2)
        while self.n_free and self.free[self.n_free - 1] >= self.slots:
            self.n_free -= 1  # left from a cut: past the end of keys
        if self.n_free:
            s = self.free[self.n_free - 1]
            self.keys[self.stride * s] = key  # replaces _FREE: nothing is released
            self.n_free -= 1
        else:
            s = self.slots
            if s >= self.slot_capacity:
                self._grow_slots()
            self._append_slot(key)
        self._hash_at(s)[0] = h
        i = _home(h, self.shift)
        while self.index[i] >= 0:
            i = (i + 1) & self.mask
        self.index[i] = self._bucket_value(s, key)
        self.count += 1
        self.stamp += 1
        return s

    cdef int reserve(self, Py_ssize_t n) except -1:
        """Make room so that the next ``n`` adds allocate nothing and cannot fail.

        Buckets for ``count + n`` keys, and at least ``n`` free slots below
        ``slots`` (new ones are appended as free). A MemoryError part-way
        leaves the table whole, with fewer slots made ready.
        """
        cdef Py_ssize_t s, ready = self.slots - self.count
        cdef size_t buckets = self.mask + 1
        while <size_t>(self.count + n) * 2 > buckets:
            buckets *= 2
        if buckets != self.mask + 1:
            self._rehash(buckets)
        while ready < n:
            s = self.slots
            if s >= self.slot_capacity:
                self._grow_slots()
            self._append_slot(_FREE)
            self.free[self.n_free] = <int32_t>s
            self.n_free += 1
            ready += 1
        return 0

    cdef object remove(self, Py_ssize_t s):
        """Free slot ``s`` and return its key, for the caller to drop last.

        Its owner's references must be None already. Returning the key keeps
        it alive until the caller's state is whole again, so a key's finaliser
        cannot run in the middle of an update.
        """
        cdef size_t i = _home(self._hash_at(s)[0], self.shift)
        cdef size_t j, k
        cdef int32_t moved
        while self.index[i] & _SLOT_BITS != s:  # -1 masks to no slot in use
            i = (i + 1) & self.mask
        # Backward-shift deletion: pull later entries of the run into the hole
        # unless their home lies cyclically in (hole, position].
        j = i
        while True:
            j = (j + 1) & self.mask
            moved = self.index[j]
            if moved < 0:
                break
            k = _home(self._hash_at(moved & _SLOT_BITS)[0], self.shift)
            if (i <= j and i < k <= j) or (i > j and (k > i or k <= j)):
                continue
            self.index[i] = moved
            i = j
        self.index[i] = -1
        key = self.keys[self.stride * s]
        self.keys[self.stride * s] = _FREE
        self.free[self.n_free] = <int32_t>s
        self.n_free += 1
        self.count -= 1
        self.stamp += 1
        return key

    cdef bint shrink(self) noexcept:
        """Give memory back once under a quarter of the slots are in use; return whether
        ``slot_limit()`` went down.

        O(slots cut + free slots) when it cuts, amortised O(1) a removal: a cut
        at least halves the slots, and a try that cannot cut (a slot near the
        top is in use) waits for the count to halve again.
        """
        cdef Py_ssize_t n = self.slots, top, k, kept
        cdef size_t buckets
        if self.count * 4 >= n or n <= 16 or (self.count and self.count >= self.shrink_at):
            return False
        top = n
        while top and self.keys[self.stride * (top - 1)] is _FREE:
            top -= 1
        if top * 2 > n:
            self.shrink_at = self.count // 2
            return False
        # Only _FREE and None go: nothing is freed that could call back in.
        if _list_cut(self.keys, self.stride * top, PY_SSIZE_T_MAX, NULL) < 0:
            PyErr_Clear()  # no memory for the cut: the slots stay, still whole
            return False
        self.slots = top
        kept = 0
        for k in range(self.n_free):
            if self.free[k] < top:
                self.free[kept] = self.free[k]
                kept += 1
        self.n_free = kept
        if top * 4 < self.slot_capacity:
            n = max(16, top * 2)
            _shrink(<void**>&self.records, n, self.record_size)
            _shrink(<void**>&self.free, n, sizeof(int32_t))
            self.slot_capacity = n
        buckets = self.mask + 1
        if <size_t>self.count * 8 < buckets and buckets > _MIN_BUCKETS:
            buckets = _MIN_BUCKETS
            while buckets < <size_t>self.count * 4:
                buckets *= 2
            try:
                self._rehash(buckets)
            except MemoryError:
                pass  # the old buckets are kept: still whole
        return True

    cdef inline void prefetch(self, Py_ssize_t s) noexcept:
        """Start loading the bucket ``remove(s)`` looks for first."""
        self.prefetch_hash(self._hash_at(s)[0])

    cdef inline void prefetch_hash(self, Py_hash_t h) noexcept:
        """Start loading the bucket that ``find`` and ``add`` of a key hashing to ``h`` look at first."""
        PYSCHED_PREFETCH(&self.index[_home(h, self.shift)])

    cdef inline void prefetch_slot(self, Py_ssize_t s) noexcept:
        """Start loading slot ``s``'s record, key and references (both places, once each)."""
        PYSCHED_PREFETCH(self.record(s))
        PYSCHED_PREFETCH(&PySequence_Fast_ITEMS(self.keys)[self.stride * s])

    cdef inline void prefetch_key(self, Py_ssize_t s) noexcept:
        """Start loading the key object of slot ``s`` and what freeing it reads (its
        allocator pool's header): its key item must be at hand."""
        cdef PyObject* key = PySequence_Fast_ITEMS(self.keys)[self.stride * s]
        PYSCHED_PREFETCH(key)
        PYSCHED_PREFETCH(PYSCHED_POOL_START(key))

    cdef inline object key(self, Py_ssize_t s):
        return self.keys[self.stride * s]

    cdef inline Py_ssize_t slot_limit(self) noexcept:
        """One past the highest slot number ever handed out."""
        return self.slots

    def __len__(self):
        return self.count

    def _check(self):
        """Assert every invariant above (tests call this)."""
        cdef size_t b, i
        cdef int32_t s
        cdef Py_ssize_t seen = 0, k
        assert (self.mask + 1) >= 2 * <size_t>self.count
        assert len(self.keys) == self.stride * self.slots <= self.stride * self.slot_capacity
        for b in range(self.mask + 1):
            s = self.index[b]
            if s < 0:
                continue
            assert (s & _HASH_IS_KEY != 0) == _hash_is_key(self.keys[self.stride * (s & _SLOT_BITS)],
                                                           self._hash_at(s & _SLOT_BITS)[0]), "key flag"
            s &= _SLOT_BITS
            seen += 1
            assert self.keys[self.stride * s] is not _FREE
            i = _home(self._hash_at(s)[0], self.shift)
            while i != b:
                assert self.index[i] >= 0, "empty bucket inside a probe run"
                i = (i + 1) & self.mask
        assert seen == self.count
        assert self.count + self.n_free == self.slots
        for s in range(self.slots):
            if self.keys[self.stride * s] is _FREE:
                for k in range(1, self.stride):
                    assert self.keys[self.stride * s + k] is None, "a free slot holds a reference"
