"""ThreadPoolScheduler against the standard library: throughput and start lateness.

These workloads time themselves in wall time (``time.perf_counter`` and
``time.monotonic``): threads, clocks and wake-ups are what is measured, and
CPU time of one process would leave out the waiting that matters here.

- ``throughput()``: whole runs of n due no-op tasks through the workers:
  make the executor, submit in a loop, collect the results in one of three
  idioms (a ``result()`` loop, ``concurrent.futures.wait()``,
  ``as_completed()``), shut down. ThreadPoolExecutor.submit against
  ThreadPoolScheduler (submit, and schedule with explicit ids in the
  ``result()`` idiom) on each available core. Each repeat runs every
  contender once, each with a fresh executor after a garbage collection, in
  an order rotated from one repeat to the next, so machine noise and order
  hit all alike; the median of each, and the spread of the per-repeat
  ratios (each against the baseline's run of the same repeat).
- ``lateness_*()``: n tasks spread evenly over ``span`` seconds with idle
  workers; start lateness (start minus due time, measured by the task itself
  on time.monotonic) for ThreadPoolScheduler, ``sched.scheduler`` and asyncio
  ``loop.call_at``.
"""

from __future__ import annotations

import asyncio
import gc
import sched
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Iterator
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
    gc.collect()  # every run starts without the garbage of the one before
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
    ThreadPoolExecutor in the same idiom: ``ratio`` of the medians, and
    ``min_ratio``/``max_ratio`` of the runs paired within each repeat;
    ``min_tasks_per_s``/``max_tasks_per_s`` the spread of the rates;
    ``switches_per_task`` the median of the process's context switches per
    task (a lock convoy shows there first).
    """
    makers: dict[str, tuple[Callable[[], Any], bool]] = {
        BASELINE: (partial(ThreadPoolExecutor, workers), False)}
    for name, core in cores().items():
        make: Callable[[], Any] = partial(ThreadPoolScheduler, workers, _core_factory=core)
        makers[f"ThreadPoolScheduler[{name}].submit"] = (make, False)
        makers[f"ThreadPoolScheduler[{name}].schedule"] = (make, True)
    runs = [(label(contender, idiom), make, by_id, collect)
            for idiom, collect in IDIOMS.items()
            for contender, (make, by_id) in makers.items()
            if not by_id or idiom == "result()"]
    rates: dict[str, list[float]] = {name: [] for name, *_ in runs}
    switches: dict[str, list[float]] = {name: [] for name, *_ in runs}
    for turn in range(repeat):
        shift = turn % len(runs)
        for name, make, by_id, collect in runs[shift:] + runs[:shift]:
            before = _context_switches()
            rates[name].append(n / whole_run(make, n, by_id, collect))
            switches[name].append((_context_switches() - before) / n)
    result = {}
    for idiom in IDIOMS:
        base = rates[label(BASELINE, idiom)]
        for contender in makers:
            taken = rates.get(label(contender, idiom))
            if taken:
                paired = [rate / base_rate for rate, base_rate in zip(taken, base, strict=True)]
                result[label(contender, idiom)] = {
                    "tasks_per_s": statistics.median(taken),
                    "ratio": statistics.median(taken) / statistics.median(base),
                    "min_ratio": min(paired), "max_ratio": max(paired),
                    "min_tasks_per_s": min(taken), "max_tasks_per_s": max(taken),
                    "switches_per_task": statistics.median(
                        switches[label(contender, idiom)]),
                    "idiom": idiom}
    return result


def _context_switches() -> int:
    """The process's context switches so far, all threads, voluntary or not (0 if unknown)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return 0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw + usage.ru_nivcsw


def _due_times(n: int, span: float, lead: float) -> list[float]:
    start = time.monotonic() + lead
    return [start + span * k / n for k in range(n)]


def _leads() -> Iterator[float]:
    """Leads to try, doubling: a run whose scheduling overran its lead is made again.

    The first due time must come after the last schedule call, so that every
    contender's workers are idle and the lateness is its scheduler's, not
    a backlog of its set-up.
    """
    lead = LEAD
    while True:
        yield lead
        lead *= 2


def lateness_pool(n: int = 10_000, span: float = 1.0, workers: int = 4,
                  core: Callable[..., Any] | None = None) -> dict[str, float]:
    """Start lateness of ThreadPoolScheduler tasks spread over ``span`` seconds."""
    monotonic = time.monotonic
    for lead in _leads():
        samples: list[float] = []
        done = threading.Event()

        def body(due: float, samples: list[float] = samples, done: threading.Event = done) -> None:
            samples.append(monotonic() - due)
            if len(samples) == n:  # the caller sleeps until then, as asyncio's does
                done.set()

        with ThreadPoolScheduler(workers, _core_factory=core) as pool:
            dues = _due_times(n, span, lead)
            for k, due in enumerate(dues):
                pool.schedule(k, due, 0, body, (due,))
            if monotonic() >= dues[0]:
                pool.close(cancel_running=True)
                continue
            done.wait()
        return percentiles(samples)
    raise AssertionError("unreachable")


def lateness_sched(n: int = 10_000, span: float = 1.0) -> dict[str, float]:
    """The same with the standard library's sched.scheduler on one thread."""
    samples: list[float] = []
    monotonic = time.monotonic

    def body(due: float) -> None:
        samples.append(monotonic() - due)

    for lead in _leads():
        scheduler = sched.scheduler(monotonic, time.sleep)
        dues = _due_times(n, span, lead)
        for due in dues:
            scheduler.enterabs(due, 0, body, (due,))
        if monotonic() < dues[0]:
            scheduler.run()
            return percentiles(samples)
    raise AssertionError("unreachable")


def lateness_asyncio(n: int = 10_000, span: float = 1.0) -> dict[str, float]:
    """The same with asyncio loop.call_at (the loop's clock is time.monotonic)."""
    samples: list[float] = []
    monotonic = time.monotonic

    async def main(lead: float) -> bool:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        remaining = [n]

        def body(due: float) -> None:
            samples.append(monotonic() - due)
            remaining[0] -= 1
            if not remaining[0]:
                done.set_result(None)

        dues = _due_times(n, span, lead)
        handles = [loop.call_at(due, body, due) for due in dues]
        if monotonic() >= dues[0]:
            for handle in handles:
                handle.cancel()
            return False
        await done
        return True

    for lead in _leads():
        if asyncio.run(main(lead)):
            return percentiles(samples)
    raise AssertionError("unreachable")


def lateness_contenders(n: int = 10_000, span: float = 1.0,
                        workers: int = 4) -> dict[str, Callable[[], dict[str, float]]]:
    """Each lateness measurement, not yet run, by contender name (the core's pool first)."""
    found: dict[str, Callable[[], dict[str, float]]] = {
        f"ThreadPoolScheduler[{name}]": partial(lateness_pool, n, span, workers, core)
        for name, core in sorted(cores().items(), key=lambda item: item[0] != CORE)}
    found["sched.scheduler"] = partial(lateness_sched, n, span)
    found["asyncio.call_at"] = partial(lateness_asyncio, n, span)
    return found
