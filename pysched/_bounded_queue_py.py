"""Pure-Python StableBoundedPriorityQueue: the readable spec that the Cython core mirrors.

Order: entry ``a`` is better than ``b`` when ``(a.priority, a.seq) < (b.priority, b.seq)``:
the lower priority number first, then the earlier push. ``seq`` is unique and only
grows, so two entries never tie and values, keys and tenants are never compared.

Two heaps over the same records: ``_best`` is a min-heap of ``(priority, seq, record)``
whose root is the best entry, ``_worst`` a min-heap of ``(~priority, ~seq, record)``
whose root is the worst (``~x == -x - 1`` reverses the order; the Cython core uses it
because it cannot overflow). Each live record has one node in each heap.

Lazy deletion: taking an entry out (pop, eviction, ``remove``, ``reprioritize``)
only marks its record dead; its other node stays where it is, dead. After every
call both roots are live: dead nodes are dropped as they reach a root, and both
heaps are compacted at once as soon as one holds more dead nodes than live ones
(above COMPACT_FLOOR), so each heap holds at most ``live + max(live, COMPACT_FLOOR)``
nodes and memory stays O(capacity).

Admission, for a push of ``(priority, value)``:
1. a tenant already holding ``tenant_limit`` entries is refused (reason "quota");
2. below capacity the entry is accepted;
3. when full, it replaces the worst entry only if strictly better: its seq is the
   newest, so that means a strictly lower priority number; otherwise it is refused
   (reason "capacity"). With capacity 0 every push is refused before any heap is read.

Re-entrancy: a value, key or tenant is only released (its finaliser may run) once
the queue is whole again: the QueueEntry a call builds holds them until it returns.
Each call first decides and allocates everything its commit needs (lookups may run
a key's ``__eq__``, allocations may start a collection whose finalisers call back
in), and decides again if that code edited the queue (``_stamp`` changed); the
commit then allocates no tracked object. The pure twin's dicts also hash keys while
inserting and deleting; the Cython core stores hashes and never calls back then.
"""

from __future__ import annotations

from collections.abc import Hashable
from heapq import heapify, heappop, heappush, heapreplace
from typing import Any

# COMPACT_FLOOR and the reasons why an entry left the queue, shared with the Cython core.
from ._constants import CAPACITY, COMPACT_FLOOR, EVICTED, POPPED, QUOTA, REMOVED
from ._validate import check_capacity, check_hashable, check_priority, duplicate_key, missing_key

__all__ = ["COMPACT_FLOOR", "QueueEntry", "StableBoundedPriorityQueue"]


class QueueEntry:
    """An entry as it left the queue: what ``push_or_evict()`` and ``pop_entry()`` return.

    ``reason`` says why: ``"evicted"`` (an old worst entry made room for a
    better newcomer), ``"capacity"`` or ``"quota"`` (the newcomer itself was
    refused), ``"popped"``. The attributes are read-only.
    """

    __slots__ = ("_priority", "_seq", "_value", "_key", "_tenant", "_reason")

    def __init__(self, priority: int, seq: int, value: Any, key: Hashable | None,
                 tenant: Hashable | None, reason: str) -> None:
        self._priority = priority
        self._seq = seq
        self._value = value
        self._key = key
        self._tenant = tenant
        self._reason = reason

    priority = property(lambda self: self._priority, doc="Its priority; lower is better.")
    seq = property(lambda self: self._seq, doc="Its sequence number, from 1 per queue.")
    value = property(lambda self: self._value, doc="The value it carried.")
    key = property(lambda self: self._key, doc="Its key, or None.")
    tenant = property(lambda self: self._tenant, doc="Its tenant, or None.")
    reason = property(lambda self: self._reason,
                      doc="evicted, capacity, quota or popped: why it left.")

    def __repr__(self) -> str:
        return (f"<QueueEntry {self._reason} priority={self._priority} seq={self._seq}"
                f" value={self._value!r} key={self._key!r} tenant={self._tenant!r}>")


