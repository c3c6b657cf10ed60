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

Run: ``python benchmarks/bench_durable.py [--n 10000] [--kills 20]
[--postgres URL] [--only claim,e2e,share,crash]``. PostgreSQL sections need
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
    parser.add_argument("--only", default="claim,e2e,share,crash")
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


if __name__ == "__main__":
    main()
