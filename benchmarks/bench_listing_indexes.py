"""What each index of a task table costs the workers' writes, on SQLite.

Per set of indexes, a fresh SQLite store (``open_store``: the stores' own
indexes), then that set made or dropped on its file, then n tasks scheduled,
claimed and finished (batches of 500, 100 and 100) in this one thread; the
process's CPU time per task. The sets take turns (the order alternates), one
warm-up round, then the median of each and, paired within each round, the
median and quartiles of its difference from the stores' set:

- the stores' set: ``_due``, ``_lease``, ``_owner``, ``_finished``;
- without ``_finished``, and with it written ``state IN (...)`` as before
  (SQLite rebuilds an IN list's lookup table each time it evaluates a
  partial index's WHERE on a written row);
- each of the listing's indexes added (``LISTING_INDEXES``: built at a
  table's first listing), all four, and all four with the IN ``_finished``
  (the set every store made before).

Run: ``nice -n -10 python benchmarks/bench_listing_indexes.py [--n 5000] [--rounds 15]``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time

from pysched.durable import NewTask, Outcome, open_store
from pysched.durable.listing_sql import FINISHED_AT, LISTING_INDEXES, index_statements

TABLE = "pysched_tasks"
ARGS = '{"args":[],"kwargs":{}}'
FINISHED_IN = {"_finished": f"({FINISHED_AT}) WHERE state IN ('cancelled', 'completed',"
                            " 'error', 'failed')"}
DROP_FINISHED = f'DROP INDEX "{TABLE}_finished"'


def index_sets() -> dict[str, list[str]]:
    """The statements that turn the stores' set into each set measured, by name."""
    listing = index_statements(TABLE, LISTING_INDEXES)
    with_in = [DROP_FINISHED, *index_statements(TABLE, FINISHED_IN)]
    return {"the stores' set": [],
            "without _finished": [DROP_FINISHED],
            "_finished written with IN": with_in,
            **{f"+ {suffix}": index_statements(TABLE, {suffix: definition})
               for suffix, definition in LISTING_INDEXES.items()},
            "+ all four listing indexes": listing,
            "the set before (IN, all four)": with_in + listing}


def one_run(path: str, statements: list[str], n: int) -> float:
    """Microseconds of CPU per task: n scheduled, claimed and finished on a fresh file."""
    store = open_store(path)  # opened once: opened again, it would make its set again
    try:
        with sqlite3.connect(path) as db:
            for statement in statements:
                db.execute(statement)
        started = time.process_time()
        for i in range(0, n, 500):
            store.schedule([NewTask(f"w{j}", 1.0 + j, 0, "job", ARGS)
                            for j in range(i, min(n, i + 500))])
        while claims := store.claim(1e12, 100, "bench", 60.0):
            store.finish([Outcome(c.token, c.task_id, c.version, "completed", None)
                          for c in claims])
        return (time.process_time() - started) / n * 1e6
    finally:
        store.close()


def quartiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    return ordered[len(ordered) // 4], statistics.median(ordered), ordered[3 * len(ordered) // 4]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=5000, help="tasks per run")
    parser.add_argument("--rounds", type=int, default=15, help="rounds after the warm-up")
    args = parser.parse_args()
    sets = index_sets()
    names = list(sets)
    cost: dict[str, list[float]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.rounds + 1):
            for k, name in (enumerate(names) if r % 2 else reversed(list(enumerate(names)))):
                us = one_run(os.path.join(folder, f"{r}-{k}.db"), sets[name], args.n)
                if r:
                    cost[name].append(us)
    base = cost[names[0]]
    print(f"SQLite {sqlite3.sqlite_version}: {args.n:,} tasks scheduled, claimed and finished,"
          f" {args.rounds} rounds in turns; CPU per task (median), and its difference from"
          " the stores' set paired within each round: median (quartiles)")
    for name in names:
        low, mid, high = quartiles([a - b for a, b in zip(cost[name], base, strict=True)])
        print(f"  {name:<30} {statistics.median(cost[name]):7.1f} us  {mid:+6.1f} us"
              f" ({low:+.1f} to {high:+.1f})")


if __name__ == "__main__":
    main()
