"""StableBoundedPriorityQueue against a sorted-list model, driven by hypothesis.

The model keeps every live entry in a list sorted by (priority, seq) and, after
an insertion, truncates it to the capacity: the entry cut off is the one
dropped (the newcomer, refused; or the old worst, evicted). It knows nothing of
heaps, dead nodes or tables. Keys, tenants and priorities come from small pools,
so ties, duplicate keys and full quotas happen often; bursts of pushes and pops
push the dead-node count past COMPACT_FLOOR so compaction runs too. After every
rule: ``_check()``, the snapshot, the counters and the dead-node bound.
"""

from __future__ import annotations

import bisect

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from support.queue_model import Model

PRIORITIES = st.one_of(st.integers(0, 4), st.sampled_from([-(2**63), 2**63 - 1]))
KEYS = st.sampled_from([None, None, "a", "b", "c", "d", 0, (1, 2)])
TENANTS = st.sampled_from([None, "x", "y", 1.0])
BAD_PRIORITIES = st.sampled_from([1.5, "1", True, None, 2**63, -(2**63) - 1])


def entry_tuple(entry):
    return None if entry is None else (
        entry.priority, entry.seq, entry.value, entry.key, entry.tenant, entry.reason)


def machine_for(impl):
    class BoundedQueueMachine(RuleBasedStateMachine):
        @initialize(capacity=st.integers(0, 6), tenant_limit=st.sampled_from([None, 0, 1, 2]))
        def start(self, capacity, tenant_limit):
            self.q = impl.StableBoundedPriorityQueue(capacity, tenant_limit=tenant_limit)
            self.model = Model(capacity, tenant_limit)
            self.values = 0

        def next_value(self):
            self.values += 1
            return f"v{self.values}"

        def push_one(self, priority, key, tenant, report):
            value = self.next_value()
            if key is not None and self.model.has_key(key):
                with pytest.raises(ValueError, match="already in the queue"):
                    self.q.push_or_evict(priority, value, key=key, tenant=tenant)
                return
            expected = self.model.push(priority, value, key, tenant)
            if report:
                assert entry_tuple(self.q.push_or_evict(priority, value, key=key,
                                                        tenant=tenant)) == expected
            else:
                accepted = self.q.push(priority, value, key=key, tenant=tenant)
                assert accepted == (expected is None or expected[-1] == "evicted")

        @rule(priority=PRIORITIES, key=KEYS, tenant=TENANTS, report=st.booleans())
        def push(self, priority, key, tenant, report):
            self.push_one(priority, key, tenant, report)

        @rule(priorities=st.lists(st.integers(-200, 200), min_size=60, max_size=90, unique=True),
              descending=st.booleans())
        def burst(self, priorities, descending):
            # Descending, each push evicts the worst: enough dead nodes at once
            # to pass COMPACT_FLOOR.
            if descending:
                priorities.sort(reverse=True)
            for priority in priorities:
                self.push_one(priority, None, None, True)
                self.q._check()

        @rule(n=st.integers(1, 90))
        def pop_many(self, n):
            for _ in range(n):
                self.pop()
                self.q._check()

        @rule()
        def pop(self):
            if not self.model.entries:
                with pytest.raises(IndexError):
                    self.q.pop()
                return
            expected = self.model.entries.pop(0)
            self.model.stats["popped"] += 1
            assert entry_tuple(self.q.pop_entry()) == expected + ("popped",)

        @rule(key=KEYS)
        def remove(self, key):
            if not self.model.has_key(key) or key is None:
                with pytest.raises(KeyError, match="not in the queue"):
                    self.q.remove(key)
                return
            expected = self.model.entries.pop(self.model.find(key))
            self.model.stats["removed"] += 1
            assert self.q.remove(key) == expected[2]

        @rule(key=KEYS, priority=PRIORITIES)
        def reprioritize(self, key, priority):
            if not self.model.has_key(key) or key is None:
                with pytest.raises(KeyError, match="not in the queue"):
                    self.q.reprioritize(key, priority)
                return
            old = self.model.entries.pop(self.model.find(key))
            self.model.seq += 1
            bisect.insort(self.model.entries, (priority, self.model.seq) + old[2:],
                          key=lambda e: e[:2])
            self.model.stats["reprioritized"] += 1
            self.q.reprioritize(key, priority)

        @rule(priority=BAD_PRIORITIES, key=KEYS)
        def bad_priority(self, priority, key):
            with pytest.raises((TypeError, OverflowError), match="priority"):
                self.q.push(priority, "bad", key=key)
            if key is not None and self.model.has_key(key):
                with pytest.raises((TypeError, OverflowError), match="priority"):
                    self.q.reprioritize(key, priority)

        @rule(key=st.sampled_from([[], {}, (1, [])]))
        def unhashable(self, key):
            with pytest.raises(TypeError, match="key must be hashable"):
                self.q.push(0, "bad", key=key)
            with pytest.raises(TypeError, match="tenant must be hashable"):
                self.q.push(0, "bad", tenant=key)
            with pytest.raises(TypeError, match="key must be hashable"):
                self.q.remove(key)

        @precondition(lambda self: hasattr(self, "q"))
        @invariant()
        def agrees_with_the_model(self):
            q, model = self.q, self.model
            q._check()
            assert q.snapshot() == [e[:3] for e in model.entries]
            assert len(q) == len(model.entries) and bool(q) == bool(model.entries)
            if model.entries:
                assert q.peek() == model.entries[0][2]
                assert q.peek_worst() == model.entries[-1][2]
            stats = q.stats()
            assert {k: stats[k] for k in model.stats} == model.stats
            assert stats["tenants"] == len({e[4] for e in model.entries if e[4] is not None})
            # The dead-node bound, in each heap: memory stays O(capacity).
            assert stats["dead"] <= 2 * max(len(model.entries), impl.COMPACT_FLOOR)

    return BoundedQueueMachine


FAST = settings(max_examples=40, stateful_step_count=30, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


def test_against_the_model(impl):
    run_state_machine_as_test(machine_for(impl), settings=FAST)


@pytest.mark.slow
def test_against_the_model_long(impl):
    run_state_machine_as_test(machine_for(impl), settings=settings(
        FAST, max_examples=300, stateful_step_count=80))
