"""ThreadPoolScheduler against the standard library: throughput and start lateness.

Plain functions, so the benchmark suite can call them; run this file for a report::

    python benchmarks/bench_threadpool.py [--tasks N] [--repeat R]

- ``throughput()``: N due no-op tasks through 4 workers, submitted in a loop
  and then waited for, for ThreadPoolExecutor(4).submit and for
  ThreadPoolScheduler(4) (submit, and schedule with explicit ids) on each
  available core, interleaved in one process so machine noise hits all alike.
- ``lateness()``: 10,000 tasks spread evenly over one second with idle
  workers; start lateness (start minus due time, measured by the task itself
  on time.monotonic) for ThreadPoolScheduler, ``sched.scheduler`` and asyncio
  ``loop.call_at``, one after the other.
"""

from __future__ import annotations

import argparse
import asyncio
import sched
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pysched.threadpool import ThreadPoolScheduler


def cores() -> dict[str, Callable[..., Any]]:
    """The core Scheduler classes available here, by implementation name."""
    from pysched import _scheduler_py

    found: dict[str, Callable[..., Any]] = {"py": _scheduler_py.Scheduler}
    try:
        from pysched import _core
    except ImportError:
        pass
    else:
        found["c"] = _core.Scheduler
    return found


def noop() -> None:
    pass


def _drain_submit(executor: Any, n: int) -> float:
    """Seconds to submit n no-ops and collect every result."""
    start = time.perf_counter()
    futures = [executor.submit(noop) for _ in range(n)]
    for future in futures:
        future.result()
    return time.perf_counter() - start


def _drain_schedule(pool: ThreadPoolScheduler, n: int) -> float:
    """The same with schedule(): explicit ids, run_at now, so order and versions are kept."""
    clock = pool.clock
    start = time.perf_counter()
    futures = [pool.schedule(k, clock(), 0, noop) for k in range(n)]
    for future in futures:
        future.result()
    return time.perf_counter() - start


def throughput(n: int = 50_000, workers: int = 4, repeat: int = 5) -> dict[str, Any]:
    """Tasks per second (best of ``repeat``) and the ratio to ThreadPoolExecutor."""
    contenders: dict[str, Callable[[], tuple[Any, Callable[[Any, int], float]]]] = {
        "ThreadPoolExecutor.submit": lambda: (ThreadPoolExecutor(workers), _drain_submit)}
    for name, core in cores().items():
        contenders[f"ThreadPoolScheduler[{name}].submit"] = (
            lambda core=core: (ThreadPoolScheduler(workers, _core_factory=core), _drain_submit))
        contenders[f"ThreadPoolScheduler[{name}].schedule"] = (
            lambda core=core: (ThreadPoolScheduler(workers, _core_factory=core), _drain_schedule))
    best: dict[str, float] = {}
    for _ in range(repeat):
        for name, make in contenders.items():
            executor, drain = make()
            drain(executor, 1000)  # warm-up: threads started, caches warm
            seconds = drain(executor, n)
            executor.shutdown(wait=True)
            best[name] = max(best.get(name, 0.0), n / seconds)
    base = best["ThreadPoolExecutor.submit"]
    return {name: {"tasks_per_s": rate, "ratio": rate / base} for name, rate in best.items()}


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    n = len(ordered)

    def rank(q: float) -> float:
        return ordered[min(n - 1, max(0, int(q * n + 0.999999) - 1))]

    return {"p50_ms": rank(0.5) * 1e3, "p90_ms": rank(0.9) * 1e3, "p99_ms": rank(0.99) * 1e3,
            "max_ms": ordered[-1] * 1e3, "count": n}


# Seconds between the first schedule call and the first due time: enough for
# the slowest contender (the pure twin) to schedule all 10,000 tasks first.
LEAD = 0.5


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
    return _percentiles(samples)


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
    return _percentiles(samples)


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
    return _percentiles(samples)


def lateness(n: int = 10_000, span: float = 1.0) -> dict[str, dict[str, float]]:
    """Start lateness percentiles for each contender, in one process."""
    result = {f"ThreadPoolScheduler[{name}]": lateness_pool(n, span, core=core)
              for name, core in cores().items()}
    result["sched.scheduler"] = lateness_sched(n, span)
    result["asyncio.call_at"] = lateness_asyncio(n, span)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50_000, help="tasks per throughput run")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved throughput runs")
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}; best of {args.repeat}; {args.tasks} tasks per run")
    print(f"{'throughput (due no-ops, 4 workers)':40} {'tasks/s':>10} {'ratio':>6}")
    for name, row in throughput(args.tasks, repeat=args.repeat).items():
        print(f"{name:40} {row['tasks_per_s']:10,.0f} {row['ratio']:6.2f}")
    print(f"{'start lateness, 10,000 tasks over 1 s':40} {'p50 ms':>8} {'p90 ms':>8}"
          f" {'p99 ms':>8} {'max ms':>8}")
    for name, row in lateness().items():
        print(f"{name:40} {row['p50_ms']:8.3f} {row['p90_ms']:8.3f} {row['p99_ms']:8.3f}"
              f" {row['max_ms']:8.3f}")


if __name__ == "__main__":
    main()
