"""Durable schedules: crash recovery on SQLite, one schedule shared by processes on PostgreSQL.

>>> from pysched import durable
>>> @durable.task(name="send-report")
... def send_report(day):
...     ...
>>> sched = durable.DurableScheduler("schedule.db", max_workers=4)   # doctest: +SKIP
>>> sched.schedule("report", sched.clock() + 60, 0, send_report, args=["monday"])  # doctest: +SKIP

Work is stored as a reference (a registered name or an allowed
``module:function``) plus JSON arguments, never as a callable, so a lambda
is refused with ``NotDurable``. Execution is at-least-once: a version whose
process died while running it runs again once its lease expires (sooner
when the process restarts under the same ``owner``, once two heartbeats have
passed), so handlers must be idempotent; ``current_task().attempt`` says
which try this is. See
docs/durable.md for the guarantees, the time model and the schema.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._series import DurableSeriesHandle
    from .errors import BadRow, DurableError, NotDurable, UnknownTask
    from .memory import MemoryStore
    from .postgres import PostgresStore
    from .registry import REGISTRY, TaskOptions, TaskRegistry, task
    from .retry import Retry
    from .runner import DurableFuture, DurableScheduler, DurableTaskFailed, current_task
    from .sqlite import SQLiteStore
    from .store import Claim, NewTask, Outcome, Row, Serves, Store
    from .stores import StoreTarget, open_store, parse_store_target
    from .timebase import Timebase
else:  # each name loads on first use (pysched._lazy); PostgresStore needs psycopg, an extra
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals(), {
        "DurableSeriesHandle": "._series",
        "BadRow": ".errors", "DurableError": ".errors", "NotDurable": ".errors",
        "UnknownTask": ".errors",
        "MemoryStore": ".memory",
        "PostgresStore": ".postgres",
        "REGISTRY": ".registry", "TaskOptions": ".registry", "TaskRegistry": ".registry",
        "task": ".registry",
        "Retry": ".retry",
        "DurableFuture": ".runner", "DurableScheduler": ".runner",
        "DurableTaskFailed": ".runner", "current_task": ".runner",
        "SQLiteStore": ".sqlite",
        "Claim": ".store", "NewTask": ".store", "Outcome": ".store", "Row": ".store",
        "Serves": ".store", "Store": ".store",
        "StoreTarget": ".stores", "open_store": ".stores", "parse_store_target": ".stores",
        "Timebase": ".timebase",
    })

__all__ = [
    "REGISTRY", "BadRow", "Claim", "DurableError", "DurableFuture", "DurableScheduler",
    "DurableSeriesHandle",
    "DurableTaskFailed", "MemoryStore", "NewTask", "NotDurable", "Outcome", "PostgresStore",
    "Retry", "Row", "SQLiteStore", "Serves", "Store", "StoreTarget", "TaskOptions", "TaskRegistry",
    "Timebase", "UnknownTask", "current_task", "open_store", "parse_store_target", "task",
]
