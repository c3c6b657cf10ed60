"""The runtime section: ThreadPoolScheduler against ThreadPoolExecutor, sched and asyncio.

The workloads are runtime_workloads.py's, which time themselves in wall
time: threads, clocks and wake-ups are what is measured here.

- throughput: due no-op tasks through 4 workers, the contenders interleaved
  in each repeat so machine noise hits all alike; the best rate of each.
- start lateness: tasks spread evenly over a span with idle workers; start
  minus due time, as seen by the task itself.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from .competitors import CORE
from .plan import Row, Step
from .runtime_workloads import BASELINE, lateness_contenders, throughput

SECTION = "runtime"
WORKERS = 4


def _key(name: str) -> str:
    """A short key for a contender name such as ``ThreadPoolScheduler[c].schedule``."""
    return (name.replace("ThreadPoolScheduler", "pool").replace("ThreadPoolExecutor", "tpe")
            .replace("[", "_").replace("]", "").replace(".", "_"))


def _throughput(tasks: int, repeat: int) -> list[Row]:
    result = throughput(tasks, WORKERS, repeat)
    # The baseline first, then the core's rows, then the twin's.
    order = sorted(result, key=lambda name: (name != BASELINE, f"[{CORE}]" not in name))
    return [{"section": SECTION, "workload": "throughput", "param": "tasks", "size": tasks,
             "competitor": _key(name), "label": name, "tasks_per_s": figures["tasks_per_s"],
             "ns_per_op": 1e9 / figures["tasks_per_s"], "ratio": figures["ratio"]}
            for name, figures in ((name, result[name]) for name in order)]


def _lateness(name: str, measure: Callable[[], dict[str, float]], tasks: int,
              span: float) -> list[Row]:
    return [{"section": SECTION, "workload": "lateness", "param": "tasks", "size": tasks,
             "span_s": span, "competitor": _key(name), "label": name, **measure()}]


def steps(tasks: int, repeat: int, late_tasks: int, span: float) -> list[Step]:
    """One throughput step (all contenders interleaved), one lateness step per contender."""
    plan = [Step(f"throughput, {tasks:,} tasks x {repeat}, all contenders",
                 partial(_throughput, tasks, repeat))]
    for name, measure in lateness_contenders(late_tasks, span, WORKERS).items():
        plan.append(Step(f"lateness, {late_tasks:,} tasks over {span:g}s, {name}",
                         partial(_lateness, name, measure, late_tasks, span)))
    return plan
