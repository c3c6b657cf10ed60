"""Shared pieces of the metrics tests: a real HTTP scrape and the samples it parsed.

``served(registry)`` serves prometheus_client's WSGI app for ``registry`` on
127.0.0.1, port 0 (a free one), in a thread; ``scrape(url)`` fetches the
exposition over HTTP and parses it with prometheus_client's own parser, so the
tests read what Prometheus would.
"""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # no line per request
        pass


@contextmanager
def served(registry: CollectorRegistry) -> Iterator[str]:
    """The URL of a live /metrics endpoint for ``registry``, until the block ends."""
    server: WSGIServer = make_server("127.0.0.1", 0, make_wsgi_app(registry),
                                     handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/metrics"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def scrape_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        return response.read().decode("utf-8")


class Scrape:
    """The samples of one scrape, by name; families keep their declared type."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.types: dict[str, str] = {}
        self.samples: list[Sample] = []
        for family in text_string_to_metric_families(text):
            self.types[family.name] = family.type
            self.samples.extend(family.samples)

    def find(self, metric: str, /, **labels: str) -> list[Sample]:
        """Samples named ``metric`` whose labels include ``labels``."""
        return [s for s in self.samples
                if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items())]

    def value(self, metric: str, /, **labels: str) -> float:
        """The one sample named ``metric`` with exactly these labels (0 if absent)."""
        found = [s for s in self.samples if s.name == metric and s.labels == labels]
        assert len(found) <= 1, found
        return found[0].value if found else 0.0

    def total(self, metric: str, /, **labels: str) -> float:
        """The sum over the samples named ``metric`` whose labels include ``labels``."""
        return sum(s.value for s in self.find(metric, **labels))

    def series(self, prefix: str = "pysched_") -> int:
        """How many series (samples) have names starting with ``prefix``."""
        return sum(1 for s in self.samples if s.name.startswith(prefix))


def scrape(url: str) -> Scrape:
    return Scrape(scrape_text(url))