class _Tenant:
    """The live entries of one tenant: its records point here, so a count needs no hash."""

    __slots__ = ("name", "count")

    def __init__(self, name: Hashable) -> None:
        self.name = name
        self.count = 0  # live entries of this tenant; the tenant is forgotten at 0


class _Record:
    """One entry. Once dead it holds nothing: its objects went to a QueueEntry."""

    __slots__ = ("priority", "seq", "value", "key", "tenant", "alive")

    def __init__(self, priority: int, seq: int, value: Any, key: Hashable | None,
                 tenant: _Tenant | None) -> None:
        self.priority = priority
        self.seq = seq
        self.value = value
        self.key = key
        self.tenant = tenant
        self.alive = True


_Node = tuple[int, int, _Record]  # best: (priority, seq, r); worst: (~priority, ~seq, r)


class _Offer:
    """What a push decided, and every object its commit needs, allocated beforehand."""

    __slots__ = ("seq", "refused", "full", "cell", "new_cell", "record", "best", "worst",
                 "dropped")

    def __init__(self) -> None:
        self.seq = 0
        self.refused: str | None = None  # QUOTA or CAPACITY, or None to accept
        self.full = False  # accepting evicts the worst entry
        self.cell: _Tenant | None = None
        self.new_cell = False  # cell is not in _tenants yet
        self.record: _Record | None = None
        self.best: _Node | None = None
        self.worst: _Node | None = None
        self.dropped: QueueEntry | None = None  # the refused newcomer, or the shell for the evicted


def _shell() -> QueueEntry:
    """A QueueEntry to be filled by _kill: allocated before the commit that fills it."""
    return QueueEntry.__new__(QueueEntry)


