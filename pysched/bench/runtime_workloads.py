"""ThreadPoolScheduler against the standard library: throughput and start lateness.

These workloads time themselves in wall time (``time.perf_counter`` and
``time.monotonic``): threads, clocks and wake-ups are what is measured, and
CPU time of one process would leave out the waiting that matters here.

- ``throughput()``: whole runs of n due no-op tasks through the workers:
  make the executor, submit in a loop, collect the results in one of three
  idioms (a ``result()`` loop, ``concurrent.futures.wait()``,
  ``as_completed()``), shut down. ThreadPoolExecutor.submit against
  ThreadPoolScheduler (submit, and schedule with explicit ids in the
  ``result()`` idiom) on each available core, the contenders in turns in
  each repeat so machine noise hits all alike; the median of each.
- ``lateness_*()``: n tasks spread evenly over ``span`` seconds with idle
  workers; start lateness (start minus due time, measured by the task itself
  on time.monotonic) for ThreadPoolScheduler, ``sched.scheduler`` and asyncio
  ``loop.call_at``.
"""

from __future__ import annotations

import asyncio
import sched
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from functools import partial
from typing import Any

from pysched.threadpool import ThreadPoolScheduler

from .competitors import CORE
from .percentiles import percentiles
from .workloads import noop

BASELINE = "ThreadPoolExecutor.submit"

# Seconds between the first schedule call and the first due time: enough for
# the slowest contender (the pure twin) to schedule all 10,000 tasks first.
LEAD = 0.5


def cores() -> dict[str, Callable[..., Any]]:
    """The core Scheduler classes available here, by implementation name (``c``, ``py``)."""
    from pysched import _scheduler_py

    found: dict[str, Callable[..., Any]] = {"py": _scheduler_py.Scheduler}
    try:
        from pysched import _core
    except ImportError:
        pass
    else:
        found["c"] = _core.Scheduler
    return found


def drain_submit(executor: Any, n: int) -> float:
    """Seconds to submit n no-ops to ``executor`` and collect every result."""
    start = time.perf_counter()
    futures = [executor.submit(noop) for _ in range(n)]
    for future in futures:
        future.result()
    return time.perf_counter() - start


def drain_schedule(pool: ThreadPoolScheduler, n: int) -> float:
    """The same with schedule(): explicit ids, run_at now, so order and versions are kept."""
    clock = pool.clock
    start = time.perf_counter()
    futures = [pool.schedule(k, clock(), 0, noop) for k in range(n)]
    for future in futures:
        future.result()
    return time.perf_counter() - start


def collect_results(futures: Iterable[Future[Any]]) -> None:
    for future in futures:
        future.result()


def collect_wait(futures: Iterable[Future[Any]]) -> None:
    wait(futures)


def collect_as_completed(futures: Iterable[Future[Any]]) -> None:
    for future in as_completed(futures):
        future.result()


# How a caller waits for its results; the first is the plain loop.
IDIOMS: dict[str, Callable[[Iterable[Future[Any]]], None]] = {
    "result()": collect_results, "wait()": collect_wait, "as_completed()": collect_as_completed}


def whole_run(make: Callable[[], Any], n: int, by_id: bool,
              collect: Callable[[Iterable[Future[Any]]], None]) -> float:
    """Seconds to make an executor, run n due no-ops through it, collect them, shut it down."""
    start = time.perf_counter()
    executor = make()
    if by_id:  # schedule(): explicit ids, run_at now, so order and versions are kept
        clock = executor.clock
        futures = [executor.schedule(k, clock(), 0, noop) for k in range(n)]
    else:
        futures = [executor.submit(noop) for _ in range(n)]
    collect(futures)
    executor.shutdown(wait=True)
    return time.perf_counter() - start


def label(contender: str, idiom: str) -> str:
    """A throughput row's label: the contender, and the idiom unless it is the result() loop."""
    return contender if idiom == "result()" else f"{contender}, {idiom}"


