"""Durable schedules: claim throughput, crash recovery and a shared schedule, with figures.

Sections (all by default; pick with --only):

- claim: tasks per second through claim + finish of n due rows by one
  claimer, for batch sizes 1..256, on the memory, SQLite and PostgreSQL
  stores, beside the in-memory core Scheduler (``next()`` + ``complete()``)
  on the same n. One warm-up, then min / median / max of --repeats runs.
- e2e: no-op tasks through a DurableScheduler with 4 workers, per store.
- share: three worker processes on one PostgreSQL schedule of n tasks: once
  without a kill (throughput) and once with one SIGKILLed mid-run (zero
  duplicate runs under a live lease, takeover after the lease expires).
- crash: n tasks, a worker SIGKILLed at random --kills times, on SQLite and
  PostgreSQL: lost, forbidden (cancelled or superseded) runs, re-runs.
- vs: end-to-end throughput against procrastinate on the same PostgreSQL
  database (``pip install -e '.[durable-bench]'``): each enqueues n due no-op
  tasks with its own batch call (pysched: the store's ``schedule``;
  procrastinate: ``batch_defer_async``), then its worker runs them all with 4
  at once (pysched: ``DurableScheduler(max_workers=4)``, default prefetch and
  prefetch 60; procrastinate: ``run_worker_async(concurrency=4, wait=False)``
  on an ``async`` no-op, which runs on its event loop without a thread hop).
  The rate is n over the time from the worker's start to the last stored
  outcome. pysched uses a fresh table, procrastinate a fresh schema, each
  run, both ANALYZEd after the enqueue as autovacuum would have done on a
  table in use (without it, procrastinate's fetch, whose NOT EXISTS on locks
  the planner misjudges on a fresh table, took 17 ms a job at 10,000 jobs
  instead of about 1 ms). Contenders take turns (the order alternates), one warm-up each, then
  --repeats runs; medians and the ratio are printed.

Run: ``python benchmarks/bench_durable.py [--n 10000] [--kills 20]
[--postgres URL] [--only claim,e2e,share,crash,vs]``. PostgreSQL sections need
--postgres or PYSCHED_TEST_POSTGRES_URL; without it they are skipped. Only
loopback servers should be used: the figures are meant to show the cost of
the store, not of a network.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "durable"))

import harness  # noqa: E402 - registers "record"

import pysched  # noqa: E402
from pysched import durable  # noqa: E402
from pysched.durable import NewTask, Outcome  # noqa: E402

ARGS = '{"args":[],"kwargs":{}}'


@durable.task(name="bench-noop")
def noop() -> None:
    pass


def spread(samples: list[float]) -> str:
    return (f"{min(samples):>9,.0f} {statistics.median(samples):>9,.0f} "
            f"{max(samples):>9,.0f}")


def repeat(run: Callable[[], float], repeats: int) -> list[float]:
    run()  # warm-up
    return [run() for _ in range(repeats)]


def core_rate(n: int) -> float:
    """Tasks/s through the in-memory core: schedule n due tasks, then next() + complete()."""
    s = pysched.Scheduler(clock=lambda: 0.0)
    for i in range(n):
        s.schedule(i, 0.0, i % 4, noop)
    start = time.perf_counter()
    while isinstance(task := s.next(1.0), pysched.Task):
        s.complete(task)
    return n / (time.perf_counter() - start)


def claim_rate(open_store: Callable[[], durable.Store], n: int, batch: int) -> float:
    """Tasks/s through claim + finish of n due rows, ``batch`` rows per claim."""
    store = open_store()
    store.schedule([NewTask(f"t{i}", 0.0, i % 4, "bench-noop", ARGS) for i in range(n)])
    start = time.perf_counter()
    done = 0
    while claims := store.claim(1.0, batch, "bench", 60.0):
        store.finish([Outcome(c.token, c.task_id, c.version, "completed", None) for c in claims])
        done += len(claims)
    elapsed = time.perf_counter() - start
    assert done == n
    store.close()
    return n / elapsed


def e2e_rate(open_store: Callable[[], durable.Store], n: int) -> float:
    """Tasks/s of n due no-op tasks through a DurableScheduler with 4 workers."""
    store = open_store()
    store.schedule([NewTask(f"t{i}", 0.0, 0, "bench-noop", ARGS) for i in range(n)])
    start = time.perf_counter()
    sched = durable.DurableScheduler(store, max_workers=4, prefetch=60, poll_interval=0.05)
    while store.counts().get("completed", 0) < n:
        time.sleep(0.005)
    elapsed = time.perf_counter() - start
    sched.close()
    store.close()
    return n / elapsed


class Window:
    """The wall time and this process's CPU time of a ``with`` block."""

    def __enter__(self) -> Window:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu

    def figures(self, n: int) -> tuple[float, float]:
        """(tasks/s, CPU microseconds of this process per task)."""
        return n / self.wall, self.cpu / n * 1e6


