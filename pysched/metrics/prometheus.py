"""A Prometheus collector of the task events and sizes of pysched schedulers.

Needs the ``prometheus`` extra (``pip install 'pysched[prometheus]'``, for
prometheus_client). One ``PrometheusMetrics`` registers once in a registry and
watches any number of schedulers; the metrics (all labelled by ``scheduler``,
the task ones by ``queue`` and ``name`` too) are in ``METRICS`` and
docs/operations.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import REGISTRY, CollectorRegistry
from prometheus_client.utils import floatToGoString

from .listener import Labels
from .schedulers import Attachments, Watchable
from .tally import DEFAULT_BUCKETS, HistogramCounts, Tally

__all__ = ["DEFAULT_MAX_NAMES", "DEFAULT_MAX_QUEUES", "METRICS", "PrometheusMetrics"]

DEFAULT_MAX_NAMES = 100
DEFAULT_MAX_QUEUES = 20

_TASK = ("scheduler", "queue", "name")

# name (as exposed) -> (type, labels, help)
METRICS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "pysched_tasks_scheduled_total": (
        "counter", _TASK, "Task versions scheduled (a replacing version counts again)."),
    "pysched_tasks_total": (
        "counter", (*_TASK, "outcome"),
        "Task runs and versions by how they ended: succeeded or failed (a run returned or"
        " raised), retried (a failed run runs again), cancelled, replaced, evicted,"
        " lease_lost, handed_back."),
    "pysched_task_start_lateness_seconds": (
        "histogram", _TASK, "How long after its due time each run started."),
    "pysched_task_duration_seconds": (
        "histogram", _TASK, "How long each run took, whether it returned or raised."),
    "pysched_tasks_pending": (
        "gauge", ("scheduler",), "Versions waiting for their due time or a worker."),
    "pysched_tasks_running": ("gauge", ("scheduler",), "Versions running now."),
    "pysched_workers": (
        "gauge", ("scheduler",), "Workers: the most versions that run at once."),
    "pysched_metrics_folded_total": (
        "counter", ("label",),
        "Readings whose queue or task name was reported as 'other' (past max_queues or"
        " max_names distinct values)."),
}


class PrometheusMetrics:
    """Counters, histograms and gauges of the schedulers attached, for Prometheus.

    ``PrometheusMetrics(scheduler)`` registers in prometheus_client's default
    registry and attaches ``scheduler``; ``registry=`` names another (None:
    register nowhere; ``collect()`` still works). ``attach()`` more schedulers
    (each once; ``label`` tells apart two of one kind, default the kind:
    ``pool``, ``asyncio``, ``durable``); schedulers under one label add up.

    Labels are bounded: the first ``max_names`` distinct task names (callable
    qualnames or registered names, never task ids) and ``max_queues`` queues
    are kept, later ones are reported as ``other`` and counted in
    ``pysched_metrics_folded_total``. So the number of series is at most
    schedulers x (max_queues + 1) x (max_names + 1) x (9 + 2 x (len(buckets) + 3)).
    ``buckets`` are the histograms' upper bounds in seconds.
    """

    def __init__(self, scheduler: Watchable | None = None, *,
                 registry: CollectorRegistry | None = REGISTRY, label: str | None = None,
                 max_names: int = DEFAULT_MAX_NAMES, max_queues: int = DEFAULT_MAX_QUEUES,
                 buckets: Iterable[float] = DEFAULT_BUCKETS) -> None:
        self._tally = Tally(buckets)
        self._attachments = Attachments(self._tally, max_names, max_queues)
        if registry is not None:
            registry.register(self)
        if scheduler is not None:
            try:
                self.attach(scheduler, label)
            except BaseException:
                if registry is not None:
                    registry.unregister(self)
                raise

    def attach(self, scheduler: Watchable, label: str | None = None) -> None:
        """Count ``scheduler``'s task events from now on and report its gauges.
        TypeError for what is no pysched scheduler, ValueError if attached already."""
        self._attachments.attach(scheduler, label)

    def detach(self, scheduler: Watchable | None = None) -> None:
        """Stop watching ``scheduler`` (None: every one); its counts stay, its gauges go."""
        self._attachments.detach(scheduler)

    def describe(self) -> list[Metric]:
        """The metric families, without samples (the registry checks names with it)."""
        return [_FAMILIES[METRICS[name][0]](name) for name in METRICS]

    def collect(self) -> Iterator[Metric]:
        """Every metric as of now (called by the registry on each scrape)."""
        counts = self._tally.snapshot()
        scheduled = _counter("pysched_tasks_scheduled_total")
        ended = _counter("pysched_tasks_total")
        lateness = _histogram("pysched_task_start_lateness_seconds")
        duration = _histogram("pysched_task_duration_seconds")
        bounds = [*map(floatToGoString, self._tally.bounds), "+Inf"]
        for one in counts:
            if one.scheduled_count:
                scheduled.add_metric(one.labels, one.scheduled_count)
            for outcome, count in sorted(one.outcomes.items()):
                ended.add_metric((*one.labels, outcome), count)
            _add_histogram(lateness, one.labels, one.lateness, bounds)
            _add_histogram(duration, one.labels, one.duration, bounds)
        yield from (scheduled, ended, lateness, duration)
        gauges = sorted(self._attachments.gauges().items())
        pending, running, workers = (_gauge(name) for name in (
            "pysched_tasks_pending", "pysched_tasks_running", "pysched_workers"))
        for label, sizes in gauges:
            pending.add_metric((label,), sizes.pending)
            running.add_metric((label,), sizes.running)
            if sizes.workers is not None:
                workers.add_metric((label,), sizes.workers)
        yield from (pending, running, workers)
        folded = _counter("pysched_metrics_folded_total")
        folded.add_metric(("name",), self._attachments.names.folded)
        folded.add_metric(("queue",), self._attachments.queues.folded)
        yield folded


def _add_histogram(family: HistogramMetricFamily, labels: Labels, histogram: HistogramCounts,
                   bounds: list[str]) -> None:
    """Add ``histogram`` (if it has any observation) with cumulative buckets."""
    if not histogram.count:
        return
    cumulative, total = [], 0
    for bound, count in zip(bounds, histogram.counts, strict=True):
        total += count
        cumulative.append((bound, float(total)))
    family.add_metric(labels, cumulative, histogram.sum)


def _counter(name: str) -> CounterMetricFamily:
    # prometheus_client adds the _total suffix itself.
    return CounterMetricFamily(name.removesuffix("_total"), METRICS[name][2],
                               labels=METRICS[name][1])


def _histogram(name: str) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, METRICS[name][2], labels=METRICS[name][1])


def _gauge(name: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, METRICS[name][2], labels=METRICS[name][1])


_FAMILIES: dict[str, Callable[[str], Metric]] = {
    "counter": _counter, "histogram": _histogram, "gauge": _gauge}