class StableBoundedPriorityQueue:
    """Keeps the ``capacity`` best entries pushed to it (single-threaded).

    Lower priority numbers are better; equal priorities leave in push order.
    When full, a push replaces the worst entry only if strictly better.
    Entries may carry a ``key`` (for ``remove``/``reprioritize``) and a
    ``tenant`` (at most ``tenant_limit`` live entries each). Not thread-safe:
    share it through ``pysched.ThreadSafeBoundedPriorityQueue``.

    >>> q = StableBoundedPriorityQueue(2)
    >>> q.push(5, "e"), q.push(1, "a"), q.push(5, "e2"), q.push(3, "c")
    (True, True, False, True)
    >>> q.snapshot()
    [(1, 2, 'a'), (3, 4, 'c')]
    >>> q.pop(), len(q)
    ('a', 1)
    """

    def __init__(self, capacity: int, *, tenant_limit: int | None = None) -> None:
        self._capacity = check_capacity(capacity, "capacity")
        self._tenant_limit = (None if tenant_limit is None
                              else check_capacity(tenant_limit, "tenant_limit"))
        self._best: list[_Node] = []
        self._worst: list[_Node] = []
        self._by_key: dict[Hashable, _Record] = {}
        self._tenants: dict[Hashable, _Tenant] = {}
        self._live = 0
        self._seq = 0  # the last sequence number handed out
        self._stamp = 0  # changes with every edit of the entries or heaps
        self._accepted = 0
        self._rejected_capacity = 0
        self._rejected_quota = 0
        self._evicted = 0
        self._popped = 0
        self._removed = 0
        self._reprioritized = 0
        self._dead_cleaned = 0
        self._compactions = 0

    @property
    def capacity(self) -> int:
        """The most entries the queue holds."""
        return self._capacity

    @property
    def tenant_limit(self) -> int | None:
        """The most live entries one tenant may hold, or None for no limit."""
        return self._tenant_limit

    def __len__(self) -> int:
        """The number of entries: O(1)."""
        return self._live

    def __bool__(self) -> bool:
        return self._live > 0

    def __repr__(self) -> str:
        return f"<StableBoundedPriorityQueue len={self._live} capacity={self._capacity}>"

    def push(self, priority: int, value: Any, *, key: Hashable | None = None,
             tenant: Hashable | None = None) -> bool:
        """Offer an entry; return whether it was accepted.

        Refused when its tenant is at ``tenant_limit``, or when the queue is
        full and the entry is not strictly better than the worst one; an
        accepted entry may evict the worst. ``key`` (not None) must not be in
        the queue already. O(log n); a refusal is O(1).
        """
        priority = check_priority(priority, "priority")
        if key is None and tenant is None and self._full_refuses(priority):
            # No key to look up and no tenant to count: nothing else to decide.
            self._seq += 1
            self._rejected_capacity += 1
            return False
        offer = self._decide(priority, value, key, tenant, False)
        if offer.refused is not None:
            self._refuse(offer)
            return False
        self._commit(offer)
        return True

    def push_or_evict(self, priority: int, value: Any, *, key: Hashable | None = None,
                      tenant: Hashable | None = None) -> QueueEntry | None:
        """Offer an entry as ``push`` does; return what was dropped, as Lucene's insertWithOverflow.

        None when the entry was accepted and nothing left; the evicted old worst
        entry (reason ``"evicted"``) when it made room; the newcomer itself
        (reason ``"capacity"`` or ``"quota"``) when it was refused. O(log n).
        """
        priority = check_priority(priority, "priority")
        offer = self._decide(priority, value, key, tenant, True)
        if offer.refused is not None:
            self._refuse(offer)
            return offer.dropped
        return self._commit(offer)

    def pop(self) -> Any:
        """Remove and return the best value; IndexError when empty. O(log n) amortised."""
        return self.pop_entry()._value

    def pop_entry(self) -> QueueEntry:
        """Remove the best entry and return it whole (reason ``"popped"``). O(log n) amortised."""
        while True:
            if not self._live:
                raise IndexError("pop from an empty queue")
            stamp = self._stamp
            dropped = _shell()
            if stamp == self._stamp:  # else a finaliser edited the queue: look again
                break
        record = heappop(self._best)[2]
        self._kill(record, POPPED, dropped)
        self._popped += 1
        self._settle()
        return dropped

    def peek(self) -> Any:
        """The best value, left in place; IndexError when empty. O(1)."""
        if not self._live:
            raise IndexError("peek at an empty queue")
        return self._best[0][2].value

    def peek_worst(self) -> Any:
        """The worst value: the next to be evicted; IndexError when empty. O(1)."""
        if not self._live:
            raise IndexError("peek at an empty queue")
        return self._worst[0][2].value

    def snapshot(self) -> list[tuple[int, int, Any]]:
        """Every entry as ``(priority, seq, value)``, best first. O(n log n)."""
        return sorted((priority, seq, record.value)
                      for priority, seq, record in self._best if record.alive)

    def remove(self, key: Hashable) -> Any:
        """Take the entry of ``key`` out and return its value; KeyError if absent.

        O(1) amortised: its heap nodes turn dead in place.
        """
        check_hashable(key, "key")
        while True:
            stamp = self._stamp
            dropped = _shell()
            record = self._by_key.get(key)
            if record is None:
                raise missing_key(key)
            if stamp == self._stamp:  # else a finaliser or __eq__ edited the queue: look again
                break
        self._kill(record, REMOVED, dropped)
        self._removed += 1
        self._settle()
        return dropped._value

    def reprioritize(self, key: Hashable, priority: int) -> None:
        """Give the entry of ``key`` a new priority and a fresh seq; KeyError if absent.

        The old entry dies and a new one with the same value, key and tenant
        takes its place, behind existing entries of equal priority. The length
        does not change, so nothing is evicted or refused. O(log n).
        """
        priority = check_priority(priority, "priority")
        check_hashable(key, "key")
        while True:
            stamp = self._stamp
            old = self._by_key.get(key)
            if old is None:
                raise missing_key(key)
            seq = self._seq + 1
            record = _Record(priority, seq, old.value, old.key, old.tenant)
            best: _Node = (priority, seq, record)
            worst: _Node = (~priority, ~seq, record)
            if stamp == self._stamp:  # else a finaliser or __eq__ edited the queue: look again
                break
        self._seq = seq
        old.alive = False
        old.value = old.key = old.tenant = None  # moved, not released
        self._by_key[record.key] = record
        self._stamp += 1
        heappush(self._best, best)
        heappush(self._worst, worst)
        self._reprioritized += 1
        self._settle()

    def stats(self) -> dict[str, int]:
        """Counters and sizes; each heap's dead nodes never exceed ``max(length, COMPACT_FLOOR)``.

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
            "tenants": len(self._tenants),
            "dead": len(self._best) + len(self._worst) - 2 * self._live,
            "dead_cleaned": self._dead_cleaned,
            "compactions": self._compactions,
        }

    def _check(self) -> None:
        """Assert every invariant (tests call this after each step)."""
        best, worst, live = self._best, self._worst, self._live
        # Heap order: no node is before its parent.
        for k in range(1, len(best)):
            assert best[(k - 1) // 2][:2] < best[k][:2], "best heap order"
        for k in range(1, len(worst)):
            assert worst[(k - 1) // 2][:2] < worst[k][:2], "worst heap order"
        # A node carries its record's key (reversed in the worst heap).
        for priority, seq, record in best:
            assert (priority, seq) == (record.priority, record.seq)
        for not_priority, not_seq, record in worst:
            assert (~not_priority, ~not_seq) == (record.priority, record.seq)
        # Each live record has exactly one node in each heap.
        live_best = [record for _, _, record in best if record.alive]
        live_worst = [record for _, _, record in worst if record.alive]
        assert len(live_best) == len(set(map(id, live_best))) == len(live_worst) == live
        assert {id(r) for r in live_best} == {id(r) for r in live_worst}
        # Never more entries than the capacity.
        assert live <= self._capacity
        # Both roots are live: peeks are O(1) and the admission test reads the true worst.
        assert not best or best[0][2].alive
        assert not worst or worst[0][2].alive
        # The dead-node bound that keeps memory O(capacity).
        bound = max(live, COMPACT_FLOOR)
        assert len(best) - live <= bound and len(worst) - live <= bound, "dead-node bound"
        # A dead record holds nothing: its objects are freed once the caller drops them.
        for _, _, record in best + worst:
            assert record.alive or record.value is record.key is record.tenant is None
        # The key index names exactly the live keyed records.
        keyed = [r for r in live_best if r.key is not None]
        assert len(self._by_key) == len(keyed)
        assert all(self._by_key[r.key] is r for r in keyed)
        # Each tenant counts its live records, is within its limit, and is forgotten at 0.
        counts: dict[int, int] = {}
        for r in live_best:
            if r.tenant is not None:
                assert self._tenants[r.tenant.name] is r.tenant
                counts[id(r.tenant)] = counts.get(id(r.tenant), 0) + 1
        assert len(counts) == len(self._tenants)
        for cell in self._tenants.values():
            assert cell.count == counts[id(cell)] > 0
            assert self._tenant_limit is None or cell.count <= self._tenant_limit
        # Sequence numbers are unique and handed out in order.
        assert all(r.seq <= self._seq for r in live_best)
        # The counters add up.
        assert self._accepted - self._evicted - self._popped - self._removed == live

    # -- internals ---------------------------------------------------------

    def _decide(self, priority: int, value: Any, key: Hashable | None,
                tenant: Hashable | None, report: bool) -> _Offer:
        """Admit or refuse one entry (``priority`` already checked); change nothing.

        The offer carries the decision and whatever the commit needs: for a
        refusal the newcomer's QueueEntry when ``report`` is true (push() needs
        no object); for an admission the record, its two heap nodes, a new
        tenant's cell and, when full, the shell that receives the evicted entry.
        """
        if key is not None:
            check_hashable(key, "key")
        if tenant is not None:
            check_hashable(tenant, "tenant")
        offer = _Offer()
        while True:
            # __eq__ of a key or tenant, and any allocation (through the
            # collector's finalisers), may run Python code that edits this
            # queue: then decide again, so the commit acts on whole, current state.
            stamp = self._stamp
            if key is not None and key in self._by_key:
                raise duplicate_key(key)
            cell = self._tenants.get(tenant) if tenant is not None else None
            offer.seq = seq = self._seq + 1
            offer.full = self._live == self._capacity
            load = cell.count if cell is not None else 0
            if tenant is not None and self._tenant_limit is not None and load >= self._tenant_limit:
                offer.refused = QUOTA
            elif self._full_refuses(priority):
                offer.refused = CAPACITY
            else:
                offer.refused = None
            if offer.refused is not None:
                offer.dropped = (QueueEntry(priority, seq, value, key, tenant, offer.refused)
                                 if report else None)
            else:
                offer.new_cell = cell is None and tenant is not None
                offer.cell = _Tenant(tenant) if offer.new_cell else cell
                offer.record = record = _Record(priority, seq, value, key, offer.cell)
                offer.best = (priority, seq, record)
                offer.worst = (~priority, ~seq, record)
                offer.dropped = _shell() if offer.full else None
            if stamp == self._stamp:
                return offer

    def _full_refuses(self, priority: int) -> bool:
        """Whether the queue is full and a newcomer of ``priority`` does not beat its worst."""
        # The newcomer's seq is the newest, so only a strictly lower priority
        # number beats the worst (the root of _worst is live).
        return self._live == self._capacity and (
            not self._capacity or priority >= ~self._worst[0][0])

    def _refuse(self, offer: _Offer) -> None:
        """Count a refusal: it only uses up its sequence number."""
        self._seq = offer.seq
        if offer.refused is QUOTA:
            self._rejected_quota += 1
        else:
            self._rejected_capacity += 1

    def _commit(self, offer: _Offer) -> QueueEntry | None:
        """Add the decided entry, evicting the worst when full; return the evicted entry."""
        record, cell = offer.record, offer.cell
        assert record is not None and offer.best is not None and offer.worst is not None
        self._seq = offer.seq
        if cell is not None:
            if offer.new_cell:
                self._tenants[cell.name] = cell
            cell.count += 1
        if record.key is not None:
            self._by_key[record.key] = record
        self._stamp += 1
        if offer.full:
            assert offer.dropped is not None
            self._kill(self._worst[0][2], EVICTED, offer.dropped)
            # The new node takes the root of _worst in one sift instead of a pop and a push.
            heapreplace(self._worst, offer.worst)
            self._evicted += 1
        else:
            heappush(self._worst, offer.worst)
        heappush(self._best, offer.best)
        self._live += 1
        self._accepted += 1
        self._settle()
        return offer.dropped

    def _kill(self, record: _Record, reason: str, out: QueueEntry) -> None:
        """Take a live record out of the queue into ``out``, which then holds its objects.

        Its heap nodes stay where they are, dead; the caller drops the node it
        took off a root and then calls _settle. ``out`` was allocated before
        the commit, so no collection starts here.
        """
        cell = record.tenant
        out._priority = record.priority
        out._seq = record.seq
        out._value = record.value
        out._key = record.key
        out._tenant = None if cell is None else cell.name
        out._reason = reason
        record.alive = False
        # out holds them until the caller returns
        record.value = record.key = record.tenant = None
        self._live -= 1
        self._stamp += 1
        if out._key is not None:
            del self._by_key[out._key]
        if cell is not None:
            cell.count -= 1
            if not cell.count:
                del self._tenants[cell.name]

    def _settle(self) -> None:
        """Drop dead roots, and compact when a heap holds more dead nodes than live ones."""
        best, worst = self._best, self._worst
        while best and not best[0][2].alive:
            heappop(best)
            self._dead_cleaned += 1
        while worst and not worst[0][2].alive:
            heappop(worst)
            self._dead_cleaned += 1
        bound = max(self._live, COMPACT_FLOOR)
        if len(best) - self._live > bound or len(worst) - self._live > bound:
            self._compact()

    def _compact(self) -> None:
        """Rebuild both heaps from their live nodes.

        O(n), amortised O(1) over the calls that made the dead nodes.
        """
        while True:
            stamp = self._stamp
            best = [node for node in self._best if node[2].alive]
            worst = [node for node in self._worst if node[2].alive]
            if stamp == self._stamp:  # else a finaliser edited the heaps: filter again
                break
        self._dead_cleaned += len(self._best) + len(self._worst) - len(best) - len(worst)
        heapify(best)
        heapify(worst)
        self._best, self._worst = best, worst
        self._stamp += 1
        self._compactions += 1
