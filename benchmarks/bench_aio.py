"""AsyncScheduler against what asyncio users compare it with, in one process.

- ``due``: n plain callables, all due now, against ``loop.call_at``.
- ``spread``: n plain callables due evenly over ``span`` seconds, against
  ``loop.call_at``: the CPU time it takes to keep up with that rate.
- ``capped``: n no-op coroutines at most ``cap`` at a time, against an
  ``asyncio.Semaphore`` of ``cap`` around ``loop.create_task``.

``--context-vars k`` sets k context variables in the context every contender
schedules from (0 by default: asyncio's own context holds none), since a
version of a context without variables keeps no copy of it.

Each figure is the CPU time of this process (``time.process_time``) from the
first schedule call to the last run, the median of ``repeats`` runs taken in
turns (each contender once per round, on a fresh loop), so machine noise hits
all alike. ``--loop uvloop`` runs every contender on uvloop instead.

Run: ``python benchmarks/bench_aio.py [--n 100000] [--cap 100] [--repeats 7]
[--loop asyncio|uvloop] [--core c|py] [--context-vars 0]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import gc
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pysched
from pysched.aio import AsyncScheduler
from pysched.bench import runtime_workloads

Workload = Callable[[], Coroutine[Any, Any, float]]

_VARS = [contextvars.ContextVar(f"bench_var_{k}") for k in range(16)]


def _set_context_vars(count: int) -> None:
    """Give the current context ``count`` variables, each with an object of its own."""
    for var in _VARS[:count]:
        var.set(object())


def _counter(loop: asyncio.AbstractEventLoop,
             n: int) -> tuple[asyncio.Future[None], Callable[[], None]]:
    """A Future resolved by the n-th call of the returned callable."""
    done = loop.create_future()
    left = [n]

    def tick() -> None:
        left[0] -= 1
        if not left[0]:
            done.set_result(None)

    return done, tick


def _due_times(loop: asyncio.AbstractEventLoop, n: int, span: float) -> list[float]:
    """n times spread evenly over ``span`` seconds (all now when 0), made before timing."""
    if not span:
        return [loop.time()] * n
    first = loop.time() + 0.05
    return [first + span * k / n for k in range(n)]


async def callables_scheduler(n: int, span: float, core: Any) -> float:
    """n plain callables through an AsyncScheduler, due over ``span`` seconds."""
    loop = asyncio.get_running_loop()
    done, tick = _counter(loop, n)
    due = _due_times(loop, n, span)
    start = time.process_time()
    async with AsyncScheduler(_core_factory=core) as s:
        schedule = s.schedule
        for k, when in enumerate(due):
            schedule(k, when, 0, tick)
        await done
    return time.process_time() - start


async def callables_call_at(n: int, span: float) -> float:
    """The same n callables with ``loop.call_at``."""
    loop = asyncio.get_running_loop()
    done, tick = _counter(loop, n)
    due = _due_times(loop, n, span)
    start = time.process_time()
    call_at = loop.call_at
    for when in due:
        call_at(when, tick)
    await done
    return time.process_time() - start


async def capped_scheduler(n: int, cap: int, core: Any) -> float:
    """n no-op coroutines due now through an AsyncScheduler of ``cap``."""
    loop = asyncio.get_running_loop()
    done, tick = _counter(loop, n)

    async def work() -> None:
        tick()

    start = time.process_time()
    async with AsyncScheduler(max_concurrency=cap, _core_factory=core) as s:
        now = loop.time()
        schedule = s.schedule
        for k in range(n):
            schedule(k, now, 0, work)
        await done
    return time.process_time() - start


async def capped_semaphore(n: int, cap: int) -> float:
    """The same coroutines, each a Task waiting on an ``asyncio.Semaphore`` of ``cap``."""
    loop = asyncio.get_running_loop()
    done, tick = _counter(loop, n)
    semaphore = asyncio.Semaphore(cap)

    async def work() -> None:
        tick()

    async def guarded() -> None:
        async with semaphore:
            await work()

    start = time.process_time()
    create_task = loop.create_task
    for _ in range(n):
        create_task(guarded())
    await done
    return time.process_time() - start


def _loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop  # type: ignore[no-any-return]
    return asyncio.new_event_loop


async def _in_context_with_vars(count: int, workload: Workload) -> float:
    """``workload()`` in this Task, once its context has ``count`` variables."""
    _set_context_vars(count)
    return await workload()


def _run(workload: Workload, new_loop: Callable[[], asyncio.AbstractEventLoop],
         context_vars: int = 0) -> float:
    gc.collect()
    loop = new_loop()
    try:
        return loop.run_until_complete(_in_context_with_vars(context_vars, workload))
    finally:
        loop.close()


def in_turns(contenders: dict[str, Workload], repeats: int,
             new_loop: Callable[[], asyncio.AbstractEventLoop],
             context_vars: int = 0) -> dict[str, float]:
    """The median seconds of each contender over ``repeats`` rounds, one run each per round."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for workload in contenders.values():  # an untimed warm-up each
        _run(workload, new_loop, context_vars)
    for _ in range(repeats):
        for name, workload in contenders.items():
            samples[name].append(_run(workload, new_loop, context_vars))
    return {name: statistics.median(values) for name, values in samples.items()}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--cap", type=int, default=100)
    parser.add_argument("--span", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument("--core", choices=["c", "py"], default=None)
    parser.add_argument("--only", choices=["due", "spread", "capped"], action="append")
    parser.add_argument("--context-vars", type=int, default=0, choices=range(len(_VARS) + 1),
                        metavar=f"0..{len(_VARS)}")
    args = parser.parse_args(argv)
    cores = runtime_workloads.cores()
    core_name = args.core or ("c" if "c" in cores else "py")
    core = cores[core_name]
    n, cap, span = args.n, args.cap, args.span
    new_loop = _loop_factory(args.loop)
    groups: dict[str, tuple[str, dict[str, Workload]]] = {
        "due": (f"{n:,} plain callables due now", {
            "AsyncScheduler": lambda: callables_scheduler(n, 0.0, core),
            "loop.call_at": lambda: callables_call_at(n, 0.0)}),
        "spread": (f"{n:,} plain callables due over {span:g} s", {
            "AsyncScheduler": lambda: callables_scheduler(n, span, core),
            "loop.call_at": lambda: callables_call_at(n, span)}),
        "capped": (f"{n:,} no-op coroutines, at most {cap} at a time", {
            "AsyncScheduler": lambda: capped_scheduler(n, cap, core),
            "Semaphore+create_task": lambda: capped_semaphore(n, cap)}),
    }
    print(f"pysched {pysched.__version__} ({core_name} core), Python {sys.version.split()[0]},"
          f" {args.loop} loop, {args.context_vars} context variables;"
          f" CPU seconds, median of {args.repeats} runs in turns")
    for key in args.only or list(groups):
        title, contenders = groups[key]
        medians = in_turns(contenders, args.repeats, new_loop, args.context_vars)
        ours = medians["AsyncScheduler"]
        print(f"{title}:")
        for name, seconds in medians.items():
            ratio = ("" if name == "AsyncScheduler"
                     else f"  (AsyncScheduler / this: {ours / seconds:.2f}x)")
            print(f"  {name:24} {seconds:8.3f} s{ratio}")


if __name__ == "__main__":
    main(sys.argv[1:])
