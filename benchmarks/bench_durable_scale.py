"""Durable schedules at scale: claims beside a million rows, retention of a million rows,
draining and a sustained load, pysched beside procrastinate.

Sections (all by default; pick with --only):

- claim: a table of --rows pending rows, all due over the last hour, and as many
  finished rows written eight days ago, made with one INSERT ... SELECT each and
  then ANALYZEd (PostgreSQL; a SQLite file is left as the store made it). One
  claimer claims --batch rows and finishes them, --claims times; the claim
  calls' latency, p50 / p99 / max. Beside it, the same on a table of twice the
  pending rows the claims take and no finished ones, to show what the million
  rows add.
- retention: on that table, the claim latency again while a second
  ``DurableScheduler`` in a process of its own (serving no task, so claiming
  nothing) deletes the million finished rows by its retention, ``retention_batch`` rows per
  transaction (``--retention-batch``); the claims' p99 during the deletion
  over their p99 before it, and the deletion's rows/s.
- drain: n due no-op tasks, then 4 workers drain them: pysched
  (``DurableScheduler(max_workers=4)``, default prefetch and prefetch 60)
  beside procrastinate (``run_worker_async(concurrency=4)``), on the same
  PostgreSQL server, the same way as bench_durable.py's "vs" section (whose
  functions this one calls): turns, alternating order, one warm-up, medians.
- sustained: a producer process defers --rate tasks/s for --seconds (a batch
  every 10 ms, each task due at once and carrying the time it was deferred) to
  a worker with 4 at once: pysched's ``DurableScheduler(max_workers=4)`` and
  procrastinate's worker. Each task notes ``start - deferred``, its start
  lateness; p50 / p99 / max, and the tasks run of those deferred.

PostgreSQL: --postgres URL, else a private server (initdb in a temporary
folder, a free loopback port, fsync and synchronous_commit off, as the test
suite's tests/support/postgres_server.py starts it), stopped at the end.

Run: ``nice -n -10 python benchmarks/bench_durable_scale.py [--rows 1000000]
[--only claim,retention,drain,sustained] [--stores postgres,sqlite]``
(``pip install -e '.[durable-bench]'`` for procrastinate).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import bench_durable  # noqa: E402 - the "vs" section's contenders

import pysched  # noqa: E402
from pysched import durable  # noqa: E402
from pysched.durable import Outcome  # noqa: E402
from pysched.durable.store import encode_args  # noqa: E402

ARGS = '{"args":[],"kwargs":{}}'
DAY = 86_400.0

# --rows pending rows due over the last hour, and as many finished eight days ago
# (completed, 1 in 20 failed, 1 in 20 cancelled), in four queues and seven task names.
FILL = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
INSERT INTO {table} (task_id, version, state, run_at, priority, ref, args, attempts, seq,
                     fmt, error, queue, updated_at)
SELECT '{prefix}' || CAST(i AS text), 1, {state}, {run_at}, i % 3,
       'jobs.send_' || CAST(i % 7 AS text), '{args}', {attempts}, i, 1, NULL,
       CASE i % 4 WHEN 1 THEN 'mail' WHEN 2 THEN 'reports' ELSE 'default' END, {updated_at}
FROM n
"""


