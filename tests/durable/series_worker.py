"""A worker process for the durable series tests: a DurableScheduler running the shared series.

Usage: series_worker.py STORE TABLE OUT [--lease S] [--run S]. Each run of the
``series-record`` task appends ``start FIRE PID T`` before and ``end FIRE PID T``
after a pause of ``--run`` seconds to OUT/runs.log (T: wall time; one short
O_APPEND write per line, so lines of processes never mix); each series event
is a JSON line in OUT/events.log. Prints ``ready`` once started; SIGTERM
closes the scheduler and exits 0; SIGKILL is the crash under test.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any

from pysched import durable
from pysched.calendar import Event

OUT = {"dir": "", "run": 0.0}


def _append(name: str, line: str) -> None:
    fd = os.open(os.path.join(OUT["dir"], name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@durable.task(name="series-record")
def record() -> None:
    task = durable.current_task()
    assert task is not None
    _append("runs.log", f"start {task.run_at!r} {os.getpid()} {time.time()!r}\n")
    time.sleep(OUT["run"])
    _append("runs.log", f"end {task.run_at!r} {os.getpid()} {time.time()!r}\n")


def log_event(event: Event) -> None:
    fields: dict[str, Any] = {"pid": os.getpid(), "series": event.series, "kind": event.kind,
                              "reason": event.reason, "fire_time": event.fire_time,
                              "last_fire_time": event.last_fire_time, "count": event.count}
    _append("events.log", json.dumps(fields) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("store", "table", "out"):
        parser.add_argument(name)
    parser.add_argument("--lease", type=float, default=2.0)
    parser.add_argument("--run", type=float, default=0.2)
    opts = parser.parse_args()
    OUT.update(dir=opts.out, run=opts.run)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # The listener from the start: the series is adopted, and its fire times missed
    # before this worker started reported, as soon as the scheduler starts.
    sched = durable.DurableScheduler(opts.store, table=opts.table, lease=opts.lease,
                                     heartbeat=opts.lease / 4, poll_interval=0.1, max_workers=2,
                                     listeners=[log_event])
    print("ready", flush=True)
    stop.wait()
    sched.close(timeout=30)
    print(" ".join(f"{k}={v}" for k, v in sched.stats().items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
