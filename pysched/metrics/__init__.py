"""Metrics of pysched's schedulers, for Prometheus and for OpenTelemetry.

- ``prometheus``: ``PrometheusMetrics``, a collector for prometheus_client
  (extra ``prometheus``);
- ``otel``: ``OpenTelemetryMetrics``, the same instruments through
  OpenTelemetry's metrics API (extra ``otel``);
- ``listener``: the task events each records, ``schedulers``: which schedulers
  they watch and how their gauges are read, ``labels``: the bound on label
  values, ``tally``: the in-memory counts the Prometheus collector reads.

Importing this package loads neither prometheus_client nor opentelemetry;
each class loads its backend when first read.

>>> from pysched import ThreadPoolScheduler
>>> from pysched.metrics import PrometheusMetrics
>>> from prometheus_client import CollectorRegistry, generate_latest
>>> registry = CollectorRegistry()
>>> with ThreadPoolScheduler(2) as pool:
...     metrics = PrometheusMetrics(pool, registry=registry)
...     pool.submit(print, "hello").result()
hello
>>> b'pysched_tasks_total{name="print",outcome="succeeded",queue="",scheduler="pool"} 1.0' in (
...     generate_latest(registry))
True
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .otel import OpenTelemetryMetrics
    from .prometheus import PrometheusMetrics
else:  # each name loads on first use (pysched._lazy), with its backend
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals(), {
        "OpenTelemetryMetrics": ".otel",
        "PrometheusMetrics": ".prometheus",
    })

__all__ = ["OpenTelemetryMetrics", "PrometheusMetrics"]
