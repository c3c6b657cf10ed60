"""Stale heap entries, on the core and the twin: the versions a cancel or a replacement
leaves behind in the heap.

The heap stays within its documented bound (heap_size <= max(2 * heap_live,
REBUILD_FLOOR)) while versions park behind stale entries, a stale entry keeps
no cancelled id alive, and once the arrays shrink, stale entries naming slots
cut off the end stay stale and are never read. Each test failed on the code
before its fix (on the implementations named in its docstring).
"""

from __future__ import annotations

import gc
import weakref

from support.draining import drain_ids


def noop() -> None:
    pass


def within_bound(s, impl):
    stats = s.stats()
    return stats["heap_size"] <= max(2 * stats["heap_live"], impl.REBUILD_FLOOR)


def test_parking_keeps_the_heap_within_its_bound(impl):
    """Both: parking versions behind stale entries left 110 entries with 10 live."""
    s = impl.Scheduler()
    for i in range(100):
        s.schedule(i, 0.0, 0, noop)
    running = [s.next(now=0.0) for _ in range(100)]
    for i in range(100):
        s.schedule(i, 1.0, 0, noop)
    for i in range(10):
        s.schedule(("late", i), 50.0, 0, noop)
    for i in range(100):
        s.schedule(("gone", i), 100.0, 0, noop)
    for i in range(100):
        s.cancel(("gone", i))
        assert within_bound(s, impl)
    s.next(now=1.0)
    assert within_bound(s, impl), s.stats()
    s._check()
    for task in running:
        s.complete(task)
        assert within_bound(s, impl)
    assert sorted(drain_ids(s), key=repr) == sorted(
        list(range(100)) + [("late", i) for i in range(10)], key=repr)


class Id:
    __slots__ = ("n", "__weakref__")

    def __init__(self, n):
        self.n = n

    def __hash__(self):
        return hash(self.n)

    def __eq__(self, other):
        return isinstance(other, Id) and other.n == self.n


def test_stale_entries_keep_no_cancelled_id_alive(impl):
    """Twin: its stale heap entries kept 500 of 500 cancelled ids alive."""
    s = impl.Scheduler()
    for i in range(1000):
        s.schedule(("live", i), 10.0, 0, noop)
    refs = []
    for i in range(500):
        task_id = Id(i)
        refs.append(weakref.ref(task_id))
        s.schedule(task_id, 5.0, 0, noop)
    del task_id
    for i in range(500):
        assert s.cancel(Id(i))
    assert s.stats()["stale"] == 500  # the entries are still there, below the rebuild
    gc.collect()
    assert sum(r() is not None for r in refs) == 0


def test_stale_entries_of_cut_slots_stay_stale(impl):
    """Core: once its arrays shrink, stale entries may name slots cut off the end."""
    s = impl.Scheduler()
    for i in range(1000):
        s.schedule(i, 10.0, 0, noop)
    for i in range(999, 49, -1):  # the last stale entries name slots 50 and up
        s.cancel(i)
    assert s.stats()["stale"] > 0
    s._check()
    for i in range(1000, 1100):  # slots 50 and up again, with new seqs
        s.schedule(i, 5.0, 0, noop)
    s._check()
    assert drain_ids(s) == list(range(1000, 1100)) + list(range(50))
    s._check()


def test_a_claim_reads_nothing_past_the_cut_slots(impl):
    """Core: after a claim, a stale head naming a cut slot was read past the id table's
    keys (its prefetch). Only a bounds-checking build sees the read: scripts/sanitize.sh."""
    s = impl.Scheduler()
    s.schedule(0, 0.0, 0, noop)
    for i in range(1, 60):  # 59, 58, ... 10 come next after 0, then turn stale
        s.schedule(i, 5.0 if i < 10 else 2.0 - i / 100, 0, noop)
    for i in range(59, 9, -1):
        s.cancel(i)  # the id table shrinks: slots 10 and up are cut
    assert s.stats()["stale"] == 50
    assert s.next(10.0).task_id == 0  # the new head names a cut slot
    s._check()
    assert drain_ids(s) == list(range(1, 10))
