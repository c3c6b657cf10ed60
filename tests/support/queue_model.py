"""A sorted-list model of StableBoundedPriorityQueue: every live entry in a list sorted by
(priority, seq), truncated to the capacity after an insertion; the entry cut off is the
one dropped (the newcomer, refused; or the old worst, evicted)."""

from __future__ import annotations

import bisect


class Model:
    def __init__(self, capacity, tenant_limit):
        self.capacity = capacity
        self.tenant_limit = tenant_limit
        self.entries = []  # (priority, seq, value, key, tenant), sorted
        self.seq = 0
        self.stats = dict.fromkeys(
            ["accepted", "rejected_capacity", "rejected_quota", "evicted", "popped", "removed",
             "reprioritized"], 0)

    def find(self, key):
        return next(i for i, e in enumerate(self.entries) if e[3] == key)

    def has_key(self, key):
        return any(e[3] == key for e in self.entries)

    def push(self, priority, value, key, tenant):
        """The dropped entry plus its reason, or None."""
        self.seq += 1
        entry = (priority, self.seq, value, key, tenant)
        load = sum(1 for e in self.entries if tenant is not None and e[4] == tenant)
        if tenant is not None and self.tenant_limit is not None and load >= self.tenant_limit:
            self.stats["rejected_quota"] += 1
            return entry + ("quota",)
        bisect.insort(self.entries, entry, key=lambda e: e[:2])
        if len(self.entries) <= self.capacity:
            self.stats["accepted"] += 1
            return None
        cut = self.entries.pop()
        if cut is entry:
            self.stats["rejected_capacity"] += 1
            return entry + ("capacity",)
        self.stats["accepted"] += 1
        self.stats["evicted"] += 1
        return cut + ("evicted",)
