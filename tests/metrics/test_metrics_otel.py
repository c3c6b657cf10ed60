"""OpenTelemetryMetrics, read through the OpenTelemetry SDK's in-memory reader."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from pysched import ThreadPoolScheduler
from pysched.aio import AsyncScheduler
from pysched.metrics import OpenTelemetryMetrics
from pysched.metrics.otel import INSTRUMENTS
from pysched.metrics.tally import DEFAULT_BUCKETS


def work(x: int) -> int:
    return x


def boom() -> None:
    raise ValueError("boom")


def read(reader: InMemoryMetricReader) -> dict[str, Any]:
    """Every metric of the pysched.metrics scope, by name."""
    data = reader.get_metrics_data()
    assert data is not None
    return {metric.name: metric
            for resource in data.resource_metrics for scope in resource.scope_metrics
            if scope.scope.name == "pysched.metrics" for metric in scope.metrics}


def point(metric: Any, **attributes: str) -> Any:
    found = [p for p in metric.data.data_points if dict(p.attributes) == attributes]
    assert len(found) == 1, (attributes, [dict(p.attributes) for p in metric.data.data_points])
    return found[0]


def test_pool_runs_are_recorded_on_the_instruments():
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    with ThreadPoolScheduler(3) as pool:
        OpenTelemetryMetrics(pool, meter_provider=provider)
        now = pool.clock()
        futures = [pool.schedule(i, now - 1.0, 0, work, (i,)) for i in range(8)]
        futures.append(pool.schedule("bad", now, 0, boom))
        pool.schedule_in("far", 3600, 0, work, (0,))
        for fut in futures:
            fut.exception()
        metrics = read(reader)
        pool.close()  # cancels "far" (leaving the block would wait for it)
    assert set(metrics) == set(INSTRUMENTS)
    for name, (_, unit) in INSTRUMENTS.items():
        assert metrics[name].unit == unit
    w = {"scheduler": "pool", "queue": "", "name": work.__qualname__}
    b = dict(w, name=boom.__qualname__)
    assert point(metrics["pysched.tasks"], **w, outcome="succeeded").value == 8
    assert point(metrics["pysched.tasks"], **b, outcome="failed").value == 1
    assert point(metrics["pysched.tasks.scheduled"], **w).value == 9
    lateness = point(metrics["pysched.task.start_lateness"], **w)
    assert lateness.count == 8 and lateness.sum >= 8.0
    assert list(lateness.explicit_bounds) == list(DEFAULT_BUCKETS)
    assert sum(lateness.bucket_counts[:DEFAULT_BUCKETS.index(1.0)]) == 0
    assert point(metrics["pysched.task.duration"], **b).count == 1
    assert point(metrics["pysched.tasks.pending"], scheduler="pool").value == 1
    assert point(metrics["pysched.tasks.running"], scheduler="pool").value == 0
    assert point(metrics["pysched.workers"], scheduler="pool").value == 3
    assert point(metrics["pysched.metrics.folded"], label="name").value == 0
    provider.shutdown()


def test_asyncio_runs_and_custom_buckets():
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])

    async def job() -> None:
        await asyncio.sleep(0.03)

    async def main() -> dict[str, Any]:
        async with AsyncScheduler() as sched:
            OpenTelemetryMetrics(sched, meter_provider=provider, buckets=(0.01, 0.02))
            await asyncio.wait([sched.schedule_in(i, 0, 0, job) for i in range(4)])
            return read(reader)

    metrics = asyncio.run(main())
    duration = point(metrics["pysched.task.duration"], scheduler="asyncio", queue="",
                     name=f"{main.__qualname__.rsplit('.', 1)[0]}.job")
    assert list(duration.explicit_bounds) == [0.01, 0.02]
    assert list(duration.bucket_counts) == [0, 0, 4] and duration.sum >= 0.12
    assert "pysched.workers" not in metrics  # no limit: nothing observed
    provider.shutdown()


def test_names_past_the_limit_fold_into_other():
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    with ThreadPoolScheduler(2) as pool:
        OpenTelemetryMetrics(pool, meter_provider=provider, max_names=3)
        for i in range(10):
            def fn() -> None:
                pass
            fn.__qualname__ = f"job{i}"
            pool.submit(fn).result()
        metrics = read(reader)
    names = {dict(p.attributes)["name"]: p.value
             for p in metrics["pysched.tasks"].data.data_points}
    assert names == {"job0": 1, "job1": 1, "job2": 1, "other": 7}
    assert point(metrics["pysched.metrics.folded"], label="name").value == 7 * 3
    provider.shutdown()


def test_without_an_sdk_the_instruments_are_no_ops():
    with ThreadPoolScheduler(1) as pool:
        metrics = OpenTelemetryMetrics(pool)  # the global provider: a no-op one here
        assert pool.submit(work, 5).result() == 5
        metrics.detach()


@pytest.mark.parametrize("bad", [(), (1.0, math.nan)])
def test_bad_buckets_are_refused_before_anything_is_attached(bad):
    with ThreadPoolScheduler(1) as pool, pytest.raises(ValueError, match="buckets"):
        OpenTelemetryMetrics(pool, buckets=bad)