def fill(execute: Callable[[str], None], table: str, rows: int, now: float,
         finished: bool) -> None:
    """``rows`` pending rows due over the last hour, and as many finished ones if
    ``finished`` (in chunks, so neither database holds a million-row CTE at once)."""
    chunk = 100_000
    for start in range(0, rows, chunk):
        count = min(chunk, rows - start)
        execute(FILL.format(rows=count, table=table, prefix=f"p{start}-", state="'pending'",
                            run_at=f"{now - 3600} + (i + {start}) * {3600 / rows}",
                            attempts=0, updated_at="NULL", args=ARGS))
        if finished:
            execute(FILL.format(
                rows=count, table=table, prefix=f"f{start}-",
                state="CASE i % 20 WHEN 7 THEN 'failed' WHEN 9 THEN 'cancelled'"
                      " ELSE 'completed' END",
                run_at=f"{now - 8 * DAY - 60}", attempts=1,
                updated_at=f"{now - 8 * DAY} + (i + {start}) * 0.001", args=ARGS))


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50, p99 and max of ``samples`` (seconds), in milliseconds."""
    ordered = sorted(samples)
    return {"p50": 1e3 * statistics.median(ordered),
            "p99": 1e3 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "max": 1e3 * ordered[-1]}


def show(figures: dict[str, float]) -> str:
    return " / ".join(f"{figures[k]:.2f}" for k in ("p50", "p99", "max")) + " ms"


# -- the stores ------------------------------------------------------------------------------

class Target:
    """Where a table lives: a SQLite file or a PostgreSQL database."""

    def __init__(self, kind: str, location: str, table: str) -> None:
        self.kind, self.location, self.table = kind, location, table

    def open(self) -> durable.Store:
        return durable.open_store(self.location, table=self.table)

    def execute(self, sql: str) -> None:
        if self.kind == "sqlite":
            import sqlite3

            with sqlite3.connect(self.location) as db:
                db.execute(sql)
        else:
            bench_durable._execute(self.location, sql)

    def analyze(self) -> None:
        if self.kind == "postgres":  # as autovacuum does on a table that grew so
            self.execute(f"ANALYZE {self.table}")

    def drop(self) -> None:
        if self.kind == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(self.location + suffix):
                    os.remove(self.location + suffix)
        else:
            self.execute(f"DROP TABLE IF EXISTS {self.table}, {self.table}_meta,"
                         f" {self.table}_series, {self.table}_fires;"
                         f" DROP SEQUENCE IF EXISTS {self.table}_seq")


def targets(kinds: list[str], pg_url: str, folder: str) -> Iterator[Target]:
    for kind in kinds:
        name = "scale_" + uuid.uuid4().hex[:10]
        yield Target(kind, os.path.join(folder, name + ".db") if kind == "sqlite" else pg_url,
                     name)


def made(target: Target, rows: int, finished: bool) -> Target:
    target.open().close()  # the schema, as the store makes it
    started = time.perf_counter()
    fill(target.execute, target.table, rows, time.time(), finished)
    target.analyze()
    print(f"  ({target.kind}: {rows:,} pending{' + as many finished' if finished else ''}"
          f" rows loaded in {time.perf_counter() - started:.0f} s)", flush=True)
    return target


# -- claim and retention ---------------------------------------------------------------------

def claim_latencies(store: durable.Store, claims: int, batch: int,
                    until: Callable[[], bool] | None = None) -> list[float]:
    """Latency of ``claims`` claims of ``batch`` due rows, each then finished (or as many
    as run until ``until()`` says stop, if given)."""
    found = []
    while len(found) < claims or until is not None and not until():
        started = time.perf_counter()
        got = store.claim(time.time(), batch, "bench", 60.0)
        found.append(time.perf_counter() - started)
        if not got:
            raise SystemExit("the table ran out of due rows: raise --rows or lower --claims")
        store.finish([Outcome(c.token, c.task_id, c.version, "completed", None) for c in got])
    return found


def section_claim(args: argparse.Namespace, kinds: list[str], pg_url: str, folder: str) -> None:
    print(f"\n## claim latency: {args.claims:,} claims of {args.batch} rows, each then"
          " finished; p50 / p99 / max")
    base_rows = 2 * (args.claims + 200) * args.batch  # twice what the claims take
    for target in targets(kinds, pg_url, folder):
        small = made(target, base_rows, finished=False)
        store = small.open()
        claim_latencies(store, 200, args.batch)  # warm-up
        base = percentiles(claim_latencies(store, args.claims, args.batch))
        store.close()
        small.drop()
        big = made(Target(target.kind, target.location, target.table), args.rows, True)
        store = big.open()
        claim_latencies(store, 200, args.batch)
        scale = percentiles(claim_latencies(store, args.claims, args.batch))
        store.close()
        print(f"{target.kind:<10} {base_rows:,} pending: {show(base)};"
              f"  {args.rows:,} pending + {args.rows:,} finished: {show(scale)}", flush=True)
        if "retention" in args.only:
            retention_phase(args, big)
        big.drop()


def prune_worker(location: str, table: str, retention_batch: int, rows: int,
                 started: Any, finished: Any) -> None:
    """In a process of its own, as a second worker: a DurableScheduler serving no task
    (an empty registry), so it claims nothing, whose housekeeping deletes the rows
    older than a week as any worker's does; ``finished`` is set once ``rows`` are."""
    store = durable.open_store(location, table=table)
    worker = durable.DurableScheduler(store, max_workers=1, registry=durable.TaskRegistry(),
                                      retention=7 * DAY, retention_batch=retention_batch)
    started.set()
    while worker.stats()["pruned"] < rows:
        time.sleep(0.05)
    finished.set()
    worker.close()
    store.close()


