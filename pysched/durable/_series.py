"""Durable recurring series: each process drives its own ``SeriesBook``, the store decides.

Every worker process reads the stored series (``SeriesTable.rows``) every
``poll`` seconds and keeps a ``pysched.calendar.Series`` for each one it
serves, on the wall timeline, so all processes compute the same fire times.
When its series says a fire time starts, the process claims that fire time
in the store (``SeriesTable.claim``: a unique key, so one claim wins) and runs
it only if the claim is its own; a lost claim means another process runs it.
There is no leader: every process decides, the unique key arbitrates.

A run holds a lease on its fire time, renewed every ``beat`` seconds; when a
process dies, its lease expires and another process takes the fire time over
(``reclaim``) and runs it again: at least once, never two at once. A claimed
fire time starts under the one-shot runs' rule: only while its lease is
provably live (``live_until`` of the moment its claim or latest renewal was
sent is ahead on ``clock``, and no renewal found it lost); one picked up later
(a starved or paused process) is never started here, and its lease is left to
expire for a live process to take it over. Events
(skipped, coalesced, late, failed, stopped) are each process's own decisions,
through the shared ``EventHub``.

Lock order: ``lock`` guards the book and the entries; it is never held across
a store call or a user callable, and events are flushed outside it.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple

from .._validate import check_time
from ..calendar import Cron, Event, Reading, Series, SeriesBook
from ..calendar.events import CANCELLED as CANCELLED_REASON
from ..calendar.events import CLOSED, REPLACED, SKIPPED
from ..calendar.handle import fire_datetimes
from . import _local
from ._gate import StoreGate
from ._local import RunningTask
from ._running import lease_live, renew
from ._series_spec import check_row_fields, decode_spec
from ._shared import log
from .errors import BadRow, UnknownTask
from .registry import TaskRegistry
from .series_table import ACTIVE, CANCELLED, PAUSED, FireClaim, SeriesRow, SeriesTable
from .store import Claim, decode_args

__all__ = ["SERIES_COUNTERS", "DurableSeriesHandle", "SeriesDriver"]

SERIES_COUNTERS = ("series_fires", "series_fires_elsewhere", "series_reruns", "series_failed",
                   "series_not_recorded", "series_refused", "series_store_errors",
                   "series_pruned", "series_lease_lapsed", "series_leases_lost")


class Entry(NamedTuple):
    """One stored series as this process runs it (``series`` None: not served here)."""

    generation: int
    series: Series | None
    fn: Callable[..., Any] | None
    args: list[Any]
    kwargs: dict[str, Any]
    row: SeriesRow
    refused: bool = False  # a hostile row: logged once, never looked at again


class SeriesDriver:
    """The durable series of one process: a book, the store's claims, the runs.

    ``served(ref, queue)`` says which series this process runs; ``start(job,
    priority)`` runs a job on a worker (the worker pool, or inline in tests);
    ``read()`` reads the wall and monotonic clocks. ``live_until(sent)`` is the
    local deadline (on ``clock``) of a lease set or renewed by a statement sent
    at ``sent``: the one-shot runs' (``Shared.live_until``).
    """

    def __init__(self, table: SeriesTable, *, owner: str, registry: TaskRegistry,
                 served: Callable[[str, str], bool], read: Callable[[], Reading],
                 lease: float, start: Callable[[Callable[[], object], int], object],
                 clock: Callable[[], float], live_until: Callable[[float], float],
                 scheduler: object = None, retention: float | None = None) -> None:
        self.table = table
        self.owner = owner
        self.registry = registry
        self.served = served
        self.read = read
        self.lease = lease
        self.start = start
        self.clock = clock
        self.live_until = live_until
        self.scheduler = scheduler  # what current_task() reports a run belongs to
        self.retention = retention  # seconds the claims of ended fire times are kept
        self.lock = threading.Lock()
        self.wakeup = threading.Condition(self.lock)
        self.book = SeriesBook(read())
        self.hub = self.book.hub
        self.entries: dict[str, Entry] = {}
        # Lease token -> a fire time claimed here, from its claim until its run ends (or
        # is refused): the heartbeat renews it, also while it waits for a worker.
        self.inflight: dict[str, RunningTask] = {}
        self.counts = dict.fromkeys(SERIES_COUNTERS, 0)
        self.closing = False
        # Counts local adoptions and ends; ``edited`` holds the count of each id's
        # newest, so a re-read begun before it leaves that id as this process left it.
        self.edits = 0
        self.edited: dict[str, int] = {}

    # -- the store's series, mirrored here ----------------------------------------------------

    def sync(self) -> None:
        """Re-read the stored series: adopt new generations, follow pauses, drop the ended."""
        with self.lock:
            began = self.edits
        rows = self.table.rows()
        now = self.checked_read()  # a failing clock fails this re-read, refusing no row
        with self.lock:
            # Adopted or ended here while the rows were read: newer than they are.
            newer = {i for i, edit in self.edited.items() if edit > began}
            live = set()
            for row in rows:
                live.add(row.series_id)
                if row.series_id not in newer:
                    self._adopt(row, now)
            for series_id in [i for i in self.entries if i not in live and i not in newer]:
                del self.entries[series_id]
                self.book.cancel(series_id)
            self.edited = {i: self.edited[i] for i in newer}  # only this thread re-reads
            self.wakeup.notify_all()
        self.book.flush()

    def _edit(self, series_id: str) -> None:
        """Under lock: ``series_id`` was adopted or ended here, now."""
        self.edits += 1
        self.edited[series_id] = self.edits

    def adopt(self, row: SeriesRow) -> Entry:
        """Take ``row`` (just stored here) as the current generation of its series."""
        now = self.checked_read()
        with self.lock:
            entry = self._adopt(row, now)
            self._edit(row.series_id)
            self.wakeup.notify_all()
        self.book.flush()
        return entry

    def _adopt(self, row: SeriesRow, now: Reading) -> Entry:
        """Under lock: make the entry for ``row`` current; refusals are logged once."""
        entry = self.entries.get(row.series_id)
        # A series not served here is looked at again: its task may be registered since.
        if (entry is None or entry.generation != row.generation
                or entry.series is None and not entry.refused
                and self.served(row.ref, row.queue)):
            entry = self.entries[row.series_id] = self._entry(row, now)
            if entry.series is not None:
                self.book.add(entry.series, now)
            elif row.series_id in self.book:
                self.book.cancel(row.series_id)  # the new generation is not served here
        series = entry.series
        if series is not None and self.book.get(row.series_id) is series and not series.stopped:
            if row.state == PAUSED and not series.paused:
                self.book.pause(row.series_id)
            elif row.state == ACTIVE and series.paused:
                self.book.resume(row.series_id, now)
        return entry

    def _entry(self, row: SeriesRow, now: Reading) -> Entry:
        """A new entry for ``row``: its Series and callable if this process runs it."""
        if not self.served(row.ref, row.queue):
            return Entry(row.generation, None, None, [], {}, row)
        try:
            if not row.id_is_text:
                raise BadRow("its series_id is not valid UTF-8 text")
            check_row_fields(row)
            spec = decode_spec(row.spec)
            args, kwargs = decode_args(row.args)
            fn = self.registry.resolve(row.ref)
            last_fire = row.last_fire
            if isinstance(spec.trigger, Cron) and (last_fire is None or last_fire < row.created):
                # Fire times missed since it was stored still count, none from before: a
                # floor below ``created`` (an older pysched's prune) must not reach them.
                last_fire = row.created
            series = Series(row.series_id, spec.trigger, now, last_fire=last_fire,
                            timeline="wall", **spec.policies._asdict())
        except (BadRow, UnknownTask, ValueError, TypeError, OverflowError) as exc:
            log.error("durable series %r generation %r refused: %s", row.series_id,
                      row.generation, exc)
            self.counts["series_refused"] += 1
            return Entry(row.generation, None, None, [], {}, row, refused=True)
        return Entry(row.generation, series, fn, args, kwargs, row)

    def holds(self, series_id: str) -> bool:
        """Whether the store held a series of this id when this process last read it."""
        with self.lock:
            return series_id in self.entries

    def end(self, series_id: str, reason: str = CANCELLED_REASON) -> bool:
        """End the series of this id in the store (every process follows) and here, for
        ``reason`` ("cancelled", or "replaced" by a one-shot task of its id); False if the
        store held none."""
        ended = self.table.end(series_id) is not None
        with self.lock:
            self.entries.pop(series_id, None)
            self._edit(series_id)
            if series_id in self.book:
                self.book.cancel(series_id, reason)
            self.wakeup.notify_all()
        self.book.flush()
        return ended

    # -- deciding and running ---------------------------------------------------------------

    def tick(self) -> bool:
        """Start the fire times due now, each on a worker; False if the clocks failed
        (logged; nothing was decided, so look again later)."""
        # Only the series thread wakes the book, so a reading taken before the lock
        # is still the newest it sees.
        try:
            woke = self.checked_read()
        except Exception:
            log.exception("durable series: reading the clocks failed; trying again later")
            return False
        with self.lock:
            starts = self.book.wake(woke)
            entries = [self.entries[str(series.series_id)] for series, _ in starts]
        self.book.flush()
        for entry, (series, fire) in zip(entries, starts, strict=True):
            try:
                handle = self.start(partial(self._run, entry, series, fire.fire_time, woke),
                                    entry.row.priority)
            except Exception:  # the worker pool is closed: the scheduler is closing
                self.hub.emit([self._not_started(series, fire.fire_time, woke)])
                continue
            if isinstance(handle, Future):  # cancelled unstarted when the pool closes
                handle.add_done_callback(partial(self._if_cancelled, series, fire.fire_time,
                                                 woke))
        return True

    def _if_cancelled(self, series: Series, fire_time: float, woke: Reading,
                      done: Future[Any]) -> None:
        if done.cancelled():
            self.hub.emit([self._not_started(series, fire_time, woke)])

    def _not_started(self, series: Series, fire_time: float, woke: Reading) -> Event:
        """The event for a fire time decided (at ``woke``) but not started when its series
        ended; its lateness is from ``woke`` if the clocks fail now."""
        try:
            now = self.checked_read()
        except Exception:
            now = woke
        with self.lock:
            current = self.entries.get(str(series.series_id))
            replaced = current is not None and current.series is not series
        replaced = replaced or series.stop_reason == REPLACED
        reason = CLOSED if self.closing else REPLACED if replaced else CANCELLED_REASON
        return Event(series.series_id, SKIPPED, reason, fire_time, now.wall - fire_time, 1,
                     fire_time, "wall")

    def checked_read(self) -> Reading:
        """Both clocks; the error of a clock that raises or gives no finite number."""
        now = self.read()
        return Reading(check_time(now.wall, "wall_clock()"), check_time(now.mono, "clock()"))

    def _run(self, entry: Entry, series: Series, fire_time: float, woke: Reading) -> None:
        """Worker: claim one fire time of ``series`` and, if the claim is ours, run it.

        ``woke`` is the reading the fire time was decided at. The clocks are user
        code, read outside the lock: one that fails fails this run only (its
        series goes on or stops by ``on_error``), and the series is always freed.
        """
        try:
            begun: Reading | None = self.checked_read()
        except Exception:
            log.exception("durable series %r: reading the clocks to start fire time %r failed",
                          series.series_id, fire_time)
            begun = None
        with self.lock:
            stopped = series.stopped
            if stopped or begun is None:
                go = False
                if not stopped:  # the run decided by wake ends here, failed
                    self.book.finished(series, woke, failed=True)
            else:
                go = self.book.begin(series, begun)
        self.book.flush()
        if stopped:  # ended (cancelled, replaced, closed) while this waited for a worker
            self.hub.emit([self._not_started(series, fire_time, woke)])
        if begun is None and not stopped:
            self._count("series_failed")
            self._stop_if_failed(entry, series)
        if not go:
            return
        assert begun is not None
        claim: FireClaim | None = None
        failed = False
        try:
            sent = self.clock()
            claim = self.table.claim(entry.row.series_id, entry.generation, fire_time, self.owner,
                                     self.lease)
        except Exception:
            log.exception("durable series %r: claiming fire time %r failed", series.series_id,
                          fire_time)
            self._count("series_store_errors")
        try:
            if claim is None:
                self._count("series_fires_elsewhere")
            else:
                self._count("series_fires")
                failed = self._call(entry, claim, self._hold(entry, claim, sent))
        finally:
            try:
                ended = self.checked_read()
            except Exception:
                log.exception("durable series %r: reading the clocks as fire time %r ended"
                              " failed", series.series_id, fire_time)
                ended, failed = begun, True
                self._count("series_failed")
            with self.lock:
                self.book.finished(series, ended, failed)
            self.book.flush()
        if failed:
            self._stop_if_failed(entry, series)

    def _stop_if_failed(self, entry: Entry, series: Series) -> None:
        """After a failed run: on_error="stop" ended ``series``, so it ends in every process."""
        if series.stopped:
            self._guarded(partial(self.table.set_state, entry.row.series_id, entry.generation,
                                  CANCELLED), "stopping a failed series")

    def rerun_expired(self) -> None:
        """Take over the fire times whose process died mid-run, and run each again."""
        with self.lock:
            ours = {i: e for i, e in self.entries.items() if e.fn is not None}
            held = set(self.inflight)  # running here after a stall: late, not dead
        sent = self.clock()
        for claim in self.table.reclaim(self.owner, self.lease, ours, held):
            self._count("series_reruns")
            entry = ours[claim.series_id]
            log.warning("durable series %r: fire time %r runs again (attempt %d): its lease"
                        " expired", claim.series_id, claim.fire_time, claim.attempts)
            running = self._hold(entry, claim, sent)
            try:
                handle = self.start(partial(self._call, entry, claim, running),
                                    entry.row.priority)
            except Exception:
                self._drop(running)  # the pool is closed: the lease is left to expire
                raise
            if isinstance(handle, Future):  # cancelled unstarted when the pool closes
                handle.add_done_callback(partial(self._drop_if_cancelled, running))

    def _hold(self, entry: Entry, claim: FireClaim, sent: float) -> RunningTask:
        """Track ``claim`` (its statement sent at ``sent``) as in flight here: renewed by
        the heartbeat, trusted until ``live_until(sent)``."""
        running = RunningTask(self.scheduler, Claim(
            claim.series_id, claim.generation, claim.fire_time, entry.row.priority,
            entry.row.ref, entry.row.args, claim.attempts, claim.token, 1),
            self.live_until(sent))
        with self.lock:
            self.inflight[claim.token] = running
        return running

    def _drop(self, running: RunningTask) -> None:
        with self.lock:
            self.inflight.pop(running.token, None)

    def _drop_if_cancelled(self, running: RunningTask, done: Future[Any]) -> None:
        if done.cancelled():
            self._drop(running)

    def heartbeat(self) -> None:
        """Renew the leases of the fire times claimed here; move their local deadlines,
        flag the ones lost (not started: never started; running: told by ``lease_lost``)."""
        with self.lock:
            runs = [run for run in self.inflight.values() if not run.lease_lost]
        if not runs:
            return
        _, lost = renew(runs, partial(self.table.heartbeat, self.owner, self.lease), self.clock,
                        self.live_until, self.lock, self.inflight)
        self._count("series_leases_lost", len(lost))
        for run in lost:
            log.warning("durable series %r: the lease of fire time %r was lost (this process"
                        " was paused or starved for longer than the lease?); another process"
                        " may run it again", run.task_id, run.run_at)

    def _call(self, entry: Entry, claim: FireClaim, running: RunningTask) -> bool:
        """Run the claimed fire time and record its end if its lease is provably live
        now (else leave the lease to expire); True if it raised."""
        assert entry.fn is not None
        if not lease_live(running, self.clock()):
            self._drop(running)
            log.warning("durable series %r: fire time %r not started, its lease could not be"
                        " shown live (claimed or renewed too long ago); left to expire for"
                        " another run", claim.series_id, claim.fire_time)
            self._count("series_lease_lapsed")
            return False
        failed = True
        try:
            with _local.running(running):
                entry.fn(*entry.args, **entry.kwargs)
            failed = False
        except Exception as exc:  # noqa: BLE001 - the series' on_error decides
            log.error("durable series %r fire time %r failed:\n%s", claim.series_id,
                      claim.fire_time, "".join(traceback.format_exception(exc)))
            self._count("series_failed")
        finally:
            with self.lock:
                del self.inflight[claim.token]
            # While the store is away the lease expires and another process re-runs it.
            self._guarded(lambda: self._finish(claim, failed), "recording a fire time")
        return failed

    def _finish(self, claim: FireClaim, failed: bool) -> None:
        if not self.table.finish(claim, failed):
            self._count("series_not_recorded")  # its lease expired: another process took it

    def _count(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.counts[name] += n

    def _guarded(self, action: Callable[[], object], what: str) -> bool:
        try:
            action()
        except Exception:
            log.exception("durable series: %s failed", what)
            self._count("series_store_errors")
            return False
        return True

    def chores(self) -> None:
        """One round of the store chores, each guarded: re-read, re-run the expired, renew."""
        self._guarded(self.sync, "re-reading the series")
        self._guarded(self.rerun_expired, "taking over expired fire times")
        self._guarded(self.heartbeat, "renewing fire-time leases")

    def prune(self) -> None:
        """Forget the claims of fire times older than ``retention`` (None: keep them)."""
        if self.retention is not None:
            pruned = self.table.prune(self.retention)
            self._count("series_pruned", pruned)

    def loop(self, closing: threading.Event, poll: float, clock: Callable[[], float],
             prune_every: float) -> None:
        """The series thread: chores every ``poll`` seconds, pruning every ``prune_every``,
        fire times when due. A clock reading that raises ends only its round: the thread
        logs it and tries again after ``poll``, so the series here never stop firing."""
        next_chores = next_prune = float("-inf")  # both due at the first round
        while not closing.is_set():
            try:
                now = clock()
                if now >= next_chores:
                    self.chores()
                    next_chores = clock() + poll
                if now >= next_prune:
                    self._guarded(self.prune, "pruning old fire times")
                    next_prune = clock() + prune_every
                ticked = self.tick()
                with self.lock:
                    wake = self.book.next_wake() if ticked else None  # failed: next chores
                    until = next_chores if wake is None else min(wake, next_chores)
                    if not closing.is_set():
                        self.wakeup.wait(max(0.0, until - clock()))
            except Exception:
                log.exception("durable series: reading the clock failed; trying again in"
                              " %.2f s", poll)
                closing.wait(poll)

    def close(self) -> None:
        """End every series here (events say "closed"); the store keeps them."""
        events: list[Event] = []
        with self.lock:
            self.closing = True
            for series_id in list(self.entries):
                series = self.book.get(series_id)
                if series is not None:
                    events += series.cancel(CLOSED)
            self.wakeup.notify_all()
        self.hub.emit(events)


class DurableSeriesHandle:
    """What ``DurableScheduler.schedule_recurring`` returns: one stored generation of a series.

    ``pause``, ``resume`` and ``cancel`` write the store (every process
    follows within its ``poll_interval``) and act here at once. Once the
    series is replaced by id (here or elsewhere) or ended, they do nothing and
    ``cancel`` returns False; once the scheduler is closed they raise
    SchedulerClosed.
    """

    __slots__ = ("series_id", "generation", "_driver", "_trigger_series", "_gate")

    def __init__(self, driver: SeriesDriver, entry: Entry, trigger_series: Series,
                 gate: StoreGate) -> None:
        self.series_id = entry.row.series_id
        self.generation = entry.generation
        self._driver = driver
        self._gate = gate  # its scheduler's: the store writes, refused once it is closed
        # The series as computed here: the one the book runs, or one only to look ahead with.
        self._trigger_series = trigger_series

    def __repr__(self) -> str:
        return f"<DurableSeriesHandle {self.series_id!r} generation {self.generation}>"

    def _local(self) -> Series | None:
        entry = self._driver.entries.get(self.series_id)
        if entry is None or entry.generation != self.generation or entry.series is None:
            return None
        series = entry.series
        return series if self._driver.book.get(self.series_id) is series else None

    def _ended(self) -> bool:
        entry = self._driver.entries.get(self.series_id)
        return (entry is None or entry.generation != self.generation
                or self._trigger_series.stopped)

    @property
    def cancelled(self) -> bool:
        """True once this generation was cancelled, replaced or stopped, as seen here."""
        with self._driver.lock:
            return self._ended()

    @property
    def paused(self) -> bool:
        """True while paused, as seen here."""
        with self._driver.lock:
            return self._trigger_series.paused

    def next_fire_times(self, n: int) -> list[datetime]:
        """The next ``n`` fire times not yet handled here, in the trigger's zone."""
        with self._driver.lock:
            if self._ended():
                return []
            fires = self._trigger_series.next_fire_times(n)
        return fire_datetimes(self._trigger_series, fires, self._driver.checked_read())

    def pause(self) -> None:
        """Start no more runs of it in any process until ``resume``."""
        if self._set_state(PAUSED):
            with self._driver.lock:
                if self._local() is not None and not self._trigger_series.paused:
                    self._driver.book.pause(self.series_id)
                elif self._local() is None:
                    self._trigger_series.pause()
            self._driver.book.flush()

    def resume(self) -> None:
        """Resume; fire times that came due while paused are skipped, with events."""
        if self._set_state(ACTIVE):
            now = self._driver.checked_read()
            with self._driver.lock:
                if self._local() is not None and self._trigger_series.paused:
                    self._driver.book.resume(self.series_id, now)
                elif self._local() is None:
                    self._trigger_series.resume(now)
                self._driver.wakeup.notify_all()
            self._driver.book.flush()

    def cancel(self) -> bool:
        """End the series in every process; False if it had already ended or been replaced."""
        if not self._set_state(CANCELLED):
            return False
        with self._driver.lock:
            if self._local() is not None:
                self._driver.book.cancel(self.series_id)
            entry = self._driver.entries.get(self.series_id)
            if entry is not None and entry.generation == self.generation:
                del self._driver.entries[self.series_id]
            self._driver.wakeup.notify_all()
        self._driver.book.flush()
        return True

    def _set_state(self, state: str) -> bool:
        return self._gate.call(partial(self._driver.table.set_state, self.series_id,
                                       self.generation, state))
