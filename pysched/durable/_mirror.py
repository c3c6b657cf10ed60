"""The local mirror of pending rows: a core heap entry per pending row this process knows.

Invariants: a local entry's version only grows; one is dropped when the store
shows the row at that version or newer in any other state. A heap that missed
a write is repaired by the next notification, poll or full re-read: a stale
entry costs one claim that finds nothing, never a wrong run, because a version
runs only after the store's claim.

Full re-reads (every pending row) are at most one per ``resync_interval``
when asked for by a notification: any database role may send one, so a flood
of them must not turn into a flood of reads. A re-read after this process
(re)subscribed to notifications is never skipped: writes in between were unseen.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from .._impl import Scheduler, Task
from ._counters import Counters
from ._futures import DurableFuture, settle_from_row
from ._inflight import Inflight
from ._settings import Routing
from ._watch import FutureWatch
from .errors import BadRow
from .store import FINAL_STATES, PENDING, Row, Store, check_fields
from .timebase import Timebase

__all__ = ["Entry", "Mirror"]

log = logging.getLogger("pysched.durable")


class Entry:
    """A local heap entry: the store version and wall instant it stands for (never called)."""

    __slots__ = ("epoch", "priority", "task_id", "version", "wall")

    def __init__(self, task_id: str, version: int, wall: float, priority: int,
                 epoch: int) -> None:
        self.task_id = task_id
        self.version = version
        self.wall = wall
        self.priority = priority
        self.epoch = epoch  # when it was put: a full re-read begun before then cannot drop it

    def __call__(self) -> None:  # the core wants a callable; runs go through the store
        raise AssertionError("a local heap entry is never run")


class Mirror:
    """Keeps a core heap in step with the store's pending rows this worker serves.

    Its lock guards the heap and ``entries``; from under it only ``Inflight`` is
    called (lock order: mirror, then inflight). ``changed()`` (the claiming thread's
    wake-up) is called after the heap changed, outside the lock.
    """

    def __init__(self, store: Store, routing: Routing, timebase: Timebase, inflight: Inflight,
                 counters: Counters, *, resync_every: float, clock: Callable[[], float],
                 changed: Callable[[], None]) -> None:
        self._store = store
        self._routing = routing
        self._timebase = timebase
        self._inflight = inflight
        self._counters = counters
        self._resync_every = resync_every
        self._changed = changed
        self._lock = threading.Lock()
        self._core = Scheduler(clock=clock)  # one entry per pending row: when to claim it
        self.entries: dict[str, Entry] = {}  # task id -> its pending entry in the core
        self._epoch = 0  # counts puts, so a full re-read spares entries newer than its read
        self._last_full = time.monotonic()
        self._refused_since_full = False  # a skipped request was logged since the last re-read
        # (task_id, version) of bad rows that could not be marked error (SQLite keeps ids
        # that name no row: NULL, or not UTF-8): refused here once, then skipped.
        self._unmarked: set[tuple[object, object]] = set()
        self._watch = FutureWatch(store, inflight, self.sync, self._local_ids)
        self._watch.start()

    def __len__(self) -> int:
        """The pending rows in the local heap."""
        return len(self.entries)

    # -- the heap ----------------------------------------------------------------------------

    def put(self, task_id: str, version: int, wall: float, priority: int) -> None:
        """Enter ``task_id`` at ``version``, due at ``wall``, unless a newer one is in."""
        with self._lock:
            self._put(task_id, version, wall, priority)
        self._changed()

    def put_back(self, entries: Sequence[Entry]) -> None:
        """Return entries ``pop_due`` took (their claim failed) to the heap."""
        with self._lock:
            for e in entries:
                self._put(e.task_id, e.version, e.wall, e.priority)
        self._changed()

    def scheduled(self, versions: Sequence[tuple[str, int, float, int, bool]]) -> None:
        """Versions just stored here, as (task_id, version, wall, priority, served): each
        served one is entered, an older entry of any other one goes (another worker's)."""
        with self._lock:
            for task_id, version, wall, priority, served in versions:
                if served:
                    self._put(task_id, version, wall, priority)
                else:
                    self._drop(task_id, version)
        self._changed()

    def drop(self, task_id: str, version: int) -> None:
        """Forget the entry of ``task_id`` if it is at ``version`` or older."""
        with self._lock:
            self._drop(task_id, version)

    def drop_all(self, versions: Sequence[tuple[str, int]]) -> None:
        """``drop`` each (task_id, version): those just claimed, say."""
        with self._lock:
            for task_id, version in versions:
                self._drop(task_id, version)

    def cancel_local(self, task_id: str, version: int) -> list[DurableFuture]:
        """A cancel of ``task_id`` at ``version`` made here: drop its entry, and take out
        the Futures it supersedes (to cancel)."""
        self.drop(task_id, version)
        return self._inflight.supersede(task_id, version)

    def pop_due(self, now: float, room: int, popped: list[Entry]) -> float | None:
        """Take up to ``room`` entries due at ``now`` off the heap into ``popped``; when
        none is due, the delay to the head (None for an empty heap)."""
        with self._lock:
            while len(popped) < room:
                item = self._core.next(now)
                if not isinstance(item, Task):
                    return item
                self._core.complete(item)
                entry: Entry = item.fn  # type: ignore[assignment]
                if self.entries.get(entry.task_id) is entry:
                    del self.entries[entry.task_id]
                popped.append(entry)
        return None

    def _put(self, task_id: str, version: int, wall: float, priority: int) -> None:
        old = self.entries.get(task_id)
        if old is not None and old.version >= version:
            return
        self._epoch += 1
        entry = Entry(task_id, version, wall, priority, self._epoch)
        self._core.schedule(task_id, self._timebase.to_mono(wall), priority, entry)
        self.entries[task_id] = entry

    def _drop(self, task_id: str, version: int) -> None:
        old = self.entries.get(task_id)
        if old is not None and old.version <= version:
            del self.entries[task_id]
            self._core.cancel(task_id)

    # -- bringing it in step with rows -----------------------------------------------------

    def _apply(self, rows: Sequence[Row], full_epoch: int | None
               ) -> tuple[list[tuple[Row, str]], list[tuple[DurableFuture, Row]]]:
        """Apply ``rows`` under the lock; return bad rows and Futures to settle.

        With ``full_epoch`` the rows are every pending row as read after that
        epoch: entries put before it that the read did not return go.
        """
        bad: list[tuple[Row, str]] = []
        pending = set()
        running_here = self._inflight.running_versions()
        served = self._routing.served()
        good = []
        for row in rows:
            try:
                check_fields(row.version, row.run_at, row.priority)
            except BadRow as exc:
                bad.append((row, str(exc)))
                continue
            good.append(row)
            if row.state == PENDING and not row.blocked and served(row.ref, row.queue):
                pending.add(row.task_id)
                if (row.task_id, row.version) not in running_here:
                    self._put(row.task_id, row.version, row.run_at, row.priority)
            else:
                self._drop(row.task_id, row.version)
        # A final state settles this version's Future too (unless it runs here).
        taken = self._inflight.supersede_all(
            [(row.task_id, row.version + 1 if row.state in FINAL_STATES else row.version)
             for row in good])
        settle = [(future, row) for row, futures in zip(good, taken, strict=True)
                  for future in futures]
        if full_epoch is not None:
            for task_id, entry in list(self.entries.items()):
                if entry.epoch <= full_epoch and task_id not in pending:
                    self._drop(task_id, entry.version)
        return bad, settle

    def sync(self, rows: Sequence[Row], full_epoch: int | None = None) -> None:
        """Apply ``rows``, then mark bad rows and settle Futures outside the lock."""
        with self._lock:
            bad, settle = self._apply(rows, full_epoch)
        self._changed()
        for row, message in bad:
            marked = self._store.mark_error(row.task_id, row.version, message)
            with self._lock:
                key = (row.task_id, row.version)
                if not marked and key in self._unmarked:
                    continue  # refused before, and still pending: logged once, not at each read
                if not marked:
                    self._unmarked.add(key)
            self._counters.add("bad_rows")
            log.error("task %r version %r: %s", row.task_id, row.version, message)
        for future, row in settle:
            settle_from_row(future, row)

    def resync(self) -> None:
        """Re-read every pending row now."""
        with self._lock:
            epoch = self._epoch
            self._last_full = time.monotonic()
            self._refused_since_full = False
        self._counters.add("resyncs")
        self.sync(self._store.rows(), epoch)

    def resync_asked(self) -> bool:
        """A notification asked for a full re-read: do it unless one ran within
        ``resync_interval`` (the periodic one will see whatever it would). Returns
        whether it ran."""
        with self._lock:
            refused = time.monotonic() - self._last_full < self._resync_every
            if refused:
                unlogged, self._refused_since_full = not self._refused_since_full, True
        if not refused:
            self.resync()
            return True
        self._counters.add("resyncs_skipped")
        if unlogged:  # once per interval: a flood must not flood the log too
            log.warning("notifications asked for a full re-read within resync_interval (%s s)"
                        " of the last one: refused until the next", self._resync_every)
        return False

    def next_full(self) -> float:
        """When the periodic full re-read is due (time.monotonic())."""
        return self._last_full + self._resync_every

    def settle_watched(self) -> None:
        """Settle the Futures whose versions are neither pending nor running here from
        their rows: their versions run (or were cancelled) in other processes, which
        send no notification for a finish. See ``FutureWatch`` for what a poll reads."""
        self._watch.poll()

    def _local_ids(self) -> set[str]:
        with self._lock:
            return set(self.entries)
