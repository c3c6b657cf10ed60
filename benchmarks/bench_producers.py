"""Producers: ``schedule_in()`` one call at a time from 1 and 8 threads, and bulk inserts.

Each build of pysched named on the command line (``--build NAME=PATH``, the
folder holding its ``pysched`` package; this checkout by default) runs in a
subprocess of its own, in turns: every turn runs each build once, the order
alternating, and the medians over the turns are printed side by side.

Per store (SQLite in a temporary file, WAL, ``synchronous=NORMAL``; PostgreSQL
on a private server this script starts on a free loopback port, with fsync off,
and with ``--fsync`` also on), a fresh table, ``DurableScheduler(store,
max_workers=0)`` (a producer: nothing runs), no-op tasks due in an hour:

- ``1 thread`` and ``8 threads``: each thread calls ``schedule_in`` with a new
  task id as fast as it can for ``--seconds``; schedules/s over all threads,
  p50 and p99 of the call's latency;
- ``8 paced``: the 8 threads together call at ``--rate`` per second, each on a
  fixed timetable (a late call is made at once, and its latency counts from
  when it was made): p50 and p99 latency;
- ``bulk``: one ``schedule_many`` of ``--bulk`` new rows: rows/s.

Run: ``nice -n -10 python benchmarks/bench_producers.py --turns 3
--build main=/path/to/main --build this=.``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


# -- one build, one measurement (the subprocess) ---------------------------------------------

def _producers(s: Any, noop: Any, threads: int, seconds: float, rate: float | None
               ) -> dict[str, float]:
    """Threads calling ``s.schedule_in`` for ``seconds``; paced at ``rate``/s in all if given."""
    latencies: list[list[float]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads + 1)
    stop_at = [0.0]
    run = uuid.uuid4().hex[:8]

    def produce(k: int) -> None:
        mine = latencies[k]
        clock = time.perf_counter
        start.wait()
        began = clock()
        i = 0
        while True:
            if rate is not None:  # this thread's timetable: every threads/rate seconds
                due = began + i * threads / rate + k / rate
                now = clock()
                if due > now:
                    time.sleep(due - now)
            t0 = clock()
            if t0 >= stop_at[0]:
                return
            s.schedule_in(f"{run}-{k}-{i}", 3600.0, 0, noop)
            mine.append(clock() - t0)
            i += 1

    workers = [threading.Thread(target=produce, args=(k,)) for k in range(threads)]
    for worker in workers:
        worker.start()
    stop_at[0] = time.perf_counter() + seconds
    start.wait()
    began = time.perf_counter()
    for worker in workers:
        worker.join()
    took = time.perf_counter() - began
    every = sorted(x for mine in latencies for x in mine)
    return {"rate": len(every) / took, "p50_ms": 1e3 * every[len(every) // 2],
            "p99_ms": 1e3 * every[int(len(every) * 0.99)]}


def measure(store_spec: str, seconds: float, rate: float, bulk: int) -> dict[str, Any]:
    """One build's figures on one store (run in the subprocess, pysched on sys.path)."""
    from pysched import durable
    from pysched.durable import DurableScheduler

    @durable.task(name="bench-producers-noop")
    def noop() -> None:
        pass

    kind, _, where = store_spec.partition(":")
    table = f"p_{uuid.uuid4().hex[:10]}"
    if kind == "sqlite":
        store: Any = durable.SQLiteStore(os.path.join(where, f"{table}.db"), table=table)
    else:
        store = durable.PostgresStore(where, table=table)
    s = DurableScheduler(store, max_workers=0)
    out: dict[str, Any] = {}
    try:
        _producers(s, noop, 8, min(seconds, 0.5), None)  # warm-up: connections, caches
        out["1 thread"] = _producers(s, noop, 1, seconds, None)
        out["8 threads"] = _producers(s, noop, 8, seconds, None)
        out["8 paced"] = _producers(s, noop, 8, seconds, rate)
        if bulk:
            run = uuid.uuid4().hex[:8]
            due = s.clock() + 3600.0
            items = [(f"{run}-{i}", due, 0, noop) for i in range(bulk)]
            t0 = time.perf_counter()
            s.schedule_many(items)
            out["bulk"] = {"rate": bulk / (time.perf_counter() - t0)}
    except BaseException:
        s.close()
        raise
    # Not closed: a producer of a build before the bounded watch polls the rows of every
    # Future it watches, and closing waits for that poll of 100,000 rows; the table is
    # thrown away.
    return out


