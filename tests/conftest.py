"""One suite, two implementations: every test taking ``impl`` runs on both.

``impl`` is the compiled module itself for ``c`` (imported directly, so a
broken build fails loudly instead of testing Python twice) and a namespace of
the pure twins for ``py``. With PYSCHED_NO_EXTENSIONS set, as for a pure
install, the ``c`` cases are skipped.

Also the run's own plumbing: each process's private PostgreSQL server is
stopped at the end, and the PostgreSQL tests skipped for want of one are
summed up in one line.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

from support import postgres_server
from support.impl import NO_EXTENSIONS, compiled_module, pure_namespace


def pytest_sessionfinish(session: pytest.Session) -> None:
    # At the session's end, not at unconfigure: an xdist worker can be ended once it has
    # reported its session finished, before it unconfigures.
    postgres_server.stop()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """What ``-n auto`` means: one more worker than there are CPUs, since many tests wait on
    clocks, processes and signals (fleet windows, grace periods) and another worker keeps
    the CPUs busy meanwhile (3m18s against 3m55s for the default run on 2 cores). Each
    worker has a private PostgreSQL server; where PYSCHED_TEST_POSTGRES_URL names one,
    a single worker, since a test that restarts it or cuts a role off would break the
    other workers' tests."""
    if os.environ.get("PYSCHED_TEST_POSTGRES_URL"):
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cpus or 1) + 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    reasons: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, (tuple, list)) else ""
        _, found, rest = reason.partition(postgres_server.SKIP_PREFIX)
        if found:
            reasons[rest] += 1
    if reasons:
        reason, _ = reasons.most_common(1)[0]
        terminalreporter.write_line(
            f"{sum(reasons.values())} PostgreSQL tests skipped: {reason}", yellow=True)


@pytest.fixture(params=["c", "py"])
def impl(request: pytest.FixtureRequest) -> object:
    if request.param == "c":
        if NO_EXTENSIONS:
            pytest.skip("PYSCHED_NO_EXTENSIONS is set: pure install")
        return compiled_module()
    return pure_namespace()


class FakeClock:
    """A monotonic clock that moves only when a test says so."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        assert seconds >= 0, "a monotonic clock never goes back"
        self.now += seconds


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()
