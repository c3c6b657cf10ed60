"""PrometheusMetrics, read as Prometheus reads it: scraped over HTTP, parsed by prometheus_client.

Each test runs real work on a real scheduler (thread pool, asyncio, durable
on SQLite), serves the registry on a live HTTP endpoint and checks the
counters, histograms and gauges against what the work did.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from pysched import Every, ThreadPoolScheduler
from pysched.aio import AsyncScheduler
from pysched.durable import DurableScheduler, Retry, TaskRegistry
from pysched.events import TaskEvent
from pysched.metrics import PrometheusMetrics
from pysched.metrics.prometheus import METRICS

from support.metrics import Scrape, scrape, served

DURATION = "pysched_task_duration_seconds"
LATENESS = "pysched_task_start_lateness_seconds"


def work(x: int) -> int:
    return x * 2


def boom() -> None:
    raise ValueError("boom")


def nap() -> None:
    time.sleep(0.05)


def check_histogram(s: Scrape, name: str, /, **labels: str) -> tuple[float, float]:
    """A histogram's buckets are cumulative and end at +Inf == _count; returns (count, sum)."""
    buckets = s.find(f"{name}_bucket", **labels)
    assert buckets, f"no {name} for {labels}"
    values = [b.value for b in sorted(buckets, key=lambda b: float(b.labels["le"]))]
    assert values == sorted(values)
    count = s.value(f"{name}_count", **labels)
    assert s.value(f"{name}_bucket", **labels, le="+Inf") == count == values[-1]
    return count, s.value(f"{name}_sum", **labels)


def test_every_metric_is_exposed_with_its_type_and_conventions():
    registry = CollectorRegistry()
    with ThreadPoolScheduler(2) as pool:
        PrometheusMetrics(pool, registry=registry)
        pool.submit(work, 1).result()
        with served(registry) as url:
            s = scrape(url)
    for name, (kind, _, _) in METRICS.items():
        assert name.startswith("pysched_")
        family = name.removesuffix("_total") if kind == "counter" else name
        assert s.types[family] == kind, name
        assert (kind == "counter") == name.endswith("_total")
    assert all("task_id" not in sample.labels for sample in s.samples)


def test_pool_counts_outcomes_lateness_and_durations():
    registry = CollectorRegistry()
    labels = {"scheduler": "pool", "queue": ""}
    with ThreadPoolScheduler(4) as pool:
        PrometheusMetrics(pool, registry=registry)
        now = pool.clock()
        futures = [pool.schedule(("work", i), now - 2.0, 0, work, (i,)) for i in range(20)]
        futures += [pool.schedule(("boom", i), now, 0, boom) for i in range(5)]
        futures += [pool.schedule(("nap", i), now, 0, nap) for i in range(3)]
        pool.schedule_in("later", 3600, 0, work, (0,))
        pool.schedule_in("later", 3600, 0, work, (1,))  # replaces the first
        pool.schedule_in("dropped", 3600, 0, work, (2,))
        assert pool.cancel("dropped")
        for fut in futures:
            fut.exception()
        with served(registry) as url:
            s = scrape(url)
        assert s.value("pysched_tasks_pending", scheduler="pool") == 1  # "later"
        assert s.value("pysched_workers", scheduler="pool") == 4
        pool.close()  # cancels "later" (leaving the block would wait for it)
    w, b, n = (dict(labels, name=f.__qualname__) for f in (work, boom, nap))
    assert s.value("pysched_tasks_total", **w, outcome="succeeded") == 20
    assert s.value("pysched_tasks_total", **b, outcome="failed") == 5
    assert s.value("pysched_tasks_total", **n, outcome="succeeded") == 3
    assert s.value("pysched_tasks_total", **w, outcome="replaced") == 1
    assert s.value("pysched_tasks_total", **w, outcome="cancelled") == 1
    assert s.value("pysched_tasks_scheduled_total", **w) == 23
    # Every run started at least 2 s after its due time.
    count, total = check_histogram(s, LATENESS, **w)
    assert count == 20 and total >= 40.0
    assert s.value(f"{LATENESS}_bucket", **w, le="1.0") == 0
    # Each nap ran at least 50 ms; failed runs are timed too.
    count, total = check_histogram(s, DURATION, **n)
    assert count == 3 and total >= 0.15
    assert s.value(f"{DURATION}_bucket", **n, le="0.025") == 0
    assert check_histogram(s, DURATION, **b)[0] == 5


