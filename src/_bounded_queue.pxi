# StableBoundedPriorityQueue: mirrors pysched/_bounded_queue_py.py, which states the design.
# Its heaps are in _bounded_heap.pxi, QueueEntry in _bounded_entry.pxi, its
# memory management in _bounded_memory.pxi, its invariant checks in _bounded_check.pxi.
#
# Entry records live in one flat C array; the two heaps are 4-ary heaps of
# record numbers (int32_t) ordered through the records' (priority, seq). Values
# sit in a Python list by record number so the GC sees them; keys and tenants
# live in IdTables, which give each a small slot and store its hash, so
# releasing one never calls back into Python.
#
# Re-entrancy: every call first does all that may run Python code (argument
# conversion, hashing, a key's __eq__, allocations that may start the cyclic
# GC and its finalisers) in a loop that starts again if that code edited the
# queue (``_stamp`` changed); then it commits with C operations only: no
# allocation, no lookup, no object freed. Objects taken out are held in a
# Taken until the commit is done; a QueueEntry the call returns is allocated
# in the loop and filled from the Taken after the commit.

from cpython.ref cimport Py_INCREF
from libc.stdint cimport int8_t

from pysched._validate import duplicate_key, missing_key

cdef enum:
    _ACCEPTED = 0
    _BY_QUOTA = 1
    _BY_CAPACITY = 2

cdef enum:
    _BQ_ARITY = 4            # as the scheduler's heap: half the depth of a binary one
    _MAX_RECORDS = 0x7FFFFFFF  # record numbers fit in int32_t

# The constants and reason strings are the twin's, from the module both read
# (not from the twin itself, so that loading the core does not load the twin).
import pysched._constants as _constants

# Below this many dead nodes in a heap they are left for the roots to drop.
COMPACT_FLOOR = _constants.COMPACT_FLOOR
cdef Py_ssize_t _COMPACT_FLOOR = COMPACT_FLOOR

# Why an entry left the queue (QueueEntry.reason).
cdef str _EVICTED = _constants.EVICTED    # an old worst entry made room for a better newcomer
cdef str _CAPACITY = _constants.CAPACITY  # refused: full of entries at least as good
cdef str _QUOTA = _constants.QUOTA        # refused: its tenant held tenant_limit entries
cdef str _POPPED = _constants.POPPED
cdef str _REMOVED = _constants.REMOVED


ctypedef struct Record:
    int64_t priority     # lower is better
    uint64_t seq         # unique and increasing: FIFO among equal priorities
    int32_t key_slot     # its key's slot in _keys while alive, else -1
    int32_t tenant_slot  # its tenant's slot in _tenants while alive, else -1
    int8_t alive         # in the queue; then it has exactly one node in each heap
    int8_t nodes         # heap nodes naming it: 2 while alive, 0 exactly while free


ctypedef struct Offer:
    # What a push decided (StableBoundedPriorityQueue._decide), for its commit.
    uint64_t seq
    Py_hash_t key_hash
    Py_hash_t tenant_hash
    Py_ssize_t tenant_slot  # the tenant's slot, or -1 if it has none yet (or no tenant)
    bint full               # accepting evicts the worst entry
    int refused             # _ACCEPTED, or why not: _BY_QUOTA or _BY_CAPACITY