def retention_phase(args: argparse.Namespace, target: Target) -> None:
    """Claims while a second worker's retention deletes every finished row."""
    store = target.open()
    before = percentiles(claim_latencies(store, args.claims, args.batch))
    ctx = multiprocessing.get_context("spawn")
    started, finished = ctx.Event(), ctx.Event()
    pruner = ctx.Process(target=prune_worker, args=(target.location, target.table,
                                                    args.retention_batch, args.rows, started,
                                                    finished))
    pruner.start()
    started.wait()
    began = time.perf_counter()
    during = percentiles(claim_latencies(store, 1, args.batch, until=finished.is_set))
    elapsed = time.perf_counter() - began
    pruner.join()
    store.close()
    print(f"{target.kind:<10} retention: {args.rows:,} finished rows deleted in {elapsed:.1f} s"
          f" ({args.rows / elapsed:,.0f} rows/s, {args.retention_batch:,} per transaction,"
          " the first pass at the worker's first resync, 30 s in);"
          f" claims before: {show(before)}; during: {show(during)};"
          f" p99 during / before: {during['p99'] / before['p99']:.2f}x", flush=True)


# -- drain -------------------------------------------------------------------------------------

def section_drain(args: argparse.Namespace, pg_url: str) -> None:
    logging.getLogger("procrastinate").setLevel(logging.ERROR)
    bench_durable.section_vs(argparse.Namespace(n=args.drain, repeats=args.repeats), pg_url)


# -- sustained load ----------------------------------------------------------------------------

LATE: list[float] = []


@durable.task(name="bench-late")
def late(deferred: float) -> None:
    LATE.append(time.time() - deferred)


def produce(kind: str, url: str, table: str, rate: int, seconds: float,
            ready: Any, sent: Any) -> None:
    """In a process of its own: ``rate`` tasks/s for ``seconds``, a batch every 10 ms,
    each due at once with the wall time it was deferred as its argument."""
    per_tick = max(1, rate // 100)
    if kind == "pysched":
        store = durable.open_store(url, table=table)

        def defer(i: int) -> None:
            now = time.time()
            store.schedule([durable.NewTask(f"s{i}-{j}", now, 0, "bench-late",
                                            encode_args([now], {}))
                            for j in range(per_tick)])
    else:
        app = procrastinate_app(url, table)
        app.open()

        def defer(i: int) -> None:
            now = time.time()
            app.configure_task("late").batch_defer(*({"deferred": now}
                                                     for _ in range(per_tick)))
    ready.wait()
    start = time.perf_counter()
    ticks = int(seconds * 100)
    for i in range(ticks):
        wait = start + i / 100 - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        defer(i)
    sent.value = ticks * per_tick


def procrastinate_app(url: str, schema: str) -> Any:
    import procrastinate

    return procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=url, kwargs={"options": f"-c search_path={schema}"}, min_size=2, max_size=8))


def sustained_pysched(url: str, rate: int, seconds: float) -> tuple[dict[str, float], int, int]:
    table = "sustain_" + uuid.uuid4().hex[:10]
    store = durable.open_store(url, table=table)
    LATE.clear()
    ctx = multiprocessing.get_context("spawn")
    ready, sent = ctx.Event(), ctx.Value("i", 0)
    producer = ctx.Process(target=produce, args=("pysched", url, table, rate, seconds, ready,
                                                 sent))
    producer.start()
    sched = durable.DurableScheduler(store, max_workers=4, retention=None)
    try:
        ready.set()
        producer.join()
        deadline = time.monotonic() + 60
        while len(LATE) < sent.value and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        sched.close()
        store.close()
        Target("postgres", url, table).drop()
    return percentiles(LATE), len(LATE), sent.value


