"""The bounded-queue section: full-queue churn at several capacities, one-shot top-k.

The workloads are bounded_workloads.py's ``churn`` and ``top_k``;
competitors are the Cython core, "heapq, two heaps" (the main baseline),
the pure twin, a sortedcontainers queue where installed (both baselines in
bounded_baselines.py), and, for top-k, ``heapq.nsmallest``.
As for the scheduler, every competitor must end in the same state at a
small size before anything is timed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from .bounded_baselines import SortedBoundedQueue, TwoHeapsQueue
from .bounded_workloads import churn, churn_priorities, churn_queue, top_k
from .competitors import CORE, core_available, sortedcontainers_available
from .plan import Keep, Row, Step, Timed, keep_all, timed_group
from .scheduling import Disagreement

SECTION = "bounded"
TWO_HEAPS = "two_heaps"  # the main baseline's key
VERIFY_PUSHES = 5_000


def queue_competitors() -> list[tuple[str, str, type]]:
    """(key, label, queue class) for each bounded queue installed here, the core first."""
    from pysched._bounded_queue_py import StableBoundedPriorityQueue as PureQueue

    found = []
    if core_available():
        core: Any = importlib.import_module("pysched._core")
        found.append((CORE, "pysched", core.StableBoundedPriorityQueue))
    found.append((TWO_HEAPS, "heapq, two heaps", TwoHeapsQueue))
    found.append(("py", "pure twin", PureQueue))
    if sortedcontainers_available():
        found.append(("sorted", "SortedList", SortedBoundedQueue))
    return found


def verify(queues: Sequence[tuple[str, str, type]], k: int) -> None:
    """Raise Disagreement unless every queue ends churn and top-k in the same state."""
    priorities = churn_priorities(VERIFY_PUSHES, 0)
    for capacity in (k, VERIFY_PUSHES // 10):
        states = {label: churn_queue(cls, capacity, priorities).snapshot()
                  for _, label, cls in queues}
        if len({repr(state) for state in states.values()}) > 1:
            raise Disagreement(f"bounded-queue churn at capacity {capacity}: "
                               f"{', '.join(states)} end in different states")
    tops = {label: top_k(cls, k, VERIFY_PUSHES, 1)() for _, label, cls in queues}
    tops["heapq.nsmallest"] = top_k(None, k, VERIFY_PUSHES, 1)()  # always: the reference
    if len({tuple(top) for top in tops.values()}) > 1:
        raise Disagreement(f"top-{k}: {', '.join(tops)} disagree")


def _top_k_ops(cls: type | None, k: int, n: int) -> Callable[[], int]:
    run = top_k(cls, k, n, 1)

    def counted() -> int:
        run()
        return n  # one push (or one element seen by nsmallest) per input

    return counted


def steps(pushes: int, capacities: Sequence[int], top_n: int, ks: Sequence[int],
          budget: float, keep: Keep = keep_all) -> list[Step]:
    """Verification, then churn per capacity and top-k per k, the queues timed in turns."""
    queues = [queue for queue in queue_competitors() if keep(queue[0])]

    def check() -> list[Row]:
        verify(queues, min(ks))
        return []

    plan = [Step("checking that every bounded queue ends in the same state", check)]
    for capacity in capacities:
        churns: list[Timed] = [
            ({"section": SECTION, "workload": "churn", "param": "capacity", "size": capacity,
              "pushes": pushes, "competitor": key, "label": label},
             partial(churn, cls, capacity, pushes, 0))
            for key, label, cls in queues]
        plan.append(timed_group(f"churn C={capacity:,}", churns, budget))
    top: list[tuple[str, str, Any]] = [*queues, ("nsmallest", "heapq.nsmallest", None)]
    top = [entry for entry in top if keep(entry[0])]
    for k in ks:
        tops: list[Timed] = [
            ({"section": SECTION, "workload": "top_k", "param": "k", "size": k,
              "pushes": top_n, "competitor": key, "label": label},
             partial(_top_k_ops, cls, k, top_n))
            for key, label, cls in top]
        plan.append(timed_group(f"top-{k:,} of {top_n:,}", tops, budget))
    return plan
