"""StableBoundedPriorityQueue workloads, run on the core, the twin and the baselines alike.

Workloads follow workloads.py: a function of (queue class, sizes, seed) that
draws its inputs first and returns a ``run()`` closure, so a timer measures
only queue work. Priorities are drawn from 0 to MAX_PRIORITY, so ties are
many and stability (FIFO among equals) is exercised, not assumed.

- ``churn``: the full-queue workload: ``n_pushes`` pushes and one
  pop after every POP_EVERY-th push; ``run()`` returns pushes + pops.
- ``top_k``: one-shot top-k of a stream, against ``heapq.nsmallest``
  (stable, but not a container); ``run()`` returns the k best values.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from typing import Any

MAX_PRIORITY = 10_000
POP_EVERY = 10


def churn_priorities(n_pushes: int, seed: int) -> list[int]:
    """The churn workload's priorities: uniform over 0..MAX_PRIORITY."""
    rng = random.Random(seed)
    return [rng.randint(0, MAX_PRIORITY) for _ in range(n_pushes)]


def churn_queue(queue_cls: type, capacity: int, priorities: list[int]) -> Any:
    """Run the churn workload on a fresh queue and return the queue."""
    queue = queue_cls(capacity)
    push, pop = queue.push, queue.pop
    for i, priority in enumerate(priorities):
        push(priority, i)
        if i % POP_EVERY == POP_EVERY - 1:
            pop()
    return queue


def churn(queue_cls: type, capacity: int, n_pushes: int, seed: int) -> Callable[[], int]:
    """The full-queue churn workload; ``run()`` returns pushes + pops."""
    priorities = churn_priorities(n_pushes, seed)

    def run() -> int:
        churn_queue(queue_cls, capacity, priorities)
        return n_pushes + n_pushes // POP_EVERY

    return run


def top_k(queue_cls: type | None, k: int, n: int, seed: int) -> Callable[[], list[Any]]:
    """The ``k`` best of ``n`` values, best first (``queue_cls=None``: heapq.nsmallest)."""
    priorities = churn_priorities(n, seed)

    def run() -> list[Any]:
        if queue_cls is None:
            # (priority, index) pairs: stable like the queue, values never compared.
            return [i for _, i in heapq.nsmallest(k, zip(priorities, itertools.count()))]
        queue = queue_cls(k)
        push = queue.push
        for i, priority in enumerate(priorities):
            push(priority, i)
        return [value for _, _, value in queue.snapshot()]

    return run