def throughput(n: int = 50_000, workers: int = 4, repeat: int = 5) -> dict[str, Any]:
    """Tasks per second of whole runs (median of ``repeat``) and the ratio to ThreadPoolExecutor.

    Keyed by ``label(contender, idiom)``; each ratio is against
    ThreadPoolExecutor in the same idiom.
    """
    makers: dict[str, tuple[Callable[[], Any], bool]] = {
        BASELINE: (partial(ThreadPoolExecutor, workers), False)}
    for name, core in cores().items():
        make: Callable[[], Any] = partial(ThreadPoolScheduler, workers, _core_factory=core)
        makers[f"ThreadPoolScheduler[{name}].submit"] = (make, False)
        makers[f"ThreadPoolScheduler[{name}].schedule"] = (make, True)
    rates: dict[str, list[float]] = {}
    for _ in range(repeat):
        for idiom, collect in IDIOMS.items():
            for contender, (make, by_id) in makers.items():
                if by_id and idiom != "result()":
                    continue
                seconds = whole_run(make, n, by_id, collect)
                rates.setdefault(label(contender, idiom), []).append(n / seconds)
    result = {}
    for idiom in IDIOMS:
        base = statistics.median(rates[label(BASELINE, idiom)])
        for contender in makers:
            taken = rates.get(label(contender, idiom))
            if taken:
                rate = statistics.median(taken)
                result[label(contender, idiom)] = {"tasks_per_s": rate, "ratio": rate / base,
                                                   "idiom": idiom}
    return result


def _due_times(n: int, span: float, lead: float) -> list[float]:
    start = time.monotonic() + lead
    return [start + span * k / n for k in range(n)]


def lateness_pool(n: int = 10_000, span: float = 1.0, workers: int = 4,
                  core: Callable[..., Any] | None = None) -> dict[str, float]:
    """Start lateness of ThreadPoolScheduler tasks spread over ``span`` seconds."""
    samples: list[float] = []
    record = samples.append
    monotonic = time.monotonic
    done = threading.Event()

    def body(due: float) -> None:
        record(monotonic() - due)
        if len(samples) == n:  # the caller sleeps until then, as asyncio's does
            done.set()

    with ThreadPoolScheduler(workers, _core_factory=core) as pool:
        for k, due in enumerate(_due_times(n, span, LEAD)):
            pool.schedule(k, due, 0, body, (due,))
        done.wait()
    return percentiles(samples)


def lateness_sched(n: int = 10_000, span: float = 1.0) -> dict[str, float]:
    """The same with the standard library's sched.scheduler on one thread."""
    samples: list[float] = []
    monotonic = time.monotonic
    scheduler = sched.scheduler(monotonic, time.sleep)

    def body(due: float) -> None:
        samples.append(monotonic() - due)

    for due in _due_times(n, span, LEAD):
        scheduler.enterabs(due, 0, body, (due,))
    scheduler.run()
    return percentiles(samples)


def lateness_asyncio(n: int = 10_000, span: float = 1.0) -> dict[str, float]:
    """The same with asyncio loop.call_at (the loop's clock is time.monotonic)."""
    samples: list[float] = []
    monotonic = time.monotonic

    async def main() -> None:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        remaining = [n]

        def body(due: float) -> None:
            samples.append(monotonic() - due)
            remaining[0] -= 1
            if not remaining[0]:
                done.set_result(None)

        for due in _due_times(n, span, LEAD):
            loop.call_at(due, body, due)
        await done

    asyncio.run(main())
    return percentiles(samples)


def lateness_contenders(n: int = 10_000, span: float = 1.0,
                        workers: int = 4) -> dict[str, Callable[[], dict[str, float]]]:
    """Each lateness measurement, not yet run, by contender name (the core's pool first)."""
    found: dict[str, Callable[[], dict[str, float]]] = {
        f"ThreadPoolScheduler[{name}]": partial(lateness_pool, n, span, workers, core)
        for name, core in sorted(cores().items(), key=lambda item: item[0] != CORE)}
    found["sched.scheduler"] = partial(lateness_sched, n, span)
    found["asyncio.call_at"] = partial(lateness_asyncio, n, span)
    return found