def pysched_vs_rate(url: str, n: int, prefetch: int | None) -> tuple[float, float]:
    """n due no-op tasks stored, then run by a DurableScheduler with 4 workers: Window.figures."""
    table = "bench_vs_" + uuid.uuid4().hex[:12]
    store = durable.open_store(url, table=table)
    try:
        for start in range(0, n, 1000):
            store.schedule([NewTask(f"t{i}", 0.0, 0, "bench-noop", ARGS)
                            for i in range(start, min(n, start + 1000))])
        _execute(url, f"ANALYZE {table}")
        with Window() as window:
            sched = durable.DurableScheduler(store, max_workers=4, prefetch=prefetch)
            while store.counts().get("completed", 0) < n:
                time.sleep(0.01)  # a 10 ms poll: under 0.2% of a run of a few seconds
        sched.close()
        assert store.counts() == {"completed": n}
    finally:
        store.close()
        _execute(url, f"DROP TABLE IF EXISTS {table}, {table}_meta; DROP SEQUENCE IF EXISTS"
                      f" {table}_seq")
    return window.figures(n)


def procrastinate_rate(url: str, n: int) -> tuple[float, float]:
    """n no-op jobs deferred, then run by procrastinate's worker, 4 at once: Window.figures."""
    import asyncio

    import procrastinate

    schema = "bench_procrastinate_" + uuid.uuid4().hex[:8]
    _execute(url, f"CREATE SCHEMA {schema}")
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=url, kwargs={"options": f"-c search_path={schema}"}, min_size=6, max_size=8))

    @app.task(name="noop")
    async def noop() -> None:
        pass

    async def run() -> tuple[float, float]:
        async with app.open_async():
            await app.schema_manager.apply_schema_async()
            for start in range(0, n, 1000):
                await noop.batch_defer_async(*({} for _ in range(start, min(n, start + 1000))))
            _execute(url, f"ANALYZE {schema}.procrastinate_jobs")
            with Window() as window:
                await app.run_worker_async(concurrency=4, wait=False,
                                           install_signal_handlers=False, listen_notify=False)
            done = await app.job_manager.list_jobs_async(status="succeeded")
            assert len(done) == n, f"{len(done)} of {n} jobs succeeded"
            return window.figures(n)

    try:
        return asyncio.run(run())
    finally:
        _execute(url, f"DROP SCHEMA {schema} CASCADE")


