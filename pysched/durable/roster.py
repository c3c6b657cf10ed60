"""The workers' roster: which task names each live worker serves, kept beside its heartbeat.

A worker's claims take only the rows whose task name it knows (``Serves``):
a row named for a task no worker serves waits for ever. To say so, each
worker writes what it serves to ``<table>_workers``, one row per owner:

    owner text PRIMARY KEY, names text (JSON list), prefixes text (JSON list),
    queues text (JSON list, or NULL for every queue), beat double precision

upserted every ``ROSTER_EVERY`` seconds from the heartbeat thread, and
deleted when the worker closes. The table is made by ``CREATE TABLE IF NOT
EXISTS`` on the first write: a store made by an older pysched gains it
without a migration, and an older pysched ignores it. A worker is live while
its ``beat`` is within ``LIVE_FOR`` seconds of the store's clock.

``unserved`` reads the roster and the (name, queue) pairs of the pending rows
due for over ``LIVE_FOR`` seconds (a served row is claimed long before; a row
just scheduled is not waiting yet) and gives those no live worker serves;
the worker looks every ``CHECK_EVERY`` seconds and logs each pair once per
``REPEAT_AFTER`` seconds on the ``pysched.durable`` logger, and ``pysched
status`` lists them. A roster that cannot be written (a role without CREATE,
a database away) is logged once per ``REPEAT_AFTER`` and tried again. Every
value read back is untrusted: a roster row that does not decode is ignored
(its worker counts as serving nothing).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from ._sql import check_table, quote
from .reading import Database
from .records import Serves

__all__ = ["CHECK_EVERY", "LIVE_FOR", "REPEAT_AFTER", "ROSTER_EVERY", "Roster", "unserved"]

log = logging.getLogger("pysched.durable")

ROSTER_EVERY = 10.0  # seconds between a worker's roster writes
CHECK_EVERY = 60.0  # seconds between its looks for rows no live worker serves
LIVE_FOR = 60.0  # seconds a roster row counts as live after its beat
REPEAT_AFTER = 3600.0  # seconds before a name still unserved is logged again
MAX_NAMES = 200  # distinct (name, queue) pairs of due rows looked at per check


def _statements(db: Database, table: str) -> dict[str, str]:
    t = quote(check_table(table) + "_workers")
    tasks = quote(table)
    render = db.dialect.render
    return {
        "create": f"CREATE TABLE IF NOT EXISTS {t} (owner text PRIMARY KEY, names text NOT"
                  " NULL, prefixes text NOT NULL, queues text, beat double precision NOT NULL)",
        "put": render(f"INSERT INTO {t} (owner, names, prefixes, queues, beat) VALUES"
                      " (:owner, :names, :prefixes, :queues, :beat) ON CONFLICT (owner) DO"
                      " UPDATE SET names = excluded.names, prefixes = excluded.prefixes,"
                      " queues = excluded.queues, beat = excluded.beat"),
        "drop": render(f"DELETE FROM {t} WHERE owner = :owner"),
        "live": render(f"SELECT names, prefixes, queues FROM {t} WHERE beat >= :since"),
        "due": render(f"SELECT DISTINCT ref, queue FROM {tasks} WHERE state = 'pending'"
                      " AND run_at <= :before LIMIT :limit"),
        "exists": render(db.dialect.columns),
    }


def _strings(text: Any) -> tuple[str, ...] | None:
    """A roster cell's JSON list of str, or None if it is not one."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return tuple(value)


def unserved(db: Database, table: str, now: float) -> list[tuple[Any, Any]] | None:
    """The (task name, queue) pairs of due pending rows that no live worker serves, up to
    ``MAX_NAMES`` pairs looked at; None where the store has no roster (no worker of this
    pysched ever ran on it)."""
    sql = _statements(db, table)
    if not db.query(sql["exists"], {"table": check_table(table) + "_workers"}):
        return None
    serving = []
    for names, prefixes, queues in db.query(sql["live"], {"since": now - LIVE_FOR}):
        n, p = _strings(names), _strings(prefixes)
        q = None if queues is None else _strings(queues)
        if n is None or p is None or (queues is not None and q is None):
            continue  # a row this pysched did not write: it serves nothing
        serving.append(Serves(n, p, q).matcher())
    due = db.query(sql["due"], {"before": now - LIVE_FOR, "limit": MAX_NAMES})
    return sorted(((ref, queue) for ref, queue in due
                   if not any(match(ref, queue) for match in serving)), key=repr)


class Roster:
    """One worker's row in the roster, and its log of names no live worker serves.

    ``serves`` gives what this worker serves now (tasks may be registered later);
    ``now`` is the store's clock. Called from the heartbeat thread only.
    """

    def __init__(self, db: Database, table: str, owner: str, serves: Callable[[], Serves],
                 now: Callable[[], float]) -> None:
        self._db = db
        self._table = table
        self._sql = _statements(db, table)
        self._owner = owner
        self._serves = serves
        self._now = now
        self._next = 0.0  # the store-clock time of the next write
        self._next_check = 0.0  # and of the next look for rows no live worker serves
        self._failed_at = -REPEAT_AFTER  # when a failure to write was last logged
        self._logged: dict[tuple[Any, Any], float] = {}  # pair -> when it was last logged

    def beat(self) -> None:
        """Every ``ROSTER_EVERY`` seconds: write this worker's row, then log the due
        names no live worker serves (each once per ``REPEAT_AFTER``)."""
        now = self._now()
        if now < self._next:
            return
        self._next = now + ROSTER_EVERY
        serves = self._serves()
        try:
            self._db.execute([(self._sql["create"], {}), (self._sql["put"], {
                "owner": self._owner, "names": json.dumps(list(serves.names)),
                "prefixes": json.dumps(list(serves.prefixes)),
                "queues": None if serves.queues is None else json.dumps(list(serves.queues)),
                "beat": now})])
            if now < self._next_check:
                return
            self._next_check = now + CHECK_EVERY
            found = unserved(self._db, self._table, now) or []
        except Exception as exc:  # noqa: BLE001 - the heartbeat goes on without it
            if now - self._failed_at >= REPEAT_AFTER:
                self._failed_at = now
                log.warning("the workers' roster of %s could not be written or read (%s);"
                            " rows no live worker serves go unreported meanwhile",
                            self._table, exc)
            return
        for pair in found:
            if now - self._logged.get(pair, -REPEAT_AFTER) >= REPEAT_AFTER:
                self._logged[pair] = now
                log.warning("rows of task %r on queue %r are due, and no live worker serves"
                            " that task name on that queue: they wait until one does",
                            *pair)

    def leave(self) -> None:
        """Delete this worker's row (it closes). Idempotent."""
        self._db.execute([(self._sql["create"], {}),
                          (self._sql["drop"], {"owner": self._owner})])
        self._db.close()
