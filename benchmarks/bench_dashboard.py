"""The dashboard's speed on PostgreSQL: its pages served over HTTP from 1,000,000 rows.

A private PostgreSQL server (initdb in a temporary folder, a free loopback
port, stopped at the end; or --postgres URL) holds a table of --rows task rows
made with ``generate_series`` (states, queues, task names and due times spread
as a busy schedule's: most rows finished over the last 30 days, the rest due
over the next week, an error with a traceback on each failed row) and 100
series with claimed fire times; a second table holds 1,000 rows alike. The
store's own ``PostgresStore`` makes the tables and their indexes; the load runs
without the indexes, which are built afterwards, then the tables are
VACUUM ANALYZEd as autovacuum would have.

uvicorn serves ``pysched.web.create_app`` on a loopback port in this process;
a keep-alive HTTP client asks for each page: the overview, a first page of
pending tasks, a page of pending tasks 500,000 rows in (by its cursor), a page
of every state, the failed page, and one task's detail. One warm-up, then
--repeats requests each; min / median / max in milliseconds, for both tables.
The budgets: the overview and a tasks page at most 150 ms, a task's detail at
most 50 ms (medians). Then EXPLAIN (ANALYZE, BUFFERS) of each statement the
pages send, showing the index each one scans.

``--write-cost N`` measures instead what the listing's indexes cost the
writes of a worker: N tasks scheduled, claimed and finished on a table with
them, on one with the previous set of listing indexes, and on one without, in
turns, as CPU time per task (this process's and its PostgreSQL backend's), on
PostgreSQL and on SQLite.

Run: ``python benchmarks/bench_dashboard.py [--rows 1000000] [--repeats 15]
[--postgres URL [--reuse]] [--plans]`` or ``... --write-cost 5000 [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import http.client
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from urllib.parse import quote

import psycopg
import uvicorn

from pysched.durable import PostgresStore
from pysched.durable.listing import Listing, encode_cursor
from pysched.durable.listing_sql import LISTING_INDEXES, index_statements
from pysched.durable.reading import connect
from pysched.web import create_app

BUDGET_MS = {"overview": 150.0, "tasks": 150.0, "tasks deep": 150.0, "tasks all": 150.0,
             "failed": 150.0, "task detail": 50.0}
TRACEBACK = ("ValueError: the report for customer 4711 has no rows\\nTraceback (most recent"
             " call last):\\n  File \\\"/srv/app/tasks.py\\\", line 88, in report\\n    rows ="
             " fetch(customer)\\n  File \\\"/srv/app/db.py\\\", line 12, in fetch\\n    raise"
             " ValueError(...)\\nValueError: the report for customer 4711 has no rows\\n")


@contextlib.contextmanager
def private_postgres() -> Iterator[str]:
    """A PostgreSQL server of our own in a temporary folder; its URL."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: [
        int(x) for x in p.split("/")[-2].split(".")])
    if not bins:
        raise SystemExit("no PostgreSQL here: apt-get install postgresql, or pass --postgres")
    pg_bin = bins[-1]
    folder = tempfile.mkdtemp(prefix="pysched-bench-pg.")
    run_as: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        subprocess.run(["chown", "postgres:", folder], check=True)
        run_as = ["runuser", "-u", "postgres", "--"]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    data = f"{folder}/data"
    subprocess.run([*run_as, f"{pg_bin}/initdb", "-D", data, "-U", "postgres", "--auth=trust",
                    "-E", "UTF8"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*run_as, f"{pg_bin}/pg_ctl", "-D", data, "-l", f"{folder}/log", "-w",
                    "-t", "60", "-o", f"-c listen_addresses=127.0.0.1 -p {port} -k {folder}"
                    " -c fsync=off -c shared_buffers=256MB", "start"], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*run_as, f"{pg_bin}/pg_ctl", "-D", data, "-m", "fast", "stop"],
                       stdout=subprocess.DEVNULL, check=False)
        subprocess.run(["rm", "-rf", folder], check=False)


