"""A store holding one of everything the dashboard and the commands show, made through the
store's own writes (claims and outcomes as a worker makes them), plus hostile rows.

``fill(store)`` returns the ids it made, by what they are.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pysched import Cron, Every
from pysched.durable import NewTask, Outcome, Store
from pysched.durable._series_spec import Policies, encode_spec

XSS = "<script>alert(1)</script>"
ARGS = '{"args":[1,"two"],"kwargs":{"three":3}}'
POLICIES = Policies(1.0, "latest", "skip", "continue", 100)
TRACEBACK = ('ValueError: <b>bad</b> input\nTraceback (most recent call last):\n'
             '  File "tasks.py", line 3, in report\nValueError: <b>bad</b> input\n')


def new(task_id: str, run_at: float, ref: str = "report", queue: str = "default",
        priority: int = 0, args: str = ARGS) -> NewTask:
    return NewTask(task_id, run_at, priority, ref, args, queue)


def fill(store: Store) -> dict[str, Any]:
    """One of each: pending (two queues, two names), running, completed, failed, error,
    waiting for a retry, cancelled, a hostile id, a time no date has; three series."""
    now = time.time()
    ids: dict[str, Any] = {}
    store.schedule([new("done-1", now - 50), new("failed-1", now - 40),
                    new("error-1", now - 30, ref="nowhere:gone"), new("retrying-1", now - 20),
                    new("running-1", now - 10), new(XSS, now - 5)])
    # Claimed as a worker claims them; every one but running-1 then ends as it says.
    claims = {c.task_id: c for c in store.claim(now + 1, 100, "worker-a", 30.0)}
    ends = {"done-1": ("completed", None, None), "failed-1": ("failed", TRACEBACK, None),
            "error-1": ("error", "task 'nowhere:gone' is not registered", None),
            "retrying-1": ("pending", TRACEBACK, now + 600),
            XSS: ("failed", f"RuntimeError: {XSS}\n", None)}
    assert store.finish([Outcome(claims[i].token, i, claims[i].version, *end)
                         for i, end in ends.items()]) == [True] * len(ends)
    store.schedule([new(f"later-{i}", now + 60 * (i + 1), queue="reports" if i % 2 else
                        "default", ref="report" if i % 3 else "cleanup") for i in range(12)])
    store.schedule([new("cancel-me", now + 3600), new("far-future", 1e300),
                    new("to-cancel", now + 7200)])
    store.cancel("to-cancel")
    table = store.series_table()
    for series_id, trigger in (("nightly", Cron("30 2 * * *", tz="Europe/Berlin")),
                               ("every-minute", Every(60)), (f"s-{XSS}", Every(3600))):
        table.put(series_id, encode_spec(trigger, POLICIES, now - 7200), "report", ARGS, 0,
                  "default", now - 7200)
    for k, failed in ((1, False), (2, True), (3, False)):
        claim = table.claim("every-minute", 1, now - 600 + 60 * k, "worker-a", 30.0)
        assert claim is not None
        table.finish(claim, failed)
    ids.update(xss=XSS, series=["nightly", "every-minute", f"s-{XSS}"])
    return ids


def drop_postgres(url: str, table: str) -> None:
    """Drop every table a store, the read layer and the steering made for ``table``."""
    from pysched.durable.reading import connect

    from support.durable import drop_postgres_table

    drop_postgres_table(url, table)
    db = connect(url, writable=True)
    try:
        db.execute([(f"DROP TABLE IF EXISTS {table}_series_notes", {})])
    finally:
        db.close()


def put_bad_series(store: Store) -> None:
    """A series whose spec is not a trigger: shown with its problem, never raising."""
    store.series_table().put("broken", json.dumps({"kind": "sometimes", "fmt": 1}), "report",
                             "not json", 0, "default", time.time())
