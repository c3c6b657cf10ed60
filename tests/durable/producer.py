"""A producer process for the durability test: threads calling the store at once.

Usage: producer.py STORE TABLE RECORDS THREADS. Each thread makes calls one at a time
through a ``DurableScheduler(max_workers=0)``: mostly ``schedule_in`` of a new task
id, every fifth a ``cancel`` of its own latest one, and every seventh a schedule the
database refuses (a priority beyond 64 bits, past the scheduler's own checks). After
each call it appends what the call did to its own file in RECORDS, fsync'd:
``ok ID VERSION``, ``cancel ID VERSION`` or ``raised ID``. It runs until killed.
"""

from __future__ import annotations

import os
import sys
import threading

from pysched import durable
from pysched.durable import DurableScheduler, NewTask, open_store

TOO_BIG = 2**70
ARGS = '{"args":[],"kwargs":{}}'


@durable.task(name="durability-noop")
def noop() -> None:
    pass


def produce(s: DurableScheduler, folder: str, k: int) -> None:
    fd = os.open(os.path.join(folder, f"{k}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)

    def record(line: str) -> None:
        os.write(fd, line.encode() + b"\n")
        os.fsync(fd)

    latest = None
    i = 0
    while True:
        i += 1
        task_id = f"{k}-{i}"
        if i % 7 == 0:
            try:
                s.store.schedule([NewTask(task_id, 1e10, TOO_BIG, "durability-noop", ARGS)])
            except Exception:
                record(f"raised {task_id}")
            else:
                record(f"ok {task_id} 1")  # the test fails on it: it should have raised
        elif i % 5 == 0 and latest is not None:
            version = s.store.cancel(latest)
            if version is not None:
                record(f"cancel {latest} {version}")
            latest = None
        else:
            future = s.schedule_in(task_id, 3600.0, 0, noop)
            record(f"ok {task_id} {future.version}")
            latest = task_id


def main() -> None:
    store, table, folder, threads = sys.argv[1:5]
    s = DurableScheduler(open_store(store, table=table), max_workers=0)
    for k in range(int(threads)):
        threading.Thread(target=produce, args=(s, folder, k), daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
