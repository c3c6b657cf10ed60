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
a store call or a user callable, and events are flushed outside it. The fire
times claimed here are held in an ``Inflight`` of their own (its lock a leaf).
``read`` and ``clock`` are the scheduler's checked clocks (``_clocks``): a
reading that fails ends the chore or the tick that asked (the series thread
tries again after ``poll``), or fails the fire time's run.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from functools import partial
from typing import Any, NamedTuple

from ..calendar import Cron, Event, Fire, Reading, Series, SeriesBook
from ..calendar.current import CURRENT_FIRE
from ..calendar.events import CANCELLED as CANCELLED_REASON
from ..calendar.events import CLOSED, REPLACED, SKIPPED
from ..calendar.handle import SeriesHandle
from . import _local
from ._counters import Counters, guarded
from ._gate import StoreGate
from ._inflight import Inflight, RunningTask, lease_live
from ._series_spec import check_row_fields, decode_spec
from .errors import BadRow, UnknownTask
from .registry import TaskRegistry
from .series_table import ACTIVE, CANCELLED, PAUSED, FireClaim, SeriesRow, SeriesTable
from .store import Claim, decode_args

__all__ = ["SERIES_COUNTERS", "DurableSeriesHandle", "Entry", "SeriesDriver", "StoredSeries"]