def test_pool_gauges_show_pending_running_and_workers_while_it_runs():
    registry = CollectorRegistry()
    release = threading.Event()
    started = threading.Semaphore(0)

    def hold() -> None:
        started.release()
        release.wait(30)

    with ThreadPoolScheduler(2) as pool, served(registry) as url:
        PrometheusMetrics(pool, registry=registry)
        held = [pool.submit(hold) for _ in range(3)]  # two run, one waits for a worker
        for _ in range(2):
            assert started.acquire(timeout=30)
        for i in range(4):
            pool.schedule_in(i, 3600, 0, work, (i,))
        s = scrape(url)
        release.set()
        for fut in held:
            fut.result()
        after = scrape(url)
        pool.close()  # cancels the far ones (leaving the block would wait for them)
    assert (s.value("pysched_tasks_running", scheduler="pool"),
            s.value("pysched_tasks_pending", scheduler="pool"),
            s.value("pysched_workers", scheduler="pool")) == (2, 5, 2)
    assert after.value("pysched_tasks_running", scheduler="pool") == 0
    assert after.value("pysched_tasks_total", scheduler="pool", queue="",
                       name=hold.__qualname__, outcome="succeeded") == 3


def test_asyncio_runs_are_counted_and_scraped_while_the_loop_runs():
    registry = CollectorRegistry()

    async def job(x: int) -> int:
        await asyncio.sleep(0.02)
        return x

    async def bad() -> None:
        raise KeyError("bad")

    async def main() -> tuple[Scrape, Scrape]:
        async with AsyncScheduler(max_concurrency=3) as sched:
            PrometheusMetrics(sched, registry=registry)
            with served(registry) as url:
                futures = [sched.schedule_in(i, 0, 0, job, (i,)) for i in range(10)]
                futures.append(sched.schedule_in("bad", 0, 0, bad))
                sched.schedule_in("far", 3600, 0, job, (0,))
                await asyncio.wait(futures)
                # Scraped from another thread while the loop is live, as a server would.
                during = await asyncio.to_thread(scrape, url)
                sched.cancel("far")
                await asyncio.sleep(0)
                return during, await asyncio.to_thread(scrape, url)

    during, s = asyncio.run(main())
    labels = {"scheduler": "asyncio", "queue": ""}
    j = dict(labels, name=f"{main.__qualname__.rsplit('.', 1)[0]}.job")
    assert during.value("pysched_tasks_pending", scheduler="asyncio") == 1
    assert during.value("pysched_workers", scheduler="asyncio") == 3
    assert s.value("pysched_tasks_total", **j, outcome="succeeded") == 10
    assert s.value("pysched_tasks_total", **j, outcome="cancelled") == 1
    assert s.value("pysched_tasks_total", **labels, name=j["name"].replace("job", "bad"),
                   outcome="failed") == 1
    count, total = check_histogram(s, DURATION, **j)
    assert count == 10 and total >= 0.2
    assert check_histogram(s, LATENESS, **j)[0] == 10


def test_an_asyncio_scheduler_without_a_limit_reports_no_workers():
    registry = CollectorRegistry()

    async def main() -> Scrape:
        async with AsyncScheduler() as sched:
            PrometheusMetrics(sched, registry=registry)
            with served(registry) as url:
                return await asyncio.to_thread(scrape, url)

    s = asyncio.run(main())
    assert s.find("pysched_workers") == []
    assert s.value("pysched_tasks_running", scheduler="asyncio") == 0


