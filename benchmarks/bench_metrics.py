"""The cost of task events and metrics on ThreadPoolScheduler's throughput.

    python benchmarks/bench_metrics.py [--tasks N] [--repeat R] [--workers W]

Whole runs (make a pool, schedule N due no-ops by id, collect every result,
shut down; pysched.bench.runtime_workloads.whole_run) of one pool in each
configuration, in turns, the order rotated between repeats:

- ``no listener``: the pool as it is;
- ``one no-op listener``: a listener that does nothing, for every task kind;
- ``PrometheusMetrics``: the Prometheus collector attached (prometheus_client);
- ``OpenTelemetryMetrics``: the OpenTelemetry instruments attached, recorded by
  the SDK into an in-memory reader (skipped without opentelemetry-sdk).

Shown: the median rate of R runs, the ratio of medians to ``no listener``, and
the lowest and highest ratio of the runs paired within a repeat.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from typing import Any

from pysched import ThreadPoolScheduler
from pysched.bench.runtime_workloads import collect_results, whole_run
from pysched.events import TASK_KINDS


def no_op(event: object) -> None:
    pass


def configurations(workers: int) -> dict[str, Callable[[], ThreadPoolScheduler]]:
    """How to make the pool of each configuration, by name."""

    def plain() -> ThreadPoolScheduler:
        return ThreadPoolScheduler(workers)

    def listened() -> ThreadPoolScheduler:
        pool = ThreadPoolScheduler(workers)
        pool.add_listener(no_op, kinds=TASK_KINDS)
        return pool

    def prometheus() -> ThreadPoolScheduler:
        from prometheus_client import CollectorRegistry

        from pysched.metrics import PrometheusMetrics

        pool = ThreadPoolScheduler(workers)
        PrometheusMetrics(pool, registry=CollectorRegistry())
        return pool

    found = {"no listener": plain, "one no-op listener": listened, "PrometheusMetrics": prometheus}
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    except ImportError:
        return found

    def otel() -> ThreadPoolScheduler:
        from pysched.metrics import OpenTelemetryMetrics

        pool = ThreadPoolScheduler(workers)
        provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        OpenTelemetryMetrics(pool, meter_provider=provider)
        return pool

    found["OpenTelemetryMetrics"] = otel
    return found


def measure(n: int, repeat: int, workers: int) -> dict[str, dict[str, Any]]:
    """Rates (tasks/s) of each configuration: median, ratio to no listener, paired spread."""
    makers = configurations(workers)
    names = list(makers)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # one warm-up run each, not counted
        whole_run(makers[name], min(n, 5_000), True, collect_results)
    for turn in range(repeat):
        shift = turn % len(names)
        for name in names[shift:] + names[:shift]:
            rates[name].append(n / whole_run(makers[name], n, True, collect_results))
    base = rates["no listener"]
    result = {}
    for name, taken in rates.items():
        paired = [rate / b for rate, b in zip(taken, base, strict=True)]
        result[name] = {"tasks_per_s": statistics.median(taken),
                        "ratio": statistics.median(taken) / statistics.median(base),
                        "min_ratio": min(paired), "max_ratio": max(paired)}
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50_000, help="tasks per run")
    parser.add_argument("--repeat", type=int, default=7, help="runs of each, in turns")
    parser.add_argument("--workers", type=int, default=4, help="pool workers")
    args = parser.parse_args(argv)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Python {sys.version.split()[0]}; load average {load}")
    print(f"median of {args.repeat} whole runs of {args.tasks:,} due no-ops by id,"
          f" {args.workers} workers, in turns")
    result = measure(args.tasks, args.repeat, args.workers)
    width = max(map(len, result))
    print(f"{'':<{width}}  {'tasks/s':>9}  {'ratio':>5}  {'paired min-max':>14}")
    for name, row in result.items():
        print(f"{name:<{width}}  {row['tasks_per_s']:>9,.0f}  {row['ratio']:>5.3f}"
              f"  {row['min_ratio']:>6.3f}-{row['max_ratio']:.3f}")


if __name__ == "__main__":
    main()
