"""The cost of task events in ThreadPoolScheduler, against a tree without them, in one process.

Each round runs the throughput workload of ``python -m pysched.bench`` (make a
pool, N due no-ops through 4 workers by ``submit`` or ``schedule``, collect
them by ``result()``, shut down) on: the BEFORE tree's pool (loaded beside this
one as ``pysched_before``, as ``compare_trees.py`` does; both share the
compiled core loaded here), this tree's pool with no listener, and this tree's
pool with: one listener of every kind that does nothing (so every event is
built and delivered); one listener of ``failed`` only (on these no-ops it
hears nothing); the Prometheus collector attached (``pysched.metrics``, in a
registry of its own; skipped without prometheus_client). The order is
reversed every round. Shown: the median rate of each, and the median and
quartiles of the ratios paired within a round, for the rate and for the
process CPU time per task: "no listener" to "before", the others to "no
listener".

Run: ``python benchmarks/bench_events.py BEFORE_TREE N ROUNDS [WORKERS]`` (default 4
workers; 1 leaves the GIL to one worker and the producer, the steadier
measure on a busy machine), for example
``git worktree add /tmp/before a26808e`` then
``python benchmarks/bench_events.py /tmp/before 10000 31``; run it under
``nice -n -10`` on a shared machine.

Counted instead of timed: ``valgrind --tool=callgrind python
benchmarks/bench_events.py --count BEFORE_TREE CONFIGURATION IDIOM N`` makes
one pool of CONFIGURATION (before, "no listener", "one listener", "failed
only", prometheus) with one worker and runs N tasks by IDIOM (submit or
schedule) in a run whose threads never race (``gated_run``), so the count
is the same from run to run. The instructions per task are the difference of
the counts for two N, divided by their difference; on a shared machine they
tell a 1% change where the times cannot.
"""

from __future__ import annotations

import gc
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from compare_trees import load_before, quartiles  # beside this script

import pysched
from pysched import _impl
from pysched.bench.runtime_workloads import collect_results, whole_run
from pysched.bench.workloads import noop
from pysched.events import FAILED

WORKERS = 4


def _ignore(event: Any) -> None:
    pass


def prometheus(make: Callable[[], Any]) -> Callable[[], Any] | None:
    """``make`` with the Prometheus collector attached; None without prometheus_client."""
    try:
        from prometheus_client import CollectorRegistry

        from pysched.metrics import PrometheusMetrics
    except ImportError:
        return None

    def attached() -> Any:
        pool = make()
        PrometheusMetrics(pool, registry=CollectorRegistry())
        return pool

    return attached


def makers_of(before: Any, workers: int) -> dict[str, Callable[[], Any]]:
    """How to make the pool of each configuration, by name (see the module docstring)."""
    core = _impl.Scheduler

    def plain(cls: Any) -> Callable[[], Any]:
        return lambda: cls(workers, _core_factory=core)

    def listened(kinds: list[str] | None) -> Callable[[], Any]:
        def make() -> Any:
            pool = pysched.ThreadPoolScheduler(workers, _core_factory=core)
            pool.add_listener(_ignore, kinds=kinds)
            return pool
        return make

    makers = {"before": plain(before.ThreadPoolScheduler),
              "no listener": plain(pysched.ThreadPoolScheduler),
              "one listener": listened(None), "failed only": listened([FAILED])}
    metrics = prometheus(plain(pysched.ThreadPoolScheduler))
    if metrics is not None:
        makers["prometheus"] = metrics
    return makers


def gated_run(make: Callable[[], Any], n: int, by_id: bool) -> None:
    """One pool run whose threads never race: a task holds the one worker while n due
    no-ops are added, then the worker runs them back to back while the caller waits on
    the last (they run in order). The collector is off while it runs: a full collection
    (millions of instructions) comes or not at a different task from run to run. So its
    instruction count is the same from run to run."""
    gc.collect()
    gc.disable()
    try:
        _gated_run(make, n, by_id)
    finally:
        gc.enable()


def _gated_run(make: Callable[[], Any], n: int, by_id: bool) -> None:
    pool = make()
    gate = threading.Event()
    first = pool.submit(gate.wait)
    if by_id:
        clock = pool.clock
        futures = [pool.schedule(k, clock(), 0, noop) for k in range(n)]
    else:
        futures = [pool.submit(noop) for _ in range(n)]
    gate.set()
    first.result()
    if futures:
        futures[-1].result()
    pool.shutdown(wait=True)


def count(argv: list[str]) -> None:
    """``--count BEFORE_TREE CONFIGURATION IDIOM N``: one warm-up gated run of 200 tasks,
    then one of N, with one worker, for ``valgrind --tool=callgrind`` to count."""
    before, name, idiom, n = load_before(argv[0]), argv[1], argv[2], int(argv[3])
    make = makers_of(before, 1)[name]
    gated_run(make, 200, idiom == "schedule")  # every path once
    gated_run(make, n, idiom == "schedule")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--count"] and len(argv) == 5:
        count(argv[1:])
        return
    if len(argv) not in (3, 4):
        raise SystemExit(__doc__)
    before, n, rounds = load_before(argv[0]), int(argv[1]), int(argv[2])
    workers = int(argv[3]) if len(argv) == 4 else WORKERS
    makers = makers_of(before, workers)
    runs = [(f"{name}.{'schedule' if by_id else 'submit'}", make, by_id)
            for by_id in (False, True) for name, make in makers.items()]
    rates: dict[str, list[float]] = {name: [] for name, *_ in runs}
    cpu: dict[str, list[float]] = {name: [] for name, *_ in runs}
    for turn in range(rounds):
        for name, make, by_id in runs if turn % 2 == 0 else runs[::-1]:
            used = time.process_time()
            rates[name].append(n / whole_run(make, n, by_id, collect_results))
            cpu[name].append((time.process_time() - used) / n * 1e6)
    print(f"{n:,} due no-ops through {workers} workers, {rounds} rounds in turns (core:"
          f" {_impl.Scheduler.__module__}); ratio to the row named in 'to', paired within each"
          f" round: median (quartiles)")
    print(f"{'':24}{'to':<13}{'tasks/s':>10}{'ratio':>22}{'CPU us/task':>13}{'ratio':>22}")
    for idiom in ("submit", "schedule"):
        for name in makers:
            base = "before" if name in ("before", "no listener") else "no listener"
            cells = [f"{base:<13}"]
            for table in (rates, cpu):
                was, now = table[f"{base}.{idiom}"], table[f"{name}.{idiom}"]
                low, mid, high = quartiles([a / b for a, b in zip(now, was, strict=True)])
                fmt = ",.0f" if table is rates else ".2f"
                width = 10 if table is rates else 13
                cells.append(f"{statistics.median(now):>{width}{fmt}}"
                             f"{mid:>10.3f} ({low:.3f}-{high:.3f})")
            print(f"{name + '.' + idiom:<24}" + "".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