log = logging.getLogger("pysched.durable")

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
    ``read()`` reads the wall and monotonic clocks, ``clock()`` the monotonic one.
    ``live_until(sent)`` is the local deadline (on ``clock``) of a lease set or
    renewed by a statement sent at ``sent``: the one-shot runs'
    (``Settings.live_until``).
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
        # The fire times claimed here, from their claim until their run ends (or is
        # refused): the heartbeat renews them, also while they wait for a worker.
        self._claims = Inflight()
        self.counts = Counters(SERIES_COUNTERS)
        self.closing = False
        # Counts local adoptions and ends; ``edited`` holds the count of each id's
        # newest, so a re-read begun before it leaves that id as this process left it.
        self.edits = 0
        self.edited: dict[str, int] = {}

    @property
    def inflight(self) -> dict[str, RunningTask]:
        """The fire times claimed here, by lease token, as of now."""
        return self._claims.snapshot()

    # -- the store's series, mirrored here ----------------------------------------------------

    def sync(self) -> None:
        """Re-read the stored series: adopt new generations, follow pauses, drop the ended.
        The clocks are read before any row is looked at, so a failing reading refuses none."""
        with self.lock:
            began = self.edits
        rows = self.table.rows()
        now = self.read()
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

    def adopt(self, row: SeriesRow, now: Reading | None = None) -> Entry:
        """Take ``row`` (just stored here, at ``now``: read now if None) as the current
        generation of its series."""
        if now is None:
            now = self.read()
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
                            timeline="wall", **spec.policies.as_dict())
        except (BadRow, UnknownTask, ValueError, TypeError, OverflowError) as exc:
            log.error("durable series %r generation %r refused: %s", row.series_id,
                      row.generation, exc)
            self.counts.add("series_refused")
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

    def tick(self) -> None:
        """Start the fire times due now, each on a worker."""
        # Only the series thread wakes the book, so a reading taken before the lock
        # is still the newest it sees.
        woke = self.read()
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

    def _if_cancelled(self, series: Series, fire_time: float, woke: Reading,
                      done: Future[Any]) -> None:
        if done.cancelled():
            self.hub.emit([self._not_started(series, fire_time, woke)])

    def _not_started(self, series: Series, fire_time: float, woke: Reading) -> Event:
        """The event for a fire time decided at ``woke`` but not started when its series
        ended (its lateness as of that decision: no clock is read here)."""
        with self.lock:
            current = self.entries.get(str(series.series_id))
            replaced = current is not None and current.series is not series
        replaced = replaced or series.stop_reason == REPLACED
        reason = CLOSED if self.closing else REPLACED if replaced else CANCELLED_REASON
        return Event(series.series_id, SKIPPED, reason, fire_time, woke.wall - fire_time, 1,
                     fire_time, "wall")

    def _run(self, entry: Entry, series: Series, fire_time: float, woke: Reading) -> None:
        """Worker: claim one fire time of ``series`` and, if the claim is ours, run it.

        ``woke`` is the reading the fire time was decided at. The series is always
        freed: a clock reading that fails here fails this run (the clocks' rule), and
        the series goes on or stops by ``on_error``.
        """
        at, asked = woke, False  # the newest good reading; whether begin() was asked
        try:
            at = self.read()
            with self.lock:
                asked = True
                stopped = series.stopped
                go = not stopped and self.book.begin(series, at)
                fire = series.running  # with its lateness as it starts
            self.book.flush()
            if stopped:  # ended (cancelled, replaced, closed) while this waited for a worker
                self.hub.emit([self._not_started(series, fire_time, woke)])
            if not go:
                return
            failed = self._claim_and_call(entry, fire or Fire(fire_time, 0.0), at)
            at = self.read()
        except Exception:
            log.exception("durable series %r fire time %r: reading the clocks failed; the run"
                          " fails", series.series_id, fire_time)
            self.counts.add("series_failed")
            failed = True
            if not asked and series.stopped:  # ended while it waited: the book owes it nothing
                self.hub.emit([self._not_started(series, fire_time, woke)])
                return
        with self.lock:
            self.book.finished(series, at, failed)
        self.book.flush()
        if failed and series.stopped:  # on_error="stop": it ends in every process
            self._guarded(partial(self.table.set_state, entry.row.series_id, entry.generation,
                                  CANCELLED), "stopping a failed series")

    def _claim_and_call(self, entry: Entry, fire: Fire, begun: Reading) -> bool:
        """Claim the fire time in the store (its statement sent after ``begun``) and run it
        if the claim is ours; True if the run failed."""
        row = entry.row
        fire_time = fire.fire_time
        try:
            claim = self.table.claim(row.series_id, entry.generation, fire_time, self.owner,
                                     self.lease)
        except Exception:
            log.exception("durable series %r: claiming fire time %r failed", row.series_id,
                          fire_time)
            self.counts.add("series_store_errors")
            claim = None
        if claim is None:
            self.counts.add("series_fires_elsewhere")
            return False
        self.counts.add("series_fires")
        return self._call(entry, claim, self._hold(entry, claim, begun.mono), fire)

    def rerun_expired(self) -> None:
        """Take over the fire times whose process died mid-run, and run each again."""
        with self.lock:
            ours = {i: e for i, e in self.entries.items() if e.fn is not None}
        held = self._claims.tokens()  # running here after a stall: late, not dead
        sent = self.clock()
        for claim in self.table.reclaim(self.owner, self.lease, ours, held):
            self.counts.add("series_reruns")
            entry = ours[claim.series_id]
            log.warning("durable series %r: fire time %r runs again (attempt %d): its lease"
                        " expired", claim.series_id, claim.fire_time, claim.attempts)
            late = Fire(claim.fire_time, self.read().wall - claim.fire_time)
            running = self._hold(entry, claim, sent)
            try:
                handle = self.start(partial(self._call, entry, claim, running, late),
                                    entry.row.priority)
            except Exception:
                self._claims.release(running.token)  # the pool is closed: left to expire
                raise
            if isinstance(handle, Future):  # cancelled unstarted when the pool closes
                handle.add_done_callback(partial(self._release_if_cancelled, running))

    def _hold(self, entry: Entry, claim: FireClaim, sent: float) -> RunningTask:
        """Hold ``claim`` (its statement sent at ``sent``) in flight here: renewed by the
        heartbeat, trusted until ``live_until(sent)``."""
        running = RunningTask(Claim(
            claim.series_id, claim.generation, claim.fire_time, entry.row.priority,
            entry.row.ref, entry.row.args, claim.attempts, claim.token, 1),
            self.live_until(sent))
        self._claims.hold(running)
        return running

    def _release_if_cancelled(self, running: RunningTask, done: Future[Any]) -> None:
        if done.cancelled():
            self._claims.release(running.token)

    def heartbeat(self) -> None:
        """Renew the leases of the fire times claimed here; move their local deadlines,
        flag the ones lost (not started: never started; running: told by ``lease_lost``)."""
        _, lost = self._claims.renew(partial(self.table.heartbeat, self.owner, self.lease),
                                     self.clock, self.live_until)
        self.counts.add("series_leases_lost", len(lost))
        for run in lost:
            log.warning("durable series %r: the lease of fire time %r was lost (this process"
                        " was paused or starved for longer than the lease?); another process"
                        " may run it again", run.task_id, run.run_at)

    def _call(self, entry: Entry, claim: FireClaim, running: RunningTask, fire: Fire) -> bool:
        """Run the claimed fire time if its lease is provably live now (else leave the
        lease to expire) and record its end; True if it failed: it raised, or the clock
        could not be read to check the lease (the clocks' rule). ``current_fire()``
        gives ``fire`` inside the run."""
        assert entry.fn is not None
        failed, started = True, True
        try:
            if not lease_live(running, self.clock()):
                started = False
                log.warning("durable series %r: fire time %r not started, its lease could not"
                            " be shown live (claimed or renewed too long ago); left to expire"
                            " for another run", claim.series_id, claim.fire_time)
                self.counts.add("series_lease_lapsed")
                return False
            context = CURRENT_FIRE.set(fire)
            try:
                with _local.running(running, self.scheduler):
                    entry.fn(*entry.args, **entry.kwargs)
            finally:
                CURRENT_FIRE.reset(context)
            failed = False
        except Exception as exc:  # noqa: BLE001 - the series' on_error decides
            log.error("durable series %r fire time %r failed:\n%s", claim.series_id,
                      claim.fire_time, "".join(traceback.format_exception(exc)))
            self.counts.add("series_failed")
        finally:
            self._claims.release(claim.token)
            if started:  # while the store is away the lease expires and another re-runs it
                self._guarded(lambda: self._finish(claim, failed), "recording a fire time")
        return failed

    def _finish(self, claim: FireClaim, failed: bool) -> None:
        if not self.table.finish(claim, failed):
            self.counts.add("series_not_recorded")  # its lease expired: another took it

    def _guarded(self, action: Callable[[], object], what: str) -> bool:
        return guarded(action, what, self.counts, "series_store_errors", "durable series")

    def chores(self) -> None:
        """One round of the store chores, each guarded: re-read, re-run the expired, renew."""
        self._guarded(self.sync, "re-reading the series")
        self._guarded(self.rerun_expired, "taking over expired fire times")
        self._guarded(self.heartbeat, "renewing fire-time leases")

    def prune(self) -> None:
        """Forget the claims of fire times older than ``retention`` (None: keep them)."""
        if self.retention is not None:
            self.counts.add("series_pruned", self.table.prune(self.retention))

    def loop(self, closing: Callable[[float], bool], poll: float, prune_every: float) -> None:
        """The series thread: chores every ``poll`` seconds, pruning every ``prune_every``,
        fire times when due, until ``closing(seconds)`` (a sleep cut short when the
        scheduler closes) says it is closing. A round that raises (a failing clock
        reading: the clocks' rule) ends there, logged, and the next begins after
        ``poll``, so the series here never stop firing."""
        next_chores = next_prune = float("-inf")  # both due at the first round
        while not closing(0):
            try:
                now = self.clock()
                if now >= next_chores:
                    self.chores()
                    next_chores = self.clock() + poll
                if now >= next_prune:
                    self._guarded(self.prune, "pruning old fire times")
                    next_prune = self.clock() + prune_every
                self.tick()
                with self.lock:
                    wake = self.book.next_wake()
                    until = next_chores if wake is None else min(wake, next_chores)
                    if not closing(0):
                        left = until - self.clock()
                        self.wakeup.wait(max(0.0, min(left, threading.TIMEOUT_MAX)))
            except Exception:
                log.exception("durable series: a round failed; trying again in %.2f s", poll)
                closing(poll)

    def wake(self) -> None:
        """Wake the series thread: a series changed here."""
        with self.lock:
            self.wakeup.notify_all()

    def owner_of(self, entry: Entry, series: Series) -> StoredSeries:
        """What the handle of ``entry``'s generation acts on, ``series`` being the one
        computed here for it (the book's, or one only to look ahead with)."""
        return StoredSeries(self, entry.row.series_id, entry.generation, series)

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


