"""The same instruments as ``prometheus``, through OpenTelemetry's metrics API.

Needs the ``otel`` extra (``pip install 'pysched[otel]'``, for
opentelemetry-api); the application configures the SDK and its exporters, as
for any library instrumented with OpenTelemetry. Without an SDK every
instrument is a no-op. Names follow OpenTelemetry's conventions (dots, units
apart); its Prometheus exporter turns them into ``prometheus``'s names.
"""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation, get_meter

from .._version import __version__
from .listener import Labels
from .prometheus import DEFAULT_MAX_NAMES, DEFAULT_MAX_QUEUES
from .schedulers import Attachments, Watchable
from .tally import DEFAULT_BUCKETS, check_buckets

__all__ = ["INSTRUMENTS", "OpenTelemetryMetrics"]

# name -> (instrument, unit), the same meanings as prometheus.METRICS.
INSTRUMENTS = {
    "pysched.tasks.scheduled": ("counter", "{task}"),
    "pysched.tasks": ("counter", "{task}"),
    "pysched.task.start_lateness": ("histogram", "s"),
    "pysched.task.duration": ("histogram", "s"),
    "pysched.tasks.pending": ("observable up-down counter", "{task}"),
    "pysched.tasks.running": ("observable up-down counter", "{task}"),
    "pysched.workers": ("observable up-down counter", "{worker}"),
    "pysched.metrics.folded": ("observable counter", "{reading}"),
}


class _LabelInstruments:
    """The instruments with the attributes of one set of labels: a ``Recorder`` (``listener``).

    The attributes are made once here, not per event.
    """

    __slots__ = ("instruments", "attributes", "_by_outcome")

    def __init__(self, instruments: _Instruments, labels: Labels) -> None:
        scheduler, queue, name = labels
        self.instruments = instruments
        self.attributes = {"scheduler": scheduler, "queue": queue, "name": name}
        self._by_outcome: dict[str, dict[str, str]] = {}

    def scheduled(self) -> None:
        self.instruments.scheduled_counter.add(1, self.attributes)

    def ended(self, outcome: str) -> None:
        attributes = self._by_outcome.get(outcome)
        if attributes is None:  # a few outcomes: a racing duplicate is harmless
            attributes = self._by_outcome[outcome] = {**self.attributes, "outcome": outcome}
        self.instruments.ended_counter.add(1, attributes)

    def started(self, lateness: float) -> None:
        self.instruments.lateness.record(lateness, self.attributes)

    def ran(self, duration: float) -> None:
        self.instruments.duration.record(duration, self.attributes)


class _Instruments:
    """A ``Sink`` (``listener``) that records on OpenTelemetry instruments."""

    def __init__(self, provider: MeterProvider | None, buckets: tuple[float, ...]) -> None:
        meter = get_meter("pysched.metrics", __version__, provider)
        self.meter = meter
        self.scheduled_counter = meter.create_counter(
            "pysched.tasks.scheduled", "{task}", "Task versions scheduled.")
        self.ended_counter = meter.create_counter(
            "pysched.tasks", "{task}", "Task runs and versions by how they ended.")
        self.lateness = meter.create_histogram(
            "pysched.task.start_lateness", "s", "How long after its due time each run started.",
            explicit_bucket_boundaries_advisory=buckets)
        self.duration = meter.create_histogram(
            "pysched.task.duration", "s", "How long each run took.",
            explicit_bucket_boundaries_advisory=buckets)

    def recorder(self, labels: Labels) -> _LabelInstruments:
        return _LabelInstruments(self, labels)


class OpenTelemetryMetrics:
    """Task counters, histograms and size gauges of the attached schedulers, for OpenTelemetry.

    Records through ``meter_provider`` (default: the global one). ``attach``,
    ``detach``, ``label``, ``max_names``, ``max_queues`` and ``buckets`` are
    ``PrometheusMetrics``'s; the attributes are ``scheduler``, ``queue``,
    ``name`` (and ``outcome`` on ``pysched.tasks``, ``label`` on
    ``pysched.metrics.folded``). Instruments are in ``INSTRUMENTS``.
    """

    def __init__(self, scheduler: Watchable | None = None, *,
                 meter_provider: MeterProvider | None = None, label: str | None = None,
                 max_names: int = DEFAULT_MAX_NAMES, max_queues: int = DEFAULT_MAX_QUEUES,
                 buckets: Iterable[float] = DEFAULT_BUCKETS) -> None:
        instruments = _Instruments(meter_provider, check_buckets(buckets))
        self._attachments = Attachments(instruments, max_names, max_queues)
        meter = instruments.meter
        meter.create_observable_up_down_counter(
            "pysched.tasks.pending", [self._observe_pending], "{task}",
            "Versions waiting for their due time or a worker.")
        meter.create_observable_up_down_counter(
            "pysched.tasks.running", [self._observe_running], "{task}", "Versions running now.")
        meter.create_observable_up_down_counter(
            "pysched.workers", [self._observe_workers], "{worker}",
            "Workers: the most versions that run at once.")
        meter.create_observable_counter(
            "pysched.metrics.folded", [self._observe_folded], "{reading}",
            "Readings whose queue or task name was reported as 'other'.")
        if scheduler is not None:
            self.attach(scheduler, label)

    def attach(self, scheduler: Watchable, label: str | None = None) -> None:
        """Record ``scheduler``'s task events from now on and observe its gauges.
        TypeError for what is no pysched scheduler, ValueError if attached already."""
        self._attachments.attach(scheduler, label)

    def detach(self, scheduler: Watchable | None = None) -> None:
        """Stop watching ``scheduler`` (None: every one)."""
        self._attachments.detach(scheduler)

    def _observe(self, field: str) -> list[Observation]:
        observations = []
        for label, gauges in self._attachments.gauges().items():
            value = getattr(gauges, field)
            if value is not None:
                observations.append(Observation(value, {"scheduler": label}))
        return observations

    def _observe_pending(self, options: CallbackOptions) -> list[Observation]:
        return self._observe("pending")

    def _observe_running(self, options: CallbackOptions) -> list[Observation]:
        return self._observe("running")

    def _observe_workers(self, options: CallbackOptions) -> list[Observation]:
        return self._observe("workers")

    def _observe_folded(self, options: CallbackOptions) -> list[Observation]:
        return [Observation(self._attachments.names.folded, {"label": "name"}),
                Observation(self._attachments.queues.folded, {"label": "queue"})]