def load(url: str, table: str, rows: int) -> None:
    """Make ``table`` with ``rows`` task rows and 100 series, its indexes built after."""
    PostgresStore(url, table=table).close()  # the table, its series tables, every index
    with psycopg.connect(url, autocommit=True) as db:
        indexes = [r[0] for r in db.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexname <> %s",
            (table, f"{table}_pkey")).fetchall()]
        for index in indexes:
            db.execute(f'DROP INDEX "{index}"')
        started = time.perf_counter()
        # i picks the state: 70% completed, 16% pending, 6% failed, 5% cancelled, 3% error,
        # and 1 row in 2,000 running (8 workers holding 64 leases each would hold 512).
        # Finished rows were due over the last 30 days and finished 0 to 60 s later;
        # pending ones are due over the next 7 days.
        db.execute(f"""
            INSERT INTO {table} (task_id, version, state, run_at, priority, ref, args,
                                 attempts, seq, fmt, error, lease_owner, lease_token,
                                 lease_expires, queue, updated_at)
            SELECT 'task-' || i, 1, s.state,
                   CASE WHEN s.state IN ('pending', 'running') THEN now_s + (i % 604800)
                        ELSE now_s - (i % 2592000) END,
                   i % 10, 'app.tasks:job' || (i % 20),
                   '{{"args":[' || i || ',"customer"],"kwargs":{{"retry":true}}}}',
                   CASE WHEN s.state = 'pending' THEN 0 ELSE 1 + i % 3 END, i, 1,
                   CASE WHEN s.state IN ('failed', 'error') THEN E'{TRACEBACK}' END,
                   CASE WHEN s.state = 'running' THEN 'worker-' || (i % 8) END,
                   CASE WHEN s.state = 'running'
                        THEN 'worker-' || (i % 8) || ':x:1:1:task-' || i END,
                   CASE WHEN s.state = 'running' THEN now_s + 30 END,
                   'queue-' || (i % 5),
                   CASE WHEN s.state IN ('completed', 'failed', 'error', 'cancelled')
                        THEN now_s - (i % 2592000) + (i % 60) END
            FROM generate_series(1, {rows}) AS i,
                 LATERAL (SELECT extract(epoch from now())::float8 AS now_s) AS n,
                 LATERAL (SELECT CASE WHEN i % 2000 = 1999 THEN 'running'
                                      WHEN i % 100 < 70 THEN 'completed'
                                      WHEN i % 100 < 76 THEN 'failed'
                                      WHEN i % 100 < 81 THEN 'cancelled'
                                      WHEN i % 100 < 84 THEN 'error'
                                      ELSE 'pending' END AS state) AS s""")
        db.execute(f"""
            INSERT INTO {table}_series (series_id, generation, state, spec, ref, args,
                                        priority, queue, created)
            SELECT 'series-' || k, 1, CASE WHEN k % 10 = 0 THEN 'paused' ELSE 'active' END,
                   '{{"kind":"every","seconds":60.0,"start":1700000000.0,"misfire_grace":1.0,'
                   || '"catch_up":"latest","overlap":"skip","on_error":"continue",'
                   || '"max_catch_up":100,"fmt":1}}',
                   'app.tasks:job1', '{{"args":[],"kwargs":{{}}}}', 0, 'queue-0', 1700000000.0
            FROM generate_series(1, 100) AS k""")
        db.execute(f"""
            INSERT INTO {table}_fires (series_id, generation, fire_time, state, attempts)
            SELECT 'series-' || k, 1, 1700000000.0 + 60 * f,
                   CASE WHEN f % 17 = 0 THEN 'failed' ELSE 'done' END, 1
            FROM generate_series(1, 100) AS k, generate_series(1, 500) AS f""")
        loaded = time.perf_counter() - started
    PostgresStore(url, table=table).close()  # builds the indexes again
    with psycopg.connect(url, autocommit=True) as db:
        for statement in index_statements(table, LISTING_INDEXES):  # as a first listing does
            db.execute(statement)
        for name in (table, f"{table}_series", f"{table}_fires"):
            db.execute(f"VACUUM ANALYZE {name}")
    print(f"  {table}: {rows:,} rows loaded in {loaded:.1f} s, indexes built,"
          f" vacuumed and analysed in {time.perf_counter() - started - loaded:.1f} s")