@cython.final
@cython.no_gc_clear  # _values and the tables must outlive any finaliser that calls back in
# Plain method descriptors: a call skips the bound CyFunction's layer (9 ns of
# a refused push's 43). The clinic signature keeps inspect.signature() working.
@cython.binding(False)
@cython.embedsignature.format("clinic")
cdef class StableBoundedPriorityQueue:
    """Keeps the ``capacity`` best entries pushed to it (single-threaded).

    Lower priority numbers are better; equal priorities leave in push order.
    When full, a push replaces the worst entry only if strictly better.
    Entries may carry a ``key`` (for ``remove``/``reprioritize``) and a
    ``tenant`` (at most ``tenant_limit`` live entries each). Not thread-safe:
    share it through ``pysched.ThreadSafeBoundedPriorityQueue``.
    """
    cdef int64_t _capacity
    cdef Py_ssize_t _quota       # tenant_limit, or -1 for none
    cdef Record* _recs           # by record number, _recs_capacity long
    cdef int32_t* _free          # stack of free record numbers below _n_recs
    cdef Py_ssize_t _n_free
    cdef Py_ssize_t _n_recs      # record numbers ever handed out: each is in use or free
    cdef Py_ssize_t _recs_capacity
    cdef Node* _best             # min-heap by (priority, seq); root live or heap empty
    cdef Node* _worst            # min-heap by (~priority, ~seq); root live or heap empty
    cdef Py_ssize_t _best_len
    cdef Py_ssize_t _worst_len
    cdef Py_ssize_t _heap_capacity  # of each heap
    cdef list _values            # by record: its value while alive, else None; _recs_capacity long
    cdef IdTable _keys           # key -> slot; None until the first keyed entry is accepted
    cdef int32_t* _key_rec       # by key slot: the live record of that key
    cdef Py_ssize_t _key_rec_capacity
    cdef IdTable _tenants        # tenant -> slot, for tenants with live entries; None until needed
    cdef Py_ssize_t* _tenant_count  # by tenant slot: its live entries, > 0
    cdef Py_ssize_t _tenant_count_capacity
    cdef Py_ssize_t _live
    cdef uint64_t _seq           # the last sequence number handed out
    cdef uint64_t _stamp         # changes with every edit of the entries: detects re-entrant edits
    cdef Py_ssize_t _accepted
    cdef Py_ssize_t _rejected_capacity
    cdef Py_ssize_t _rejected_quota
    cdef Py_ssize_t _evicted
    cdef Py_ssize_t _popped
    cdef Py_ssize_t _removed
    cdef Py_ssize_t _reprioritized
    cdef Py_ssize_t _dead_cleaned
    cdef Py_ssize_t _compactions
    cdef Py_ssize_t _shrink_at   # try to give memory back only below this length (a failed try halves it)

    def __cinit__(self):
        self._values = []
        self._quota = -1
        self._shrink_at = PY_SSIZE_T_MAX

    def __init__(self, capacity, *, tenant_limit=None):
        self._capacity = check_capacity(capacity, "capacity")
        if tenant_limit is not None:
            self._quota = check_capacity(tenant_limit, "tenant_limit")

    def __dealloc__(self):
        PyMem_Free(self._recs)
        PyMem_Free(self._free)
        PyMem_Free(self._best)
        PyMem_Free(self._worst)
        PyMem_Free(self._key_rec)
        PyMem_Free(self._tenant_count)

    @property
    def capacity(self):
        """The most entries the queue holds."""
        return self._capacity

    @property
    def tenant_limit(self):
        """The most live entries one tenant may hold, or None for no limit."""
        return None if self._quota < 0 else self._quota

    def __len__(self):
        """The number of entries: O(1)."""
        return self._live

    def __bool__(self):
        return self._live > 0

    def __repr__(self):
        return f"<StableBoundedPriorityQueue len={self._live} capacity={self._capacity}>"

    def push(self, priority, value, *, key=None, tenant=None):
        """push(priority, value, *, key=None, tenant=None) -> bool

        Offer an entry; return whether it was accepted.

        Refused when its tenant is at ``tenant_limit``, or when the queue is
        full and the entry is not strictly better than the worst one; an
        accepted entry may evict the worst. ``key`` (not None) must not be in
        the queue already. O(log n); a refusal is O(1).
        """
        cdef int64_t prio = _check_priority(priority, "priority")
        cdef Offer offer
        if key is None and tenant is None and self._full_refuses(prio):
            # No key to look up and no tenant to count: nothing else to decide.
            self._seq += 1
            self._rejected_capacity += 1
            return False
        cdef Taken evicted
        self._decide(&offer, prio, value, key, tenant, False)
        if offer.refused:
            self._refuse(&offer)
            return False
        self._commit(&offer, prio, value, key, tenant, &evicted)
        _release_taken(&evicted)
        return True

    def push_or_evict(self, priority, value, *, key=None, tenant=None):
        """push_or_evict(priority, value, *, key=None, tenant=None) -> QueueEntry | None

        Offer an entry as ``push`` does; return what was dropped, as Lucene's insertWithOverflow.

        None when the entry was accepted and nothing left; the evicted old worst
        entry (reason ``"evicted"``) when it made room; the newcomer itself
        (reason ``"capacity"`` or ``"quota"``) when it was refused. O(log n).
        """
        cdef int64_t prio = _check_priority(priority, "priority")
        cdef Offer offer
        cdef Taken evicted
        dropped = self._decide(&offer, prio, value, key, tenant, True)
        if offer.refused:
            self._refuse(&offer)
            return dropped
        self._commit(&offer, prio, value, key, tenant, &evicted)
        if dropped is not None:
            _bq_fill(dropped, &evicted, _EVICTED)
        return dropped

    def pop(self):
        """pop() -> value

        Remove and return the best value; IndexError when empty. O(log n) amortised.
        """
        cdef Taken popped
        if not self._live:
            raise IndexError("pop from an empty queue")
        self._pop_best(&popped)
        value = <object>popped.value
        _release_taken(&popped)  # value holds it
        return value

    def pop_entry(self):
        """pop_entry() -> QueueEntry

        Remove the best entry and return it whole (reason ``"popped"``). O(log n) amortised.
        """
        cdef Taken popped
        if not self._live:
            raise IndexError("pop from an empty queue")
        cdef QueueEntry out = QueueEntry.__new__(QueueEntry)
        if not self._live:  # the allocation ran a finaliser that emptied the queue
            raise IndexError("pop from an empty queue")
        self._pop_best(&popped)
        _bq_fill(out, &popped, _POPPED)
        return out

    def peek(self):
        """peek() -> value

        The best value, left in place; IndexError when empty. O(1).
        """
        if not self._live:
            raise IndexError("peek at an empty queue")
        return self._values[self._best[0].rec]

    def peek_worst(self):
        """peek_worst() -> value

        The worst value: the next to be evicted; IndexError when empty. O(1).
        """
        if not self._live:
            raise IndexError("peek at an empty queue")
        return self._values[self._worst[0].rec]

    def snapshot(self):
        """snapshot() -> list[tuple[int, int, object]]

        Every entry as ``(priority, seq, value)``, best first. O(n log n).
        """
        cdef list out = []
        cdef Py_ssize_t k = 0
        cdef int32_t r
        # Appending may start the GC, whose finalisers may edit the queue: so
        # re-read the heap and its length at each step (never out of bounds).
        while k < self._best_len:
            r = self._best[k].rec
            k += 1
            if self._recs[r].alive:
                out.append((self._recs[r].priority, self._recs[r].seq, self._values[r]))
        out.sort()
        return out

    def remove(self, key):
        """remove(key) -> value

        Take the entry of ``key`` out and return its value; KeyError if absent.

        O(1) amortised: its heap nodes turn dead in place.
        """
        cdef Py_hash_t h = _check_hashable(key, "key")
        cdef Taken removed
        # find() is the last thing here that may run Python code.
        cdef Py_ssize_t ks = self._keys.find(key, h) if self._keys is not None else -1
        if ks < 0:
            raise missing_key(key)
        self._kill(self._key_rec[ks], &removed)
        self._removed += 1
        self._settle()
        value = <object>removed.value
        _release_taken(&removed)  # value holds it
        return value

    def reprioritize(self, key, priority):
        """reprioritize(key, priority) -> None

        Give the entry of ``key`` a new priority and a fresh seq; KeyError if absent.

        The old entry dies and a new one with the same value, key and tenant
        takes its place, behind existing entries of equal priority. The length
        does not change, so nothing is evicted or refused. O(log n).
        """
        cdef int64_t prio = _check_priority(priority, "priority")
        cdef Py_hash_t h = _check_hashable(key, "key")
        cdef Py_ssize_t ks
        cdef uint64_t stamp
        cdef int32_t old, r
        while True:
            # find() may run Python code that edits the queue: then look again.
            stamp = self._stamp
            ks = self._keys.find(key, h) if self._keys is not None else -1
            if ks < 0:
                raise missing_key(key)
            _reserve(self, False, False)
            if stamp == self._stamp:
                break
        self._seq += 1
        old = self._key_rec[ks]
        r = self._new_record(prio, self._seq, <int32_t>ks, self._recs[old].tenant_slot)
        self._values[r] = self._values[old]
        self._values[old] = None  # moved, not released: _values[r] holds it
        self._recs[old].alive = 0
        self._recs[old].key_slot = -1
        self._recs[old].tenant_slot = -1
        self._key_rec[ks] = r
        self._stamp += 1
        self._push_node(r)
        self._reprioritized += 1
        self._settle()

    def stats(self):
        """stats() -> dict

        Counters and sizes; each heap's dead nodes never exceed ``max(length, COMPACT_FLOOR)``.

        ``accepted - evicted - popped - removed == length`` at all times.
        """
        return {
            "length": self._live,
            "capacity": self._capacity,
            "accepted": self._accepted,
            "rejected_capacity": self._rejected_capacity,
            "rejected_quota": self._rejected_quota,
            "evicted": self._evicted,
            "popped": self._popped,
            "removed": self._removed,
            "reprioritized": self._reprioritized,
            "tenants": len(self._tenants) if self._tenants is not None else 0,
            "dead": self._best_len + self._worst_len - 2 * self._live,
            "dead_cleaned": self._dead_cleaned,
            "compactions": self._compactions,
        }

    def _check(self):
        """Assert every invariant (tests call this after each step)."""
        _check_queue(self)

    # -- internals ---------------------------------------------------------

    cdef QueueEntry _decide(self, Offer* offer, int64_t priority, object value, object key,
                            object tenant, bint report):
        """Admit or refuse one entry (``priority`` already checked); change nothing.

        Fills ``offer`` with the decision and, when ``report`` is true (push()
        needs no object), returns the QueueEntry to report: for a refusal the
        newcomer's; for an admission when full, the shell that receives the
        evicted entry; else None. Room in every array and table is made here.
        """
        cdef Py_ssize_t load
        cdef uint64_t stamp
        cdef QueueEntry dropped
        offer.key_hash = _check_hashable(key, "key") if key is not None else 0
        offer.tenant_hash = _check_hashable(tenant, "tenant") if tenant is not None else 0
        while True:
            # __eq__ of a key or tenant, and any allocation (through the
            # collector's finalisers), may run Python code that edits this
            # queue: then decide again, so the commit acts on whole, current state.
            stamp = self._stamp
            dropped = None
            if key is not None and self._keys is not None and self._keys.find(key, offer.key_hash) >= 0:
                raise duplicate_key(key)
            offer.tenant_slot = (self._tenants.find(tenant, offer.tenant_hash)
                                 if tenant is not None and self._tenants is not None else -1)
            offer.seq = self._seq + 1
            offer.full = self._live == self._capacity
            load = self._tenant_count[offer.tenant_slot] if offer.tenant_slot >= 0 else 0
            if tenant is not None and self._quota >= 0 and load >= self._quota:
                offer.refused = _BY_QUOTA
            elif self._full_refuses(priority):
                offer.refused = _BY_CAPACITY
            else:
                offer.refused = _ACCEPTED
            if offer.refused:
                if report:
                    dropped = _bq_entry(priority, offer.seq, value, key, tenant,
                                        _QUOTA if offer.refused == _BY_QUOTA else _CAPACITY)
            else:
                if offer.full and report:
                    dropped = QueueEntry.__new__(QueueEntry)
                _reserve(self, key is not None, tenant is not None and offer.tenant_slot < 0)
            if stamp == self._stamp:
                return dropped

    cdef inline bint _full_refuses(self, int64_t priority) noexcept:
        """Whether the queue is full and a newcomer of ``priority`` does not beat its worst."""
        # The newcomer's seq is the newest, so only a strictly lower priority
        # number beats the worst (the root of _worst is live).
        return self._live == self._capacity and (
            not self._capacity or priority >= ~self._worst[0].priority)

    cdef void _refuse(self, Offer* offer) noexcept:
        """Count a refusal: it only uses up its sequence number."""
        self._seq = offer.seq
        if offer.refused == _BY_QUOTA:
            self._rejected_quota += 1
        else:
            self._rejected_capacity += 1

    cdef int _commit(self, Offer* offer, int64_t priority, object value, object key,
                     object tenant, Taken* evicted) except -1:
        """Add the decided entry, evicting the worst into ``evicted`` when full (else its value is NULL)."""
        cdef Py_ssize_t ks = -1, ts = offer.tenant_slot
        cdef uint64_t seq = offer.seq
        cdef int32_t r, victim
        evicted.value = evicted.key = evicted.tenant = NULL
        # The tables may fail to grow: add to them before anything else changes.
        if key is not None:
            ks = self._keys.add(key, offer.key_hash)
        if tenant is not None and ts < 0:
            try:
                ts = self._tenants.add(tenant, offer.tenant_hash)
                self._tenant_count[ts] = 0
            except BaseException:
                if ks >= 0:
                    self._keys.remove(ks)  # the caller still holds the key
                raise
        # Commit: C operations only from here on.
        self._seq = seq
        self._stamp += 1
        r = self._new_record(priority, seq, <int32_t>ks, <int32_t>ts)
        self._values[r] = value
        if ks >= 0:
            self._key_rec[ks] = r
        if ts >= 0:
            self._tenant_count[ts] += 1
        if offer.full:
            victim = self._worst[0].rec
            self._kill(victim, evicted)
            # The new node takes the root of _worst in one sift instead of a pop and a push.
            _bq_set(&self._worst[0], ~priority, ~seq, r)
            _bq_sift_down(self._worst, self._worst_len, 0)
            self._release_node(victim)
            self._evicted += 1
            _bq_set(&self._best[self._best_len], priority, seq, r)
            self._best_len += 1
            _bq_sift_up(self._best, 0, self._best_len - 1)
        else:
            self._push_node(r)
        self._live += 1
        self._accepted += 1
        self._settle()
        return 0

    cdef void _pop_best(self, Taken* popped) noexcept:
        """Take the best entry out into ``popped``. Precondition: the queue is not empty."""
        cdef int32_t r = _bq_pop_root(self._best, &self._best_len)
        self._kill(r, popped)
        self._release_node(r)
        self._popped += 1
        self._settle()

    cdef void _kill(self, int32_t r, Taken* out) noexcept:
        """Take live record ``r`` out of the queue into ``out``, which then holds its objects.

        Its heap nodes stay where they are, dead; the caller drops the node it
        took off a root and then calls _settle. No Python code runs: the tables
        release slots by their stored hashes, and every object moves to ``out``.
        """
        cdef Record* rec = &self._recs[r]
        cdef Py_ssize_t ts = rec.tenant_slot
        cdef object taken = self._values[r]
        out.priority = rec.priority
        out.seq = rec.seq
        Py_INCREF(taken)
        out.value = <PyObject*>taken
        out.key = out.tenant = NULL
        self._values[r] = None  # out holds it until the caller releases it
        # The tables give memory back as they empty, and the per-slot arrays
        # beside them follow when their slots are cut.
        if rec.key_slot >= 0:
            taken = self._keys.remove(rec.key_slot)
            Py_INCREF(taken)
            out.key = <PyObject*>taken
            if self._keys.shrink():
                self._key_rec_capacity = _fitted(
                    <void**>&self._key_rec, self._key_rec_capacity, self._keys.slot_limit(),
                    sizeof(int32_t))
        if ts >= 0:
            self._tenant_count[ts] -= 1
            if self._tenant_count[ts]:
                taken = self._tenants.key(ts)
            else:
                taken = self._tenants.remove(ts)
                if self._tenants.shrink():
                    self._tenant_count_capacity = _fitted(
                        <void**>&self._tenant_count, self._tenant_count_capacity,
                        self._tenants.slot_limit(), sizeof(Py_ssize_t))
            Py_INCREF(taken)
            out.tenant = <PyObject*>taken
        rec.alive = 0
        rec.key_slot = -1
        rec.tenant_slot = -1
        self._live -= 1
        self._stamp += 1

    cdef inline int32_t _new_record(self, int64_t priority, uint64_t seq, int32_t key_slot,
                                    int32_t tenant_slot) noexcept:
        # Precondition: _reserve() made room (a free record or one below _recs_capacity).
        cdef int32_t r
        cdef Record* rec
        if self._n_free:
            self._n_free -= 1
            r = self._free[self._n_free]
        else:
            r = <int32_t>self._n_recs
            self._n_recs += 1
            self._shrink_at = PY_SSIZE_T_MAX
        rec = &self._recs[r]
        rec.priority = priority
        rec.seq = seq
        rec.key_slot = key_slot
        rec.tenant_slot = tenant_slot
        rec.alive = 1
        rec.nodes = 2  # the caller pushes one node into each heap
        return r

    cdef inline void _push_node(self, int32_t r) noexcept:
        # Precondition: _reserve() left room in both heaps.
        cdef Record* rec = &self._recs[r]
        _bq_set(&self._best[self._best_len], rec.priority, rec.seq, r)
        self._best_len += 1
        _bq_sift_up(self._best, 0, self._best_len - 1)
        _bq_set(&self._worst[self._worst_len], ~rec.priority, ~rec.seq, r)
        self._worst_len += 1
        _bq_sift_up(self._worst, 0, self._worst_len - 1)

    cdef inline void _release_node(self, int32_t r) noexcept:
        # A node naming dead record ``r`` left a heap; the record is free once none is left.
        self._recs[r].nodes -= 1
        if not self._recs[r].nodes:
            self._free[self._n_free] = r
            self._n_free += 1

    cdef void _settle(self) noexcept:
        """Drop dead roots, and compact when a heap holds more dead nodes than live ones."""
        cdef Py_ssize_t bound
        cdef int32_t r
        while self._best_len and not self._recs[self._best[0].rec].alive:
            r = _bq_pop_root(self._best, &self._best_len)
            self._release_node(r)
            self._dead_cleaned += 1
        while self._worst_len and not self._recs[self._worst[0].rec].alive:
            r = _bq_pop_root(self._worst, &self._worst_len)
            self._release_node(r)
            self._dead_cleaned += 1
        bound = max(self._live, _COMPACT_FLOOR)
        if self._best_len - self._live > bound or self._worst_len - self._live > bound:
            self._compact()
        if self._live * 4 < self._recs_capacity and self._recs_capacity > 16:
            _give_back(self)

    cdef void _compact(self) noexcept:
        """Rebuild both heaps from their live nodes: O(n), amortised O(1) per call that made one dead."""
        self._best_len = self._keep_live(self._best, self._best_len)
        self._worst_len = self._keep_live(self._worst, self._worst_len)
        _bq_heapify(self._best, self._best_len)
        _bq_heapify(self._worst, self._worst_len)
        self._compactions += 1

    cdef Py_ssize_t _keep_live(self, Node* heap, Py_ssize_t n) noexcept:
        # Move the live nodes to the front, release the dead ones; return the live count.
        cdef Py_ssize_t k, kept = 0
        for k in range(n):
            if self._recs[heap[k].rec].alive:
                heap[kept] = heap[k]
                kept += 1
            else:
                self._release_node(heap[k].rec)
        self._dead_cleaned += n - kept
        return kept
