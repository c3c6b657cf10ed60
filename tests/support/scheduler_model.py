"""A plain sorted-list model of the Scheduler: every pending version in a list, sorted on
each ``next()``; it knows nothing of heaps, slots or stale entries."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Pending:
    task_id: object
    version: int
    run_at: float
    priority: int
    seq: int
    fn: object
    parked: bool = False

    def key(self):
        return (self.run_at, -self.priority, self.seq)


@dataclass
class Model:
    pending: dict = field(default_factory=dict)  # id -> Pending
    running: dict = field(default_factory=dict)  # id -> claimed task (of the implementation)
    versions: dict = field(default_factory=dict)  # id -> newest version, while the id is known
    seq: int = 0

    def forget_if_idle(self, task_id):
        if task_id not in self.pending and task_id not in self.running:
            self.versions.pop(task_id, None)

    def schedule(self, task_id, run_at, priority, fn):
        self.seq += 1
        version = self.versions.get(task_id, 0) + 1
        self.versions[task_id] = version
        self.pending[task_id] = Pending(task_id, version, run_at, priority, self.seq, fn)
        return version

    def cancel(self, task_id):
        if task_id not in self.pending and task_id not in self.running:
            return False
        self.pending.pop(task_id, None)
        self.forget_if_idle(task_id)
        return True

    def head(self):
        """The spec of peek(): walk pending versions in order, parking those whose id runs."""
        for entry in sorted((p for p in self.pending.values() if not p.parked), key=Pending.key):
            if entry.task_id in self.running:
                entry.parked = True
                continue
            return entry
        return None

    def cancel_pending(self, task_id):
        if self.pending.pop(task_id, None) is None:
            return False
        self.forget_if_idle(task_id)
        return True

    def next(self, now):
        """The spec of next(): the head, claimed if due."""
        entry = self.head()
        if entry is None:
            return None
        if entry.run_at > now:
            return entry.run_at - now
        del self.pending[entry.task_id]
        return entry

    def finish(self, task_id):
        del self.running[task_id]
        if task_id in self.pending:
            self.pending[task_id].parked = False
        self.forget_if_idle(task_id)
