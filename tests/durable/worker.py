"""A worker process for the crash tests: a DurableScheduler running ``record`` tasks.

Usage: worker.py STORE TABLE OWNER LOG [--lease S] [--heartbeat S] [--workers N]
[--prefetch N] [--pause S] [--exit-when-done] [--tolerate-store-errors]. Prints
``ready`` once its scheduler has started; with --exit-when-done it closes and
exits 0 once the store holds rows but none pending or running, otherwise it runs
until killed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import harness  # noqa: E402 - registers "record"

from pysched.durable import DurableScheduler, open_store  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("store", "table", "owner", "log"):
        parser.add_argument(name)
    parser.add_argument("--lease", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--prefetch", type=int, default=4)
    parser.add_argument("--heartbeat", type=float, default=None)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--exit-when-done", action="store_true")
    # The database restarts during this run: store errors are expected, not a failure.
    parser.add_argument("--tolerate-store-errors", action="store_true")
    opts = parser.parse_args()
    harness.set_log(opts.log, opts.owner, opts.pause)
    store = open_store(opts.store, table=opts.table)
    sched = DurableScheduler(store, owner=opts.owner, max_workers=opts.workers,
                             prefetch=opts.prefetch, lease=opts.lease,
                             heartbeat=opts.heartbeat or min(opts.lease / 4, 1.0),
                             poll_interval=0.05,
                             resync_interval=2.0)
    print("ready", flush=True)
    while True:
        time.sleep(0.05)
        try:
            counts = store.counts()
        except Exception:
            if not opts.tolerate_store_errors:
                raise
            continue
        # An empty table means the driver has not scheduled yet: keep waiting.
        if opts.exit_when_done and counts and not counts.get("pending") \
                and not counts.get("running"):
            break
    sched.close()
    store.close()
    stats = sched.stats()
    print(" ".join(f"{k}={v}" for k, v in stats.items()), file=sys.stderr)
    return 0 if not stats["store_errors"] or opts.tolerate_store_errors else 1


if __name__ == "__main__":
    sys.exit(main())
