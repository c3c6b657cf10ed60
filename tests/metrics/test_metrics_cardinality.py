"""100,000 distinct task ids, and thousands of distinct callables, keep the series bounded."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry

from pysched import ThreadPoolScheduler
from pysched.metrics import PrometheusMetrics
from pysched.metrics.prometheus import DEFAULT_MAX_NAMES, METRICS
from pysched.metrics.tally import DEFAULT_BUCKETS

from support.metrics import scrape, served

TASKS = 100_000
CALLABLES = 5_000  # closures, each with its own qualname, as lambdas made in a loop have


def closures() -> list[Callable[[], None]]:
    made = []
    for i in range(CALLABLES):
        def handler() -> None:
            pass
        handler.__qualname__ = f"handler_{i}"
        made.append(handler)
    return made


def series_bound(names: int, queues: int = 1, schedulers: int = 1) -> int:
    """The most series PrometheusMetrics can export (its docstring's formula, spelled out)."""
    per_task_labels = 1 + 8 + 2 * (len(DEFAULT_BUCKETS) + 3)  # scheduled, outcomes, histograms
    gauges = 3 * schedulers
    folded = 2
    return schedulers * queues * names * per_task_labels + gauges + folded


def test_task_ids_never_become_labels_and_series_stay_bounded():
    registry = CollectorRegistry()
    handlers = closures()
    task_ids = [f"task-{i}" for i in range(TASKS)]
    with ThreadPoolScheduler(4) as pool:
        PrometheusMetrics(pool, registry=registry)
        now = pool.clock()
        futures = [pool.schedule(task_id, now, 0, handlers[i % CALLABLES])
                   for i, task_id in enumerate(task_ids)]
        for fut in futures:
            fut.result()
        with served(registry) as url:
            s = scrape(url)
    label_values = {value for sample in s.samples for value in sample.labels.values()}
    assert not label_values & set(task_ids)
    names = {sample.labels["name"] for sample in s.samples if "name" in sample.labels}
    assert len(names) == DEFAULT_MAX_NAMES + 1 and "other" in names
    assert s.series() <= series_bound(DEFAULT_MAX_NAMES + 1)
    # Folding loses no count: every run is in some series.
    assert s.total("pysched_tasks_total", outcome="succeeded") == TASKS
    assert s.total("pysched_task_duration_seconds_count") == TASKS
    kept = TASKS // CALLABLES * DEFAULT_MAX_NAMES  # the first 100 handlers ran 20 times each
    assert s.value("pysched_tasks_total", scheduler="pool", queue="", name="other",
                   outcome="succeeded") == TASKS - kept
    assert s.value("pysched_metrics_folded_total", label="name") == 3 * (TASKS - kept)
    assert set(METRICS) >= {f"{s.name}" for s in s.samples if s.name.endswith("_total")}