class Served:
    """uvicorn serving the dashboard of ``table`` on a free loopback port, in a thread."""

    def __init__(self, url: str, table: str) -> None:
        self.app = create_app(url, table=table)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]},
                                       daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)
        self.client = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def get(self, path: str) -> float:
        """Seconds to GET ``path`` and read the whole page (status 200 checked)."""
        started = time.perf_counter()
        self.client.request("GET", path)
        response = self.client.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - started
        if response.status != 200:
            raise AssertionError(f"{path}: {response.status} {body[:300]!r}")
        return elapsed

    def close(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(30)
        self.app.state.dashboard.close()


def pages(url: str, table: str) -> dict[str, str]:
    """The pages measured, with a cursor halfway down the pending rows."""
    db = connect(url)
    try:
        listing = Listing(db, table)
        count = int(db.query(f"SELECT count(*) FROM {table} WHERE state = 'pending'")[0][0])
        middle = db.query(f"SELECT run_at, task_id FROM {table} WHERE state = 'pending'"
                          f" ORDER BY run_at, task_id OFFSET {count // 2} LIMIT 1")
        some = listing.tasks(states=["failed"], limit=1).tasks[0].task_id
    finally:
        db.close()
    deep = encode_cursor(*middle[0]) if middle else ""
    return {"overview": "/", "tasks": "/tasks?state=pending",
            "tasks deep": f"/tasks?state=pending&after={deep}", "tasks all": "/tasks",
            "failed": "/failed", "task detail": f"/task?id={quote(some)}"}


def measure(url: str, table: str, repeats: int) -> dict[str, list[float]]:
    served = Served(url, table)
    try:
        paths = pages(url, table)
        times: dict[str, list[float]] = {name: [] for name in paths}
        for path in paths.values():  # one warm-up each: connections, plans, caches
            served.get(path)
        for _ in range(repeats):  # in turns, so a slow moment of the machine hits all alike
            for name, path in paths.items():
                times[name].append(served.get(path) * 1000)
        return times
    finally:
        served.close()


def explain(url: str, table: str) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) of each statement the pages send."""
    db = connect(url)
    listing = Listing(db, table)
    sql = listing.sql
    now = db.now()
    states = [r[0] for r in db.query(sql.states([]), {"limit": 64})]
    statements = {
        "overview: states present": (sql.states([]), {"limit": 64}),
        "overview: rows of each state, counted up to 2,000": (
            sql.capped_counts(len(states), False),
            {**{f"state{i}": s for i, s in enumerate(states)}, "cap": 2_001}),
        "overview: the planner's estimate": (sql.state_estimate, {"table": table}),
        "overview: rows of each queue's states, counted up to 200": (
            sql.capped_counts(len(states), True),
            {**{f"state{i}": s for i, s in enumerate(states)},
             **{f"queue{i}": "queue-1" for i in range(len(states))}, "cap": 201}),
        "overview: the last hour, per 5 minutes and state": (sql.finished,
                                                              {"since": now - 3600}),
        "overview: workers": (sql.task_leases, {}),
        "tasks: a page of pending, after a cursor": (
            sql.tasks_page([], 1, True, False),
            {"state0": "pending", "run_at": now + 300000, "task_id": "task-5", "limit": 51}),
        "tasks: a page of every state": (
            sql.tasks_page([], len(states), False, False),
            {**{f"state{i}": s for i, s in enumerate(states)}, "limit": 51}),
        "tasks: a queue's failed, newest first": (
            sql.tasks_page(["queue"], 1, False, True),
            {"state0": "failed", "queue": "queue-3", "limit": 51}),
        "failed: waiting for a retry": (sql.retrying_page(False), {"limit": 51}),
        "task detail": (sql.task, {"task_id": "task-4711"}),
        "series: a page": (sql.series_page, {"after": "", "limit": 51, "all": 1}),
    }
    for title, (statement, params) in statements.items():
        plan = db.query("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement, params)
        print(f"\n-- {title}")
        print("\n".join("   " + r[0] for r in plan))
    db.close()


def write_cost(url: str, n: int, rounds: int) -> None:
    """What the listing's indexes cost the writes a worker makes: n tasks scheduled, claimed
    and finished (batches of 500, 100 and 100) on a table with them and one without, in
    turns. Measured as CPU time per task, this process's plus its PostgreSQL backend's
    (read from /proc): unlike elapsed time, it holds still on a machine others load."""
    from pysched.durable import NewTask, Outcome, open_store

    def one_round(target: str, table: str, label: str) -> float:
        store = open_store(target, table=table)
        try:
            conn = store._conns.get()  # type: ignore[attr-defined]
            if label == "with":  # a table once listed; a store makes none of them
                for statement in index_statements(table, LISTING_INDEXES):
                    conn.execute(statement)
            if label == "previous":
                for statement in previous_index_statements(table):
                    conn.execute(statement)
            backend = getattr(getattr(conn, "info", None), "backend_pid", None)
            started = cpu_seconds(backend)
            for i in range(0, n, 500):
                store.schedule([NewTask(f"w{j}", 1.0 + j, 0, "job", '{"args":[],"kwargs":{}}')
                                for j in range(i, min(n, i + 500))])
            while True:
                claims = store.claim(1e12, 100, "bench", 60.0)
                if not claims:
                    break
                store.finish([Outcome(c.token, c.task_id, c.version, "completed", None)
                              for c in claims])
            return (cpu_seconds(backend) - started) / n * 1e6
        finally:
            store.close()

    folder = tempfile.mkdtemp(prefix="pysched-bench-write.")
    for kind in ("PostgreSQL", "SQLite"):
        cost: dict[str, list[float]] = {"with": [], "without": [], "previous": []}
        for r in range(rounds + 1):  # the first round of each is a warm-up
            labels = list(cost) if r % 2 else list(reversed(cost))
            for label in labels:
                table = f"bench_write_{label}_{r}"
                target = url if kind == "PostgreSQL" else f"{folder}/{table}.db"
                us = one_round(target, table, label)
                if kind == "PostgreSQL":
                    with psycopg.connect(url, autocommit=True) as db:
                        for suffix in ("", "_meta", "_series", "_fires"):
                            db.execute(f"DROP TABLE IF EXISTS {table}{suffix}")
                        db.execute(f"DROP SEQUENCE IF EXISTS {table}_seq")
                if r:
                    cost[label].append(us)
        with_, without, previous = (statistics.median(cost[k])
                                    for k in ("with", "without", "previous"))
        print(f"  {kind}: {n:,} tasks scheduled, claimed and finished: {with_:.1f} us of CPU"
              f" a task with the listing's indexes ({with_ / without:.2f}x), {previous:.1f}"
              f" with the previous ones ({previous / without:.2f}x), {without:.1f} without;"
              f" medians of {rounds} rounds in turns")
    subprocess.run(["rm", "-rf", folder], check=False)


def cpu_seconds(backend: int | None) -> float:
    """This process's CPU time, plus the PostgreSQL backend ``backend``'s if given."""
    total = time.process_time()
    if backend is not None:
        with open(f"/proc/{backend}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def previous_index_statements(table: str) -> list[str]:
    """The listing's indexes before running rows had one of their own and retention an
    index of finished rows: what ``--write-cost`` compares the present ones with."""
    return [f'CREATE INDEX "{table}_old_state" ON "{table}" (state, run_at, task_id)',
            f'CREATE INDEX "{table}_old_queue" ON "{table}" (queue, state, run_at, task_id)',
            f'CREATE INDEX "{table}_old_ref" ON "{table}" (ref, state, run_at, task_id)',
            f'CREATE INDEX "{table}_old_updated" ON "{table}" (updated_at)'
            " WHERE updated_at IS NOT NULL",
            f'CREATE INDEX "{table}_old_retrying" ON "{table}" (run_at, task_id)'
            " WHERE state = 'pending' AND error IS NOT NULL"]


def report(times: dict[str, dict[str, list[float]]]) -> bool:
    ok = True
    names = list(next(iter(times.values())))
    print(f"\n{'page':<14}" + "".join(f"{label:>30}" for label in times) + f"{'budget':>10}")
    for name in names:
        cells = []
        for label in times:
            t = times[label][name]
            cells.append(f"{min(t):8.1f} {statistics.median(t):8.1f} {max(t):8.1f} ms")
        median = statistics.median(times[list(times)[-1]][name])
        verdict = "ok" if median <= BUDGET_MS[name] else "OVER"
        ok = ok and verdict == "ok"
        print(f"{name:<14}" + "".join(f"{c:>30}" for c in cells)
              + f"{BUDGET_MS[name]:>7.0f} ms {verdict}")
    print("(each cell: min median max of the requests; budgets apply to the largest table)")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--postgres", help="use this server instead of a private one")
    parser.add_argument("--plans", action="store_true", help="print the EXPLAIN plans")
    parser.add_argument("--write-cost", type=int, metavar="N", default=0,
                        help="instead: what the listing's indexes cost N tasks' writes")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of --write-cost")
    parser.add_argument("--reuse", action="store_true",
                        help="with --postgres: keep tables a run before loaded (and leave them)")
    args = parser.parse_args()
    context = (contextlib.nullcontext(args.postgres) if args.postgres
               else private_postgres())
    with context as url:
        if args.write_cost:
            write_cost(url, args.write_cost, args.rounds)
            return 0
        small, large = "bench_dash_small", f"bench_dash_{args.rows}"
        with psycopg.connect(url, autocommit=True) as db:
            version = db.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
            present = {t for t in (small, large) if db.execute(
                "SELECT to_regclass(%s)", (t,)).fetchone()[0] is not None}  # type: ignore[index]
            for t in (small, large):
                if args.reuse and t in present:
                    continue
                for suffix in ("", "_meta", "_series", "_fires", "_series_notes"):
                    db.execute(f"DROP TABLE IF EXISTS {t}{suffix}")
                db.execute(f"DROP SEQUENCE IF EXISTS {t}_seq")
        print(f"PostgreSQL {version}; Python {sys.version.split()[0]}; load average"
              f" {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; loading:")
        for t, n in ((small, 1_000), (large, args.rows)):
            if args.reuse and t in present:
                print(f"  {t}: kept from a run before")
            else:
                load(url, t, n)
        times = {f"{1_000:,} rows": measure(url, small, args.repeats),
                 f"{args.rows:,} rows": measure(url, large, args.repeats)}
        ok = report(times)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        if args.plans:
            explain(url, large)
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
