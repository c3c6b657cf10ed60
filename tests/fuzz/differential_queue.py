"""Run one sequence of operations on the core's and the twin's StableBoundedPriorityQueue.

As tests/fuzz/differential.py does for the Scheduler: after every operation
both queues must give the same outcome (the same return value, or the same
exception type and message), ``_check()`` must hold on both, and their
lengths, ``stats()`` and snapshots must agree. Any difference raises
``Divergence``.

Used by tests/fuzz/fuzz_queue.py (atheris) and tests/core/test_fuzz_core.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .differential import Divergence


class QueueSide:
    """One implementation's queue."""

    def __init__(self, module: Any, capacity: object, tenant_limit: object) -> None:
        self.module = module
        self.queue = module.StableBoundedPriorityQueue(capacity, tenant_limit=tenant_limit)

    def apply(self, op: tuple) -> Any:
        name, *args = op
        q = self.queue
        if name in ("push", "push_or_evict"):
            priority, value, key, tenant = args
            return getattr(q, name)(priority, value, key=key, tenant=tenant)
        if name in ("pop", "pop_entry", "peek", "peek_worst", "snapshot", "stats"):
            return getattr(q, name)()
        if name == "remove":
            return q.remove(args[0])
        if name == "reprioritize":
            return q.reprioritize(args[0], args[1])
        if name == "len":
            return (len(q), bool(q))
        raise ValueError(f"unknown operation {name!r}")


def _view(value: Any) -> Any:
    """A QueueEntry as a tuple; anything else as it is."""
    if hasattr(value, "reason") and hasattr(value, "seq"):
        return ("entry", value.priority, value.seq, value.value, value.key, value.tenant,
                value.reason)
    return value


def _outcome(side: QueueSide, op: tuple) -> tuple:
    try:
        return ("ok", _view(side.apply(op)))
    except Exception as exc:  # every error is an outcome to compare
        return ("raise", type(exc), str(exc))


class QueueDifferential:
    """Both queues, stepped together; ``step()`` raises Divergence on any difference."""

    def __init__(self, compiled: Any, pure: Any, capacity: object,
                 tenant_limit: object) -> None:
        made = []
        for module in (compiled, pure):
            try:
                made.append(("ok", QueueSide(module, capacity, tenant_limit)))
            except Exception as exc:
                made.append(("raise", type(exc), str(exc)))
        if made[0][0] != made[1][0] or (made[0][0] == "raise" and made[0] != made[1]):
            raise Divergence(f"constructor: c {made[0]!r} but py {made[1]!r}")
        self.sides = [m[1] for m in made] if made[0][0] == "ok" else []
        self.steps = 0

    def run(self, ops: Iterable[tuple]) -> None:
        for op in ops:
            self.step(op)

    def step(self, op: tuple) -> None:
        if not self.sides:
            return  # both refused the constructor alike: nothing to step
        self.steps += 1
        c, py = self.sides
        got_c, got_py = _outcome(c, op), _outcome(py, op)
        where = f"step {self.steps}: {op!r}"
        if got_c != got_py:
            raise Divergence(f"{where}: c {got_c!r} but py {got_py!r}")
        for side in self.sides:
            try:
                side.queue._check()
            except AssertionError as exc:
                raise Divergence(f"{where}: {side.module.__name__} _check failed: {exc}") from exc
        if (c.queue.stats() != py.queue.stats() or len(c.queue) != len(py.queue)
                or c.queue.snapshot() != py.queue.snapshot()):
            raise Divergence(f"{where}: c {c.queue.stats()} but py {py.queue.stats()}")


def run_queue_differential(compiled: Any, pure: Any, capacity: object, tenant_limit: object,
                           ops: Sequence[tuple]) -> QueueDifferential:
    """Run ``ops`` on both queues; raise Divergence on the first difference."""
    diff = QueueDifferential(compiled, pure, capacity, tenant_limit)
    diff.run(ops)
    while diff.sides and len(diff.sides[0].queue):  # the end state must agree too
        diff.step(("pop_entry",))
    return diff
