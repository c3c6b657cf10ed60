"""The scheduler section: every workload, at every size, on every competitor.

Before any timing, each workload runs once at a small size on every
competitor with recording task functions, and all must run the same task ids
in the same order: a baseline that drops or reorders work cannot win.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from .competitors import CORE, SCHED_CANCEL_CAP, VERSIONED, Competitor, scheduler_competitors
from .plan import Keep, Row, Step, Timed, keep_all, timed_group
from .workloads import WORKLOADS, Workload, noop, run_order

SECTION = "scheduler"
VERIFY_N = 2_000
# What a huge size (config.HUGE_N) is timed on: the composites, core and main baseline.
HUGE_WORKLOADS = ("composite", "composite_single")
HUGE_COMPETITORS = (CORE, VERSIONED)


class Disagreement(AssertionError):
    """Two competitors ran a workload's tasks differently."""


def verify(workload: Workload, competitors: Sequence[Competitor], n: int = VERIFY_N) -> None:
    """Raise Disagreement unless every competitor runs ``workload`` identically."""
    reference: list[int] | None = None
    for comp in competitors:
        if not comp.runs_at(n, workload.cancels):
            continue
        order = run_order(workload, comp.factory(workload.cancels),
                          comp.drain_for(workload.single), n)
        if reference is None:
            reference, first = order, comp.label
        elif order != reference:
            raise Disagreement(f"{workload.title}: {comp.label} runs tasks in another order"
                               f" than {first} at n = {n}")


def _build(workload: Workload, comp: Competitor, n: int, seed: int) -> Callable[[], int]:
    return workload.build(comp.factory(workload.cancels), comp.drain_for(workload.single), n, seed,
                          [noop] * n)


def steps(sizes: Sequence[int], budget: float, sched_cancel_cap: int = SCHED_CANCEL_CAP,
          seed: int = 0, workloads: Sequence[Workload] = WORKLOADS,
          keep: Keep = keep_all, huge_n: int | None = None) -> list[Step]:
    """The verification step, then one timed step per (workload, size): competitors in turns.

    ``huge_n`` adds that size for HUGE_WORKLOADS, timed on HUGE_COMPETITORS only.
    """
    competitors = [comp for comp in scheduler_competitors(sched_cancel_cap) if keep(comp.key)]

    def check() -> list[Row]:
        for workload in workloads:
            verify(workload, competitors, min(VERIFY_N, max(sizes)))
        return []

    plan = [Step("checking that every competitor runs the same tasks in order", check)]
    for workload in workloads:
        huge = [huge_n] if huge_n and workload.key in HUGE_WORKLOADS else []
        for n in [*sizes, *huge]:
            entries: list[Timed] = [
                ({"section": SECTION, "workload": workload.key, "param": "n", "size": n,
                  "competitor": comp.key, "label": comp.label},
                 partial(_build, workload, comp, n, seed))
                for comp in competitors if comp.runs_at(n, workload.cancels)
                and (n != huge_n or comp.key in HUGE_COMPETITORS)]
            plan.append(timed_group(f"{workload.title} n={n:,}", entries, budget))
    return plan