class StoredSeries:
    """One stored generation of a series, as its ``SeriesHandle`` acts on it here
    (``pysched.calendar.handle.SeriesOwner``); the store was written first.

    ``series`` is the one this process computes for the generation: the book's
    if it runs it here, else one only to look ahead with. ``get``, ``pause`` and
    ``resume`` run under the driver's lock (the handle's); ``cancel`` takes it.
    """

    __slots__ = ("_driver", "_generation", "_series", "_series_id")

    def __init__(self, driver: SeriesDriver, series_id: str, generation: int,
                 series: Series) -> None:
        self._driver = driver
        self._series_id = series_id
        self._generation = generation
        self._series = series

    def _current(self) -> bool:
        entry = self._driver.entries.get(self._series_id)
        return entry is not None and entry.generation == self._generation

    def _in_book(self) -> bool:
        return self._driver.book.get(self._series_id) is self._series

    def get(self, series_id: Hashable) -> Series | None:
        return self._series if self._current() else None

    def pause(self, series_id: Hashable) -> None:
        if self._in_book():
            self._driver.book.pause(series_id)
        else:
            self._series.pause()

    def resume(self, series_id: Hashable, now: Reading) -> None:
        if self._in_book():
            self._driver.book.resume(series_id, now)
        else:
            self._series.resume(now)

    def cancel(self, series: Series) -> bool:
        driver = self._driver
        with driver.lock:
            if self._in_book():
                driver.book.cancel(self._series_id)
            if self._current():
                del driver.entries[self._series_id]
        return True  # the store cancelled it: here it is at an end whatever it was

    def flush(self) -> None:
        self._driver.book.flush()