def sustained_procrastinate(url: str, rate: int, seconds: float
                            ) -> tuple[dict[str, float], int, int]:
    schema = "sustain_p_" + uuid.uuid4().hex[:8]
    bench_durable._execute(url, f"CREATE SCHEMA {schema}")
    app = procrastinate_app(url, schema)
    lateness: list[float] = []

    @app.task(name="late")
    async def late_p(deferred: float) -> None:
        lateness.append(time.time() - deferred)

    ctx = multiprocessing.get_context("spawn")
    ready, sent = ctx.Event(), ctx.Value("i", 0)

    async def run() -> None:
        async with app.open_async():
            await app.schema_manager.apply_schema_async()
            producer = ctx.Process(target=produce, args=("procrastinate", url, schema, rate,
                                                         seconds, ready, sent))
            producer.start()
            worker = asyncio.create_task(app.run_worker_async(
                concurrency=4, install_signal_handlers=False))
            ready.set()
            while producer.is_alive():
                await asyncio.sleep(0.1)
            deadline = time.monotonic() + 60
            while len(lateness) < sent.value and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            worker.cancel()
            with suppress(asyncio.CancelledError):
                await worker

    try:
        asyncio.run(run())
    finally:
        bench_durable._execute(url, f"DROP SCHEMA {schema} CASCADE")
    return percentiles(lateness), len(lateness), sent.value


def section_sustained(args: argparse.Namespace, pg_url: str) -> None:
    logging.getLogger("procrastinate").setLevel(logging.ERROR)
    print(f"\n## sustained: a producer process defers {args.rate:,} tasks/s for {args.seconds:.0f}"
          " s (a batch every 10 ms), a worker runs them 4 at once; start lateness"
          " p50 / p99 / max, medians of the turns")
    contenders = {"pysched, 4 workers": sustained_pysched,
                  "procrastinate, concurrency 4": sustained_procrastinate}
    runs: dict[str, list[tuple[dict[str, float], int, int]]] = {k: [] for k in contenders}
    for turn in range(args.turns):
        order = list(contenders) if turn % 2 == 0 else list(reversed(contenders))
        for name in order:
            runs[name].append(contenders[name](pg_url, args.rate, args.seconds))
            figures, ran, sent = runs[name][-1]
            print(f"  turn {turn + 1}, {name}: {show(figures)}, {ran:,} of {sent:,} ran",
                  flush=True)
    for name, found in runs.items():
        median = {k: statistics.median(f[k] for f, _, _ in found) for k in ("p50", "p99", "max")}
        print(f"{name:<30} {show(median)}")


# -- the server --------------------------------------------------------------------------------

@contextmanager
def postgres(url: str | None) -> Iterator[str]:
    """``url``, or a private server of our own, stopped at the end."""
    if url:
        yield url
        return
    from support import postgres_server

    try:
        yield postgres_server.url()
    finally:
        postgres_server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--claims", type=int, default=2_000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--retention-batch", type=int, default=1_000)
    parser.add_argument("--drain", type=int, default=20_000, help="tasks drained per run")
    parser.add_argument("--repeats", type=int, default=3, help="turns of the drain section")
    parser.add_argument("--rate", type=int, default=2_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--turns", type=int, default=1, help="turns of the sustained section")
    parser.add_argument("--stores", default="postgres,sqlite")
    parser.add_argument("--postgres", default=os.environ.get("PYSCHED_TEST_POSTGRES_URL"))
    parser.add_argument("--only", default="claim,retention,drain,sustained")
    args = parser.parse_args()
    args.only = set(args.only.split(","))
    print(f"pysched {pysched.__version__} ({pysched.IMPLEMENTATION} core), Python"
          f" {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average"
          f" {os.getloadavg()[0]:.1f}")
    with postgres(args.postgres) as url, tempfile.TemporaryDirectory() as folder:
        print(f"PostgreSQL: {bench_durable.server_settings(url)}")
        if args.only & {"claim", "retention"}:
            section_claim(args, args.stores.split(","), url, folder)
        if "drain" in args.only:
            section_drain(args, url)
        if "sustained" in args.only:
            section_sustained(args, url)


if __name__ == "__main__":
    main()