def _execute(url: str, sql: str) -> None:
    """Run one statement on its own connection (schema changes, ANALYZE)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        db.execute(sql)


def server_settings(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as db:
        return ", ".join(f"{name} {db.execute(f'SHOW {name}').fetchone()[0]}"  # type: ignore[index]
                         for name in ("server_version", "fsync", "synchronous_commit"))


def section_vs(args: argparse.Namespace, pg_url: str) -> None:
    import logging

    logging.getLogger("procrastinate").setLevel(logging.ERROR)
    procrastinate = "procrastinate, concurrency 4"
    contenders: dict[str, Callable[[int], tuple[float, float]]] = {
        "pysched, 4 workers": lambda n: pysched_vs_rate(pg_url, n, None),
        "pysched, 4 workers, prefetch 60": lambda n: pysched_vs_rate(pg_url, n, 60),
        procrastinate: lambda n: procrastinate_rate(pg_url, n),
    }
    print(f"\n## end to end against procrastinate: {args.n:,} due no-op tasks, one PostgreSQL"
          f" database ({server_settings(pg_url)}); median of the runs in turns (min max), and"
          " this process's CPU time per task")
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    for run in contenders.values():
        run(min(args.n, 2_000))  # warm-up
    for turn in range(args.repeats):
        order = list(contenders) if turn % 2 == 0 else list(reversed(contenders))
        for name in order:
            runs[name].append(contenders[name](args.n))
    rate = {name: statistics.median(r for r, _ in samples) for name, samples in runs.items()}
    for name, samples in runs.items():
        rates = [r for r, _ in samples]
        cpu = statistics.median(c for _, c in samples)
        print(f"{name:<34}{rate[name]:>9,.0f} tasks/s ({min(rates):,.0f} {max(rates):,.0f})"
              f"  {cpu:>7,.0f} us CPU/task")
    for name in contenders:
        if name != procrastinate:
            print(f"ratio {name} / procrastinate: {rate[name] / rate[procrastinate]:.2f}x")


def stores(pg_url: str | None, tmp: str) -> dict[str, Callable[[], durable.Store]]:
    def sqlite() -> durable.Store:
        return durable.open_store(os.path.join(tmp, f"{uuid.uuid4().hex}.db"))

    found: dict[str, Callable[[], durable.Store]] = {"memory": durable.MemoryStore,
                                                      "sqlite": sqlite}
    if pg_url:
        def postgres() -> durable.Store:
            return durable.open_store(pg_url, table="bench_" + uuid.uuid4().hex[:12])

        found["postgres"] = postgres
    return found


def section_claim(args: argparse.Namespace, kinds: dict[str, Any]) -> None:
    print(f"\n## claim + finish throughput, {args.n:,} due rows, one claimer (tasks/s:"
          " min median max)")
    core = repeat(lambda: core_rate(args.n), args.repeats)
    print(f"{'in-memory core Scheduler':<28}{spread(core)}")
    for kind, open_store in kinds.items():
        for batch in (1, 16, 64, 256):
            n = min(args.n, 2_000) if batch == 1 else args.n  # batch 1 is slow on a durable disk
            rates = repeat(functools.partial(claim_rate, open_store, n, batch), args.repeats)
            print(f"{kind + ' batch ' + str(batch):<28}{spread(rates)}"
                  + ("" if n == args.n else f"   (n={n:,})"))


def section_e2e(args: argparse.Namespace, kinds: dict[str, Any]) -> None:
    print(f"\n## end to end: {args.n:,} due no-op tasks, DurableScheduler, 4 workers (tasks/s)")
    for kind, open_store in kinds.items():
        rates = repeat(functools.partial(e2e_rate, open_store, args.n), args.repeats)
        print(f"{kind:<28}{spread(rates)}")


def section_share(args: argparse.Namespace, pg_url: str, tmp: str) -> None:
    print(f"\n## three processes on one PostgreSQL schedule, {args.n:,} tasks")
    for kill_at in (None, 0.4):
        table = "share_" + uuid.uuid4().hex[:12]
        log = os.path.join(tmp, table + ".log")
        figures = harness.share_run(pg_url, table, log, n=args.n, procs=3, lease=2.0,
                                    heartbeat=0.5, kill_at=kill_at, seed=21, spread=0.0)
        label = "no kill" if kill_at is None else f"node-0 SIGKILLed after {kill_at:.0%} ended"
        print(f"{label}: {figures}")


def section_crash(args: argparse.Namespace, kinds: dict[str, Any], pg_url: str | None,
                  tmp: str) -> None:
    print(f"\n## crash recovery: {args.n:,} tasks, a worker SIGKILLed at random {args.kills} times")
    targets = [("sqlite", os.path.join(tmp, "crash.db"), "pysched_tasks")]
    if pg_url:
        targets.append(("postgres", pg_url, "crash_" + uuid.uuid4().hex[:12]))
    for kind, target, table in targets:
        figures = harness.crash_run(target, table, os.path.join(tmp, f"crash-{kind}.log"),
                                    n=args.n, kills=args.kills, seed=20, spread=8.0,
                                    max_delay=0.5)
        print(f"{kind}: {figures}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("PYSCHED_TEST_POSTGRES_URL"))
    parser.add_argument("--only", default="claim,e2e,share,crash,vs")
    args = parser.parse_args()
    only = set(args.only.split(","))
    print(f"pysched {pysched.__version__} ({pysched.IMPLEMENTATION} core), Python "
          f"{sys.version.split()[0]}, {os.cpu_count()} CPUs;"
          f" PostgreSQL: {'yes' if args.postgres else 'not given, skipped'}")
    with tempfile.TemporaryDirectory() as tmp:
        kinds = stores(args.postgres, tmp)
        if "claim" in only:
            section_claim(args, kinds)
        if "e2e" in only:
            section_e2e(args, kinds)
        if "share" in only and args.postgres:
            section_share(args, args.postgres, tmp)
        if "crash" in only:
            section_crash(args, kinds, args.postgres, tmp)
        if "vs" in only and args.postgres:
            section_vs(args, args.postgres)


if __name__ == "__main__":
    main()