class DurableSeriesHandle(SeriesHandle):
    """What ``DurableScheduler.schedule_recurring`` returns: one stored generation of a series.

    ``pause``, ``resume`` and ``cancel`` write the store (every process
    follows within its ``poll_interval``) and act here at once. Once the
    series is replaced by id (here or elsewhere) or ended, they do nothing and
    ``cancel`` returns False; once the scheduler is closed they raise
    SchedulerClosed. ``next_fire_times(n)`` are those this process computes
    for the generation.
    """

    __slots__ = ("generation",)

    def __init__(self, driver: SeriesDriver, entry: Entry, series: Series,
                 gate: StoreGate,
                 notes: Callable[[str, int, str | None], None] | None = None) -> None:
        # Its scheduler's gate: the store writes, refused once the scheduler is closed.
        set_state = partial(driver.table.set_state, entry.row.series_id, entry.generation)
        generation = entry.generation

        def note(series_id: Hashable, text: str | None) -> None:
            if notes is not None:  # a pause note, kept with this generation
                gate.call(partial(notes, str(series_id), generation, text))

        super().__init__(driver.owner_of(entry, series), series, read=driver.read,
                         lock=driver.lock, notify=driver.wake,
                         write=lambda state: gate.call(partial(set_state, state)), notes=note)
        self.generation = entry.generation

    def __repr__(self) -> str:
        return f"<DurableSeriesHandle {self.series_id!r} generation {self.generation}>"