# -- the private PostgreSQL server -----------------------------------------------------------

class PrivateServer:
    """A PostgreSQL server in a temporary folder on a free loopback port (as the tests'
    support/postgres_server.py starts one), with fsync on or off."""

    def __init__(self, fsync: bool) -> None:
        from support import postgres_server

        folder_bin = postgres_server.bin_dir()
        if folder_bin is None:
            raise SystemExit("PostgreSQL is not installed here")
        self.bin = folder_bin
        self.folder = tempfile.mkdtemp(prefix="pysched-bench-pg-")
        self.run_as: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root
            import pwd

            owner = pwd.getpwnam("postgres")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
            self.run_as = ["runuser", "-u", "postgres", "--"]
        data = os.path.join(self.folder, "data")
        subprocess.run([*self.run_as, os.path.join(self.bin, "initdb"), "-D", data, "-U",
                        "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
                       check=True, capture_output=True)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        durability = ("" if fsync else
                      " -c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {self.folder}{durability}"
        subprocess.run(self._ctl("-l", os.path.join(self.folder, "log"), "-w", "-o", options,
                                 "start"), check=True, capture_output=True)
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def _ctl(self, *args: str) -> list[str]:
        return [*self.run_as, os.path.join(self.bin, "pg_ctl"), "-D",
                os.path.join(self.folder, "data"), *args]

    def stop(self) -> None:
        subprocess.run(self._ctl("-m", "immediate", "-w", "stop"), capture_output=True)
        shutil.rmtree(self.folder, ignore_errors=True)


# -- the driver ----------------------------------------------------------------------------

def run_build(path: str, store_spec: str, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(path)}
    done = subprocess.run(
        [sys.executable, __file__, "--measure", store_spec, "--seconds", str(args.seconds),
         "--rate", str(args.rate), "--bulk", str(args.bulk if not store_spec.startswith("sqlite") or
                                                 args.bulk_sqlite else 0)],
        env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise SystemExit(f"build {path} failed on {store_spec}:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", action="append", default=[],
                        help="NAME=PATH of a checkout (its folder holding pysched)")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--bulk", type=int, default=100_000)
    parser.add_argument("--bulk-sqlite", action="store_true", help="bulk on SQLite too")
    parser.add_argument("--fsync", action="store_true", help="PostgreSQL with fsync on too")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--json", help="write the raw figures here")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.seconds, args.rate, args.bulk)), flush=True)
        os._exit(0)  # see measure: the scheduler is left open
    builds = dict(b.split("=", 1) for b in args.build) or {"this": str(HERE.parent)}
    servers: dict[str, PrivateServer] = {}
    folder = tempfile.mkdtemp(prefix="pysched-bench-producers-")
    try:
        specs: dict[str, str] = {}
        for store in args.stores.split(","):
            if store == "sqlite":
                specs["SQLite"] = f"sqlite:{folder}"
            elif store == "postgres":
                servers["off"] = PrivateServer(fsync=False)
                specs["PostgreSQL fsync off"] = f"postgres:{servers['off'].url}"
                if args.fsync:
                    servers["on"] = PrivateServer(fsync=True)
                    specs["PostgreSQL fsync on"] = f"postgres:{servers['on'].url}"
        results: dict[str, dict[str, list[dict[str, Any]]]] = {
            label: {name: [] for name in builds} for label in specs}
        for turn in range(args.turns):
            order = list(builds) if turn % 2 == 0 else list(reversed(builds))
            for label, spec in specs.items():
                for name in order:
                    results[label][name].append(run_build(builds[name], spec, args))
            print(f"turn {turn + 1} of {args.turns} done", file=sys.stderr)
        report(results)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def report(results: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    """Medians over the turns, one line per store, case and build."""
    print(f"{'store':<22} {'case':<10} {'build':<8} {'calls/s':>10} {'p50 ms':>8}"
          f" {'p99 ms':>8}")
    for label, by_build in results.items():
        cases = list(next(iter(by_build.values()))[0])
        for case in cases:
            for name, turns in by_build.items():
                figures = [t[case] for t in turns if case in t]
                if not figures:
                    continue
                rate = statistics.median(f["rate"] for f in figures)
                p50 = statistics.median(f.get("p50_ms", float("nan")) for f in figures)
                p99 = statistics.median(f.get("p99_ms", float("nan")) for f in figures)
                print(f"{label:<22} {case:<10} {name:<8} {rate:>10,.0f} {p50:>8.2f}"
                      f" {p99:>8.2f}")


if __name__ == "__main__":
    main()
