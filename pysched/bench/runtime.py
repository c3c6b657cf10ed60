"""The runtime section: ThreadPoolScheduler against ThreadPoolExecutor, sched and asyncio.

The workloads are runtime_workloads.py's, which time themselves in wall
time: threads, clocks and wake-ups are what is measured here.

- throughput: whole runs (start to shutdown) of due no-op tasks through 4
  workers, in three idioms of collecting the results, the contenders in turns
  in each repeat so machine noise hits all alike; the median rate of each.
- start lateness: tasks spread evenly over a span with idle workers; start
  minus due time, as seen by the task itself; the contenders take turns, and
  each percentile is the median over the runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from functools import partial

from .competitors import CORE
from .plan import Row, Step
from .runtime_workloads import BASELINE, IDIOMS, lateness_contenders, throughput

SECTION = "runtime"
WORKERS = 4


def _key(name: str) -> str:
    """A short key for a contender name such as ``ThreadPoolScheduler[c].schedule``."""
    return (name.replace("ThreadPoolScheduler", "pool").replace("ThreadPoolExecutor", "tpe")
            .replace(", ", "_").replace("()", "").replace("[", "_").replace("]", "")
            .replace(".", "_"))


def _throughput(tasks: int, repeat: int) -> list[Row]:
    result = throughput(tasks, WORKERS, repeat)
    # By idiom; in each the baseline first, then the core's rows, then the twin's.
    idioms = list(IDIOMS)
    order = sorted(result, key=lambda name: (idioms.index(result[name]["idiom"]),
                                             not name.startswith(BASELINE),
                                             f"[{CORE}]" not in name))
    return [{"section": SECTION, "workload": "throughput", "param": "tasks", "size": tasks,
             "competitor": _key(name), "label": name, "idiom": figures["idiom"],
             "tasks_per_s": figures["tasks_per_s"],
             "ns_per_op": 1e9 / figures["tasks_per_s"], "ratio": figures["ratio"]}
            for name, figures in ((name, result[name]) for name in order)]


def _lateness(contenders: dict[str, Callable[[], dict[str, float]]], tasks: int, span: float,
              repeat: int) -> list[Row]:
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, measure in contenders.items():
            runs[name].append(measure())
    # Each figure is its median over the runs: one stall of a shared machine
    # inside a run's window moves that run's p99 by milliseconds for every
    # contender at once.
    return [{"section": SECTION, "workload": "lateness", "param": "tasks", "size": tasks,
             "span_s": span, "runs": repeat, "competitor": _key(name), "label": name,
             **{figure: statistics.median(run[figure] for run in taken) for figure in taken[0]}}
            for name, taken in runs.items()]


def steps(tasks: int, repeat: int, late_tasks: int, span: float,
          late_repeat: int) -> list[Step]:
    """One throughput step and one lateness step, each with all contenders in turns."""
    contenders = lateness_contenders(late_tasks, span, WORKERS)
    return [Step(f"throughput, {tasks:,} tasks x {repeat}, all contenders",
                 partial(_throughput, tasks, repeat)),
            Step(f"lateness, {late_tasks:,} tasks over {span:g}s x {late_repeat}, all contenders",
                 partial(_lateness, contenders, late_tasks, span, late_repeat))]
