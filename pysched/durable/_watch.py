"""FutureWatch: settles the Futures of versions run elsewhere, at a cost that follows what changed.

A version that another process runs, cancels or replaces sends this one no
word of it (a finish sends no notification), so its Future is settled from
its row, read at a poll. Reading every watched row at every poll costs
O(Futures watched): after a ``schedule_many`` of 100,000 rows, each poll would
read 100,000 rows. Instead each poll reads:

- the rows finished since the poll before (``Store.finished_since``: a range of
  the finished rows' index by when they were finished), from that poll's
  store clock less ``MARGIN``, kept where a Future watches them;
- ``BATCH`` of the watched rows by id, round robin (a sweep), for what that
  window cannot see: a version replaced by another process (pending again at
  a newer version), a commit more than ``MARGIN`` later than its clock
  reading.

So a poll costs O(rows finished in its window + BATCH), whatever the number
watched; a finished version is settled at the next poll, and every watched
row is read at least once every ``watched / BATCH`` polls. With at most
``BATCH`` watched, the sweep reads every one of them at each poll and the
window is not read. A store that cannot say what finished (a ``MemoryStore``,
in this process) has every watched row read at each poll. With nothing
watched, a poll reads nothing, the store's clock at most every ``IDLE_READ``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container, Sequence

from ._inflight import Inflight
from .records import Row
from .store import Store

__all__ = ["BATCH", "MARGIN", "FutureWatch"]

BATCH = 256  # watched rows read by id per poll
# Seconds a write's clock reading (its updated_at) may precede its commit and still be
# seen by the window: a finish reads the clock inside its transaction, just before it
# commits. A later commit is left to the sweep.
MARGIN = 5.0
# Seconds between two readings of the store's clock while nothing is watched: a worker
# without Futures pays no round trip per poll, and the window of its next Future's
# first poll reaches back at most this far (more finished rows read, once).
IDLE_READ = 30.0


class FutureWatch:
    """The watch of one process's Futures (see the module); ``poll`` from one thread.

    ``settle(rows)`` applies rows read (settles the Futures they end);
    ``local()`` gives the ids pending in the local heap (their Futures are
    settled there, not by rows read here).
    """

    def __init__(self, store: Store, inflight: Inflight, settle: Callable[[Sequence[Row]], None],
                 local: Callable[[], Container[str]]) -> None:
        self._store = store
        self._inflight = inflight
        self._settle = settle
        self._local = local
        # The store's clock, less MARGIN, before the last poll's reads (None: not yet read):
        # a Future registered after that reading is of a row written after it.
        self._since: float | None = None
        self._sweep: list[str] = []  # the ids this round of the sweep has yet to read
        self._read_at = 0.0  # time.monotonic() before the store's clock was last read

    def start(self) -> None:
        """Before the first Future is watched: start the window now."""
        self._read_at = time.monotonic()
        self._since = self._store.now() - MARGIN

    def poll(self) -> None:
        """Settle the Futures whose rows another process ended (see the module). A read
        that raises leaves the window and the sweep where they were."""
        since = self._since
        idle = not self._sweep and not self._inflight.watch_count()
        if idle and since is not None and time.monotonic() - self._read_at < IDLE_READ:
            return  # an older window start only widens the next window
        read_at = time.monotonic()
        until = self._store.now() - MARGIN  # the next window's start, once this one is read
        if idle:
            self._since, self._read_at = until, read_at
            return
        here = self._local()
        if not self._sweep:
            self._sweep = self._inflight.watched(here)
            whole = len(self._sweep) <= BATCH  # this poll's batch reads every one
        else:
            whole = False
        batch = self._sweep[-BATCH:]
        rows: list[Row] = []
        if not whole:
            finished = None if since is None else self._store.finished_since(since)
            if finished is None:  # the window cannot be read: every watched row is
                batch = self._inflight.watched(here)
            else:
                watched = set(self._inflight.watched(here, among=[r.task_id for r in finished]))
                rows = [row for row in finished if row.task_id in watched]
        ids = self._inflight.watched(here, among=batch)  # some were settled meanwhile
        if ids:
            rows += self._store.rows(ids)
        self._since, self._read_at = until, read_at
        del self._sweep[-len(batch):]
        if rows:
            self._settle(rows)