def test_durable_runs_on_sqlite_are_counted_by_registered_name_and_queue(tmp_path):
    registry = CollectorRegistry()
    tasks = TaskRegistry()
    attempts: list[int] = []

    @tasks.task(name="metrics.ok", queue="mail")
    def ok(x: int) -> int:
        return x

    @tasks.task(name="metrics.flaky", retry=Retry(attempts=2, backoff=0.01, jitter=False))
    def flaky() -> None:
        attempts.append(1)
        raise RuntimeError("always")

    sched = DurableScheduler(tmp_path / "s.db", registry=tasks, max_workers=3,
                             poll_interval=0.05)
    try:
        PrometheusMetrics(sched, registry=registry)
        futures = [sched.schedule_in(f"ok-{i}", 0, 0, ok, (i,)) for i in range(12)]
        futures.append(sched.schedule_in("flaky", 0, 0, flaky))
        for fut in futures:
            fut.exception(timeout=60)
        with served(registry) as url:
            s = scrape(url)
    finally:
        sched.close()
    o = {"scheduler": "durable", "queue": "mail", "name": "metrics.ok"}
    f = {"scheduler": "durable", "queue": "default", "name": "metrics.flaky"}
    assert len(attempts) == 2
    assert s.value("pysched_tasks_scheduled_total", **o) == 12
    assert s.value("pysched_tasks_total", **o, outcome="succeeded") == 12
    # Each attempt that raised failed; the first was retried.
    assert s.value("pysched_tasks_total", **f, outcome="failed") == 2
    assert s.value("pysched_tasks_total", **f, outcome="retried") == 1
    assert check_histogram(s, LATENESS, **o)[0] == 12
    assert check_histogram(s, DURATION, **o)[0] == 12
    assert check_histogram(s, DURATION, **f)[0] == 2  # each attempt ran once
    assert s.value("pysched_workers", scheduler="durable") == 3


def test_several_schedulers_share_one_registry_by_label():
    registry = CollectorRegistry()
    metrics = PrometheusMetrics(registry=registry)
    with ThreadPoolScheduler(2) as a, ThreadPoolScheduler(3) as b, \
            ThreadPoolScheduler(1) as c:
        metrics.attach(a)
        metrics.attach(b)  # the same label: added up
        metrics.attach(c, label="reports")
        for sched in (a, b, c):
            sched.submit(work, 1).result()
        with served(registry) as url:
            s = scrape(url)
        metrics.detach(c)
        c.submit(work, 2).result()
        with served(registry) as url:
            after = scrape(url)
    w = {"queue": "", "name": work.__qualname__, "outcome": "succeeded"}
    assert s.value("pysched_tasks_total", scheduler="pool", **w) == 2
    assert s.value("pysched_tasks_total", scheduler="reports", **w) == 1
    assert s.value("pysched_workers", scheduler="pool") == 5
    assert s.value("pysched_workers", scheduler="reports") == 1
    assert after.value("pysched_tasks_total", scheduler="reports", **w) == 1  # counts stay
    assert after.find("pysched_workers", scheduler="reports") == []  # its gauges go


def test_bad_attachments_are_refused_and_change_nothing():
    registry = CollectorRegistry()
    with pytest.raises(TypeError, match="scheduler must be"):
        PrometheusMetrics(object(), registry=registry)  # type: ignore[arg-type]
    metrics = PrometheusMetrics(registry=registry)  # the failed one left the registry
    with pytest.raises(ValueError, match="Duplicated"):
        PrometheusMetrics(registry=registry)
    with ThreadPoolScheduler(1) as pool:
        metrics.attach(pool)
        with pytest.raises(ValueError, match="attached already"):
            metrics.attach(pool)
        with ThreadPoolScheduler(1) as other, pytest.raises(TypeError, match="label"):
            metrics.attach(other, label="")
        metrics.detach(pool)
        with pytest.raises(ValueError, match="not attached"):
            metrics.detach(pool)
        pool.submit(work, 1).result()
    assert PrometheusMetrics(registry=None).describe()
    with served(registry) as url:
        assert scrape(url).find("pysched_tasks_total") == []


def test_a_series_run_that_fails_counts_once_and_its_series_event_is_left_alone(caplog):
    registry = CollectorRegistry()
    stopped, failed = threading.Event(), threading.Event()

    def flop() -> None:
        raise OSError("disk full")

    with ThreadPoolScheduler(2) as pool:
        PrometheusMetrics(pool, registry=registry)
        # Added after the collector: each event reaches it first. The series' events and
        # the tasks' are two streams, each in order, that may reach listeners in either
        # order: wait for both.
        pool.add_listener(lambda event: stopped.set(), kinds=("stopped",))
        pool.add_listener(lambda event: isinstance(event, TaskEvent) and failed.set(),
                          kinds=("failed",))
        # Due now, and next in an hour: one run, whose failure stops the series.
        pool.schedule_recurring("nightly", Every(3600, start_at=pool.clock()), 0, flop,
                                on_error="stop")
        assert stopped.wait(30) and failed.wait(30)  # the series stops after its failed run
        with served(registry) as url:
            s = scrape(url)
    assert [r.getMessage() for r in caplog.records if "listener raised" in r.getMessage()] == []
    assert s.total("pysched_tasks_total", outcome="failed") == 1
