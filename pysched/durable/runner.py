"""DurableScheduler: the core Scheduler as a local heap over a shared, persistent store.

The store holds the truth (versions, states, leases); each process keeps a
core ``pysched.Scheduler`` with one entry per pending row it knows, at the
row's monotonic deadline, only to know when to claim. A version runs here
only after ``Store.claim`` gave this owner its lease, so a cancelled or
superseded version (its row's version moved on) never starts, whatever a
local heap still holds; nor does one whose cancel or replacement reached
this process between its claim and its start.

The work is split by job, each a small object given the collaborators it
needs: ``Mirror`` (the local heap of pending rows), ``Claimer`` (a thread:
claim due batches), ``Runs`` (the worker pool: run claims, queue outcomes),
``Outcomes`` (store them, retrying), ``Heartbeat`` (a thread: renew the
leases in flight), ``Housekeeper`` (a thread: poll, re-read, repair), the
``SeriesDriver`` (a thread: recurring series) and, on PostgreSQL,
``Listener`` (a thread: NOTIFY). The state they share has one owner each,
changed only through its own methods: ``Settings`` (frozen), ``Routing``
(frozen), ``Clocks`` (the one boundary to the user's clocks), ``Lifecycle``,
``Inflight`` (claims in flight, Futures), ``OutcomeQueue`` and ``Counters``.
This module is the public face.

Lock order: the ``Mirror``'s lock, then ``Inflight``'s, then ``Counters``' (each
takes only later ones while held); a ``Wakeup``'s lock and the lifecycle's are
leaves, and the outcome queue needs none. No store call is made under a
lock of the scheduler's (a claim waits for the writes of new versions that
started before it: see ``Inflight.add_versions``), and no thread inside a
store call waits for one. No lock is held across a user callable.

Life cycle: open -> closing (no new schedules, no new claims, claimed runs
not yet started are handed back to the store unrun, running ones finish) ->
closed (outcomes flushed, Futures of versions that did not finish here fail
with SchedulerClosed: their rows stay in the store for the next start).
``close()`` is idempotent and safe to call from inside a task.
"""

from __future__ import annotations

import datetime
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future
from functools import partial
from typing import Any

from .. import events
from .._errors import SchedulerClosed
from .._validate import check_capacity, check_priority, check_time
from ..calendar import Cron, Every, Series
from ..calendar.events import KINDS as SERIES_KINDS
from ..calendar.events import REPLACED
from ..calendar.ledger import RunLedger
from ..jobs import DEFAULT_HISTORY, Job, JobPage
from ..pool.scheduler import check_worker_count
from ..threadpool import ThreadPoolScheduler
from . import _local
from ._claiming import AUTO_PREFETCH_MAX, Claimer
from ._clocks import Clocks
from ._counters import COUNTERS, Counters, guarded
from ._events import DurableEvents
from ._futures import DurableFuture, DurableTaskFailed, cancel_all
from ._gate import StoreGate
from ._heartbeat import Heartbeat
from ._housekeeping import Housekeeper
from ._inflight import Inflight
from ._lifecycle import CLOSED, Lifecycle, Wakeup
from ._listening import Listener
from ._local import current_task
from ._mirror import Mirror
from ._outcome_queue import OutcomeQueue
from ._outcomes import Outcomes
from ._running import Runs
from ._series import DurableSeriesHandle, SeriesDriver
from ._series_spec import Policies, encode_spec
from ._settings import Routing, Settings
from ._walltime import check_wall
from .jobs import StoreJobs
from .reading import connect, target_of
from .registry import REGISTRY, TaskRegistry
from .roster import Roster
from .series_table import ACTIVE, SeriesRow
from .store import NewTask, Store, check_key, encode_args
from .stores import open_store
from .timebase import Timebase

__all__ = ["MIN_LEASE", "MIN_PERIOD", "DurableFuture", "DurableScheduler", "DurableTaskFailed",
           "current_task"]

# The shortest period of a worker thread's rounds (heartbeat, poll_interval,
# resync_interval), in seconds. Each round is a store round trip (a SQLite commit or
# a PostgreSQL query: some 0.1 to 1 ms at best) and a wait; a period below the
# platform's timer granularity (Linux's timer slack is 50 us, Windows's timer ticks
# 1 to 15.6 ms) leaves no wait at all, and the thread spins.
MIN_PERIOD = 0.001
# The shortest lease, in seconds. A claimed run starts only while its lease is
# provably live, within about two thirds of the lease (two heartbeats by default)
# from when its claim was sent: the claim's round trip and the hand-off to a worker
# must fit in that window. 0.1 s leaves 67 ms, and a heartbeat of 33 ms, well above
# MIN_PERIOD: room for a round trip to a database across a network; a shorter lease
# would mostly claim runs that never start, and renew them in a busy loop.
MIN_LEASE = 0.1

log = logging.getLogger("pysched.durable")

_NO_ARGS = encode_args((), None)  # the stored args of a call given none
_NO_FN = object()  # no function looked up yet


class DurableScheduler:
    """A task scheduler whose schedule survives restarts and is shared between processes.

    ``store``: None (in memory), a SQLite path or ``sqlite:///path``, a
    ``postgresql://`` URL or a ``Store``; ``table`` names the table of a store
    opened here from a path or URL (default ``pysched_tasks``). ``schedule()`` is one store write
    plus an O(log n) heap push; claims are batches of up to
    ``max_workers + prefetch`` rows. Left None, ``prefetch`` is ``max_workers``
    grown by up to 256 while this worker finishes that many claims in 0.1 s (and
    in a tenth of ``lease``): large batches for a backlog of short tasks.

    ``owner`` names this process in leases. Leave it None for a unique name;
    give a stable one (say, a host and service name) and a restart under it
    releases that owner's leases at once instead of waiting for them to
    expire (those not renewed within the last two heartbeats). Never share it
    between live processes: if two do, the leases the other still renews are
    kept, with a warning, so nothing runs twice at once.

    ``max_workers=0`` makes a producer (a web process, say): it schedules,
    cancels and watches its Futures, and claims nothing; it keeps no local
    heap and starts no worker, heartbeat or listener thread.

    ``queues``: the queues this worker claims from (None: every queue). A
    worker claims only rows whose task name its ``registry`` knows (or whose
    ``module:function`` its allowed modules cover), so during a rolling
    deploy old workers leave new task names to new ones. Rows due for more
    than ``stale_after`` seconds and unclaimed are counted in ``stats()``.

    ``retention``: finished rows (completed, failed, cancelled, error) are
    deleted this many seconds after they were last written (default a week;
    None keeps them), from once per ``resync_interval``, ``retention_batch``
    rows per transaction (default 1,000): claims and outcomes are written
    between two batches, so a large backlog of old rows never stalls them. A
    pass deletes at most ten batches; while more remain, the next pass runs
    at the next poll (``poll_interval``).

    ``max_clock_skew`` (seconds): on a store with its own clock (PostgreSQL),
    how far this node's wall clock may be from the database's before it is
    refused and the database's used instead, and how far ahead of the
    database's clock the shared high-water mark may be moved.

    ``listeners``: called with every event (task and series) from the
    start, as ``add_listener`` does from its call on. The series stored
    before this scheduler starts are adopted, and their missed fire times
    reported, as soon as it starts: a listener added after the constructor
    returns may miss those events.
    """

    def __init__(self, store: Store | str | os.PathLike[str] | None = None, *,
                 table: str | None = None, max_workers: int = 4, prefetch: int | None = None,
                 owner: str | None = None,
                 lease: float = 30.0, heartbeat: float | None = None,
                 poll_interval: float = 1.0, resync_interval: float = 30.0,
                 max_clock_skew: float = 5.0, queues: Iterable[str] | None = None,
                 retention: float | None = 7 * 86_400.0, retention_batch: int = 1000,
                 stale_after: float = 300.0,
                 registry: TaskRegistry = REGISTRY, executor: Executor | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time,
                 listeners: Iterable[Callable[[Any], object]] = ()) -> None:
        max_workers = self._max_workers = check_worker_count(max_workers)
        listeners = tuple(listeners)
        for listener in listeners:
            if not callable(listener):
                raise TypeError(f"listeners must be callables, not {type(listener).__name__}")
        # No prefetch given: max_workers, grown with the run rate (see _claiming).
        grow = AUTO_PREFETCH_MAX if prefetch is None and max_workers > 0 else 0
        prefetch = max_workers if prefetch is None else check_capacity(prefetch, "prefetch")
        if max_workers == 0 and (prefetch or executor is not None):
            raise ValueError("a producer (max_workers=0) takes no prefetch or executor")
        served = None if queues is None else _queues(queues)
        if retention is not None:
            retention = _positive(retention, "retention")
        retention_batch = check_capacity(retention_batch, "retention_batch")
        if retention_batch == 0:
            raise ValueError("retention_batch must be >= 1, got 0")
        stale_after = _positive(stale_after, "stale_after")
        lease = _positive(lease, "lease", MIN_LEASE)
        beat = _positive(lease / 3 if heartbeat is None else heartbeat, "heartbeat", MIN_PERIOD)
        if beat >= lease:
            raise ValueError("heartbeat must be shorter than lease")
        poll = _positive(poll_interval, "poll_interval", MIN_PERIOD)
        resync_every = _positive(resync_interval, "resync_interval", MIN_PERIOD)
        max_skew = _positive(max_clock_skew, "max_clock_skew")
        if owner is not None and check_key(owner, "owner") == "":
            raise ValueError("owner must be a non-empty str")
        self._owns_store = not isinstance(store, Store)
        if table is not None and (store is None or isinstance(store, Store)):
            raise ValueError("table= applies to a SQLite or PostgreSQL store opened from a path"
                             " or URL here; a Store object has its table already")
        self.store: Store = open_store(store) if table is None else open_store(store, table=table)
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.registry = registry
        if owner is not None:
            self._release_own_leases(owner, lease, beat)
        self.store.requeue_expired()
        clocks = self._clocks = Clocks(clock, wall_clock)  # every reading goes through it
        self.timebase = self._start_time(clocks, max_skew)
        # "_s": the settings, read by most methods here.
        s = self._s = Settings(owner=self.owner, lease=lease, beat=beat, poll=poll,
                               resync_every=resync_every, max_skew=max_skew,
                               cap=max_workers + prefetch, grow=grow, retention=retention,
                               retention_batch=retention_batch,
                               stale_after=stale_after)
        routing = self._routing = Routing(registry, served, claims=max_workers > 0)
        counters = self._counters = Counters(COUNTERS)
        lifecycle = self._lifecycle = Lifecycle(dispatching=max_workers > 0)
        self._events = events.Listeners(log)  # the task events' listeners (pysched.events)
        inflight = self._inflight = Inflight()
        # The store calls of the public methods: SchedulerClosed once the store is let go.
        self._gate = StoreGate(lifecycle)
        queue = OutcomeQueue()
        # What each job thread waits on; every change of the life cycle rings them all.
        claiming, chores, self._beat = Wakeup(), Wakeup(), Wakeup()
        for wakeup in (claiming, chores, self._beat):
            lifecycle.on_change(wakeup.ring)
        self._mirror = Mirror(self.store, routing, self.timebase, inflight, counters,
                              resync_every=resync_every, clock=clocks.mono,
                              changed=claiming.ring)

        def run_ended() -> None:  # room for a claim; maybe an outcome, maybe drained
            claiming.ring()
            chores.ring()

        # The pool runs claimed versions: a ThreadPoolScheduler keyed by lease
        # token (so cancel() reaches a run's token, pysched.current_token()),
        # or any Executor the caller passes. A producer has none.
        pool: Executor | None = executor or (ThreadPoolScheduler(
            max_workers, thread_name_prefix="pysched-durable") if max_workers else None)
        timebase = self.timebase
        self._told = DurableEvents(self._events, self.owner, registry,
                                   lambda: timebase.to_wall(clocks.mono()))
        self._runs = Runs(pool, owns_pool=executor is None, registry=registry,
                          timebase=self.timebase, clock=clocks.mono, lifecycle=lifecycle,
                          inflight=inflight, outcomes=queue, counters=counters, scheduler=self,
                          ended=run_ended, events=self._told)
        outcomes = Outcomes(self.store, queue, self._mirror, counters, poll=poll)
        self._keeper = Housekeeper(s, self.store, timebase=self.timebase, clock=clocks.mono,
                                   lifecycle=lifecycle, inflight=inflight, queue=queue,
                                   mirror=self._mirror, outcomes=outcomes, counters=counters,
                                   wakeup=chores, shut_down=self._shut_down)
        self._series = SeriesDriver(
            self.store.series_table(), owner=self.owner, registry=registry,
            served=lambda ref, queue: routing.served()(ref, queue), read=clocks.read,
            lease=lease, start=self._runs.submit, clock=clocks.mono, live_until=s.live_until,
            scheduler=self, retention=retention)
        # This process's counts of its series' skipped, coalesced and late fire times.
        ledger = RunLedger(DEFAULT_HISTORY)
        self._series.hub.add_listener(ledger.observe)
        self._jobs = StoreJobs(self.store, ledger, self.timebase.to_mono)
        for listener in listeners:  # before the series thread adopts anything
            self.add_listener(listener)
        # Series runs are renewed on the heartbeat's own thread too, so a slow re-read
        # of the series never lets a lease lapse.
        # A worker on a SQL store says what it serves beside its heartbeat (roster.py).
        target = target_of(self.store)
        self._roster = None if not max_workers or target is None else Roster(
            connect(target, writable=True), getattr(self.store, "table", "pysched_tasks"),
            self.owner, routing.serves, self.store.now)
        self._heartbeat = Heartbeat(s, self.store, clock=clocks.mono, lifecycle=lifecycle,
                                    inflight=inflight, counters=counters, wakeup=self._beat,
                                    waiting=queue.tokens,
                                    also=partial(_beat_also, self._series.heartbeat,
                                                 self._roster, counters),
                                    lost=self._told.lease_lost)
        jobs: list[tuple[str, Callable[[], None]]] = [("keeper", self._keeper.run)]
        if max_workers:
            self._mirror.resync()
            claimer = Claimer(s, self.store, routing=routing, mirror=self._mirror,
                              runs=self._runs, inflight=inflight, lifecycle=lifecycle,
                              counters=counters, clock=clocks.mono, wakeup=claiming)
            jobs += [("claim", claimer.run), ("heartbeat", self._heartbeat.run),
                     ("series", lambda: self._series.loop(lifecycle.wait_closing,
                                                          min(poll, beat), resync_every))]
            if self.store.notifies:
                jobs.append(("listen", Listener(self.store, self._mirror, lifecycle, counters,
                                                poll=poll).run))
        self._threads = [threading.Thread(target=run, name=f"pysched-durable-{name}",
                                          daemon=True) for name, run in jobs]
        for thread in self._threads:
            thread.start()

    def _release_own_leases(self, owner: str, lease: float, beat: float) -> None:
        """A restart under ``owner``: release at once the leases it held when it died.

        A live process renews its leases every ``beat``; one not renewed for two
        beats (one, and as much again for a late renewal) is a dead one's. A
        lease renewed since may be another live process's under the same owner:
        releasing it would run that version twice at once, so it is kept (its
        holder finishes it, or it expires) and a warning says the owner is shared.
        """
        self.store.release_owner(owner, expiring_within=lease - 2 * beat)
        kept = self.store.held_by(owner)
        if kept:
            log.warning("owner %r holds %d lease(s) renewed within the last %s s: another live"
                        " process is using this owner (give each process its own), or one"
                        " stopped moments ago; they are left to finish or to expire in at most"
                        " %s s", owner, len(kept), 2 * beat, lease)

    def _start_time(self, clocks: Clocks, max_skew: float) -> Timebase:
        """The time map, checked against the store's clock if it has its own."""
        reference = self.store.now() if self.store.reference_clock else None
        high_water = self.store.wall_high_water()
        timebase = Timebase(clocks.mono, clocks.wall, high_water, reference, max_skew)
        if timebase.clock_refused:
            log.error("this node's wall clock is %.3f s off the database's (limit %s s):"
                      " using the database's clock instead", timebase.skew, max_skew)
        if timebase.mark_refused:
            log.error("the shared wall-clock mark %.3f is more than %s s ahead of the"
                      " database's clock %.3f (a node's clock was fast): ignoring it",
                      high_water, max_skew, reference)
        if not timebase.clock_refused:
            self.store.wall_high_water(timebase.wall0)
        if timebase.wall_jumped_back:
            log.warning("wall clock is behind the store's latest instant; using that instead")
        return timebase

    # -- public API ------------------------------------------------------------------------

    @property
    def clock(self) -> Callable[[], float]:
        """The monotonic clock that ``run_at`` is measured on (each reading checked)."""
        return self._clocks.mono

    def schedule(self, task_id: str, run_at: float, priority: int, fn: Callable[..., Any],
                 args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None, *,
                 queue: str | None = None) -> DurableFuture:
        """Store ``fn(*args, **kwargs)`` due at ``run_at`` (on ``clock``) as a new version.

        ``fn`` must be a registered task or an allowed module-level function
        (NotDurable otherwise, for lambdas too); args must be JSON; ``task_id``
        a str of at most 1024 UTF-8 bytes with no NUL (ValueError). ``queue``
        overrides the task's registered queue. Returns the Future of the new
        version. One store transaction, O(log n) here.
        """
        return self.schedule_many([(task_id, run_at, priority, fn, args, kwargs)],
                                  queue=queue)[0]

    def schedule_in(self, task_id: str, delay: float, priority: int, fn: Callable[..., Any],
                    args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None, *,
                    queue: str | None = None) -> DurableFuture:
        """``schedule()`` at ``delay`` (>= 0) seconds from now, as on ThreadPoolScheduler."""
        delay = check_time(delay, "delay")
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay!r}")
        run_at = self._clocks.mono() + delay
        check_wall(self.timebase.to_wall(run_at), "delay", delay)
        return self.schedule(task_id, run_at, priority, fn, args, kwargs, queue=queue)

    def schedule_at(self, task_id: str, when: datetime.datetime, priority: int,
                    fn: Callable[..., Any], args: Sequence[Any] = (),
                    kwargs: dict[str, Any] | None = None, *,
                    queue: str | None = None) -> DurableFuture:
        """``schedule()`` at the wall-clock instant ``when``, an aware ``datetime``.

        Stored as that instant (not converted through this process's monotonic
        clock), so another process runs it at ``when`` as its clock sees it.
        A naive datetime raises ValueError: its zone would be a guess.
        """
        if not isinstance(when, datetime.datetime):
            raise TypeError(f"when must be a datetime, not {type(when).__name__}")
        if when.tzinfo is None or when.utcoffset() is None:
            raise ValueError(f"when must be an aware datetime (with a tzinfo), got {when!r}")
        check_wall(when.timestamp(), "when", when)  # 9999-12-31 23:00-05:00 is in year 10000
        return self.schedule_many([(task_id, self.timebase.to_mono(when.timestamp()), priority,
                                    fn, args, kwargs)], queue=queue)[0]

    def schedule_many(self, items: Iterable[Sequence[Any]], *,
                      queue: str | None = None) -> list[DurableFuture]:
        """``schedule`` many ``(task_id, run_at, priority, fn[, args[, kwargs]])`` at once.

        All are checked before any is stored: one bad item stores none. One
        store transaction. ``queue`` overrides each task's registered queue.
        """
        if queue is not None:
            check_key(queue, "queue")
        new = []
        to_wall = self.timebase.to_wall
        last_fn: Any = _NO_FN  # the batch's items mostly name one function: looked up once
        for item in items:
            task_id, run_at, priority, fn, *rest = item
            check_key(task_id, "task_id")
            run_at = check_time(run_at, "run_at")
            wall = to_wall(run_at)
            check_wall(wall, "run_at", run_at)
            args = _args_text(*rest)
            if fn is not last_fn:
                ref = self.registry.reference(fn)
                task_queue = queue or self.registry.options(ref).queue
                last_fn = fn
            new.append(NewTask(task_id, wall, check_priority(priority), ref, args, task_queue))
        self._check_open()

        def write() -> list[tuple[str, int]]:
            return list(zip([task.task_id for task in new], self.store.schedule(new),
                            strict=True))

        futures, cancelled = self._inflight.add_versions(write, self._future)
        if self._events.wanted:  # posted before the claiming thread can see them
            self._tell_scheduled(new, futures, cancelled)
        if self._routing.claims:  # a producer keeps no local heap
            served = self._routing.served()
            self._mirror.scheduled([(task.task_id, future.version, task.run_at, task.priority,
                                     served(task.ref, task.queue))
                                    for task, future in zip(new, futures, strict=True)])
        cancel_all(cancelled)
        self._events.deliver()
        for task in new:  # a task id is one thing: a one-shot replaces its series
            if self._series.holds(task.task_id):
                self._series.end(task.task_id, REPLACED)
        return futures

    def _tell_scheduled(self, new: list[NewTask], futures: list[DurableFuture],
                        replaced: list[DurableFuture]) -> None:
        """The events of stored versions, and of the versions known here they replaced."""
        self._told.scheduled((task, future.version)
                             for task, future in zip(new, futures, strict=True))
        refs = {task.task_id: task for task in new}
        for old in replaced:  # told after the version that replaced it, as in the pool
            task = refs[old.task_id]
            self._told.ended(events.REPLACED, old.task_id, old.version,
                             {"ref": task.ref, "queue": task.queue}, REPLACED, post_only=True)

    def cancel(self, task_id: str) -> bool:
        """Cancel the pending version of ``task_id`` everywhere, and flag its run here if it runs.

        Returns False when nothing of it is pending or running in the store.
        A version already running (here or elsewhere) runs on; here its
        ``current_task().cancel_requested`` turns true; one claimed here but not
        started never starts. One store write; SchedulerClosed once closed.
        """
        check_key(task_id, "task_id")
        version = self._gate.call(partial(self.store.cancel, task_id))
        series = self._gate.call(partial(self._series.end, task_id))
        if version is None:
            return series
        cancelled = self._mirror.cancel_local(task_id, version)
        self._runs.cancel(self._inflight.request_cancel(task_id))
        cancel_all(cancelled)
        if events.CANCELLED in self._events.wanted:
            self._tell_cancelled(task_id, version - 1)  # the store bumped it by one
        return True

    def _tell_cancelled(self, task_id: str, version: int) -> None:
        """The event of a version cancelled here; its row tells its name (one store read)."""
        rows: list[dict[str, Any] | None] = []
        guarded(lambda: rows.append(self.store.get(task_id)), "reading a cancelled row",
                self._counters)
        self._told.ended(events.CANCELLED, task_id, version, rows[0] if rows else None,
                         "cancelled")

    def retry(self, task_id: str) -> DurableFuture | None:
        """Put a failed or errored task back as a new version due now (attempts from 1).

        Returns its Future, or None when the row is not failed or error. One
        store write.
        """
        check_key(task_id, "task_id")
        self._check_open()

        def write() -> list[tuple[str, int]]:
            version = self.store.retry(task_id)
            return [] if version is None else [(task_id, version)]

        futures, _ = self._inflight.add_versions(write, self._future)
        if not futures:
            return None
        # Its ref and queue are in the row: a re-read puts it here if this worker serves it.
        guarded(lambda: self._mirror.sync(self.store.rows([task_id])), "re-reading a retry",
                self._counters)
        return futures[0]

    def schedule_recurring(self, task_id: str, trigger: Cron | Every, priority: int,
                           fn: Callable[..., Any], args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None, *,
                           misfire_grace: float | None = 1.0, catch_up: str = "latest",
                           overlap: str = "skip", on_error: str = "continue",
                           max_catch_up: int = 100,
                           queue: str | None = None) -> DurableSeriesHandle:
        """Store a recurring series: ``fn(*args, **kwargs)`` at each fire time of ``trigger``.

        The series is a row holding the trigger as data (a ``Cron``'s
        expression, zone and DST policy, or an ``Every``'s period and start;
        an ``Every`` without a start is anchored now) and the policies, which
        are ``pysched.calendar.Series``'s, as in ``ThreadPoolScheduler``. Fire
        times are wall-clock instants; every worker process on the store runs
        the series, and each fire time is claimed once by a unique key, so it
        runs in one process, again elsewhere only if that process died
        mid-run. The same ``task_id`` again replaces the whole series. Returns
        a handle with ``next_fire_times(n)``, ``pause()``, ``resume()`` and
        ``cancel()``. Events go to ``add_listener``; counts are in ``stats()``.
        """
        check_key(task_id, "task_id")
        priority = check_priority(priority)
        if not isinstance(trigger, (Cron, Every)):
            raise TypeError(f"trigger must be a Cron or an Every, not {type(trigger).__name__}")
        ref = self.registry.reference(fn)
        args_text = encode_args(args, kwargs)
        queue = self.registry.options(ref).queue if queue is None else check_key(queue, "queue")
        now = self._clocks.read()  # a failing reading raises here: nothing is stored
        # Checks every policy (naming the argument) before anything is stored.
        probe = Series(task_id, trigger, now, timeline="wall",
                       last_fire=now.wall if isinstance(trigger, Cron) else None,
                       misfire_grace=misfire_grace, catch_up=catch_up, overlap=overlap,
                       on_error=on_error, max_catch_up=max_catch_up)
        spec = encode_spec(trigger, Policies(misfire_grace, catch_up, overlap, on_error,
                                             max_catch_up), now.wall)
        self._check_open()
        self._gate.call(partial(self._replace_one_shot, task_id))
        generation = self._gate.call(partial(self._series.table.put, task_id, spec, ref,
                                             args_text, priority, queue, now.wall))
        entry = self._series.adopt(SeriesRow(task_id, generation, ACTIVE, spec, ref, args_text,
                                             priority, queue, now.wall, None), now)
        return DurableSeriesHandle(self._series, entry, entry.series or probe, self._gate,
                                   self._jobs.set_note)

    def _replace_one_shot(self, task_id: str) -> None:
        """A series of ``task_id`` replaces its pending one-shot version (a running one runs on)."""
        version = self.store.cancel(task_id)
        if version is not None:
            cancel_all(self._mirror.cancel_local(task_id, version))

    def add_listener(self, fn: Callable[[Any], object],
                     kinds: Iterable[str] | None = None) -> None:
        """Call ``fn(event)`` for each event of ``kinds`` (None: every kind) from now on.

        Task events are ``pysched.events.TaskEvent``s (``TASK_KINDS``); the
        recurring series' are ``pysched.calendar.Event``s (skipped, coalesced,
        late, failed, stopped, clock_jump). ``fn`` runs outside every lock of
        the scheduler, on the thread where the event happened; if it raises,
        that is logged on "pysched.durable" (series events: "pysched.calendar")
        and the other listeners still run. Unknown kinds: ValueError, nothing
        added.
        """
        events.add_listener(fn, kinds, self._events, self._series.hub, SERIES_KINDS)

    def remove_listener(self, fn: Callable[[Any], object]) -> None:
        """Stop calling ``fn``; KeyError if it was not added."""
        events.remove_listener(fn, self._events, self._series.hub)

    def row(self, task_id: str) -> dict[str, Any] | None:
        """The stored row of ``task_id`` (every column), or None. One store read.
        SchedulerClosed once closed."""
        return self._gate.call(partial(self.store.get, task_id))

    def jobs(self, state: str | None = None, *, queue: str | None = None,
             name: str | None = None, limit: int = 100, after: str | None = None) -> JobPage:
        """A page of the store's jobs as snapshots (``pysched.jobs``): the series first (by
        id, with their next fire times and newest fire times claimed), then the tasks in
        due order (``TaskInfo.due`` on ``clock``).

        ``state``: only jobs in it, a task's ("pending", "running", "completed",
        "failed", "error", "cancelled") or a series' ("active", "paused", "cancelled";
        cancelled series only then). ``queue`` and ``name`` (a registered task name):
        only jobs of them. ``limit``: at most this many (1 to 500); ``after``: the page
        after the one whose ``next`` this is. Keyset pages, one index range scan each on
        SQLite and PostgreSQL, as fast far into a million rows as at the start (a
        ``MemoryStore`` scans its rows). A page holds fewer than ``limit`` where series
        of another queue or name were left out. ValueError naming a bad argument;
        SchedulerClosed once closed. The counters of a ``SeriesInfo`` are those this
        process saw (the store keeps no skipped fire times).
        """
        if queue is not None:
            check_key(queue, "queue")
        if name is not None:
            check_key(name, "name")
        return self._gate.call(partial(self._jobs.jobs, state, queue, name, limit, after))

    def describe(self, task_id: str) -> Job | None:
        """The snapshot of ``task_id``: its active or paused series (``SeriesInfo``), else
        its task row (``TaskInfo``: state, due, priority, version, attempts, last outcome
        and error); a cancelled series if that is all there is; None when the store holds
        nothing of it. A few primary-key reads. SchedulerClosed once closed."""
        check_key(task_id, "task_id")
        return self._gate.call(partial(self._jobs.describe, task_id))

    def stats(self) -> dict[str, Any]:
        """This process's view: owner, state, ``max_workers``, local pending entries, runs in
        flight, and counters (claims, re-runs, outcomes by state, re-reads, store errors, ...)."""
        count, oldest = self._keeper.unclaimed
        queues = self._routing.queues
        return {"owner": self.owner, "state": self._lifecycle.state,
                "max_workers": self._max_workers,
                "queues": None if queues is None else list(queues),
                "local_pending": len(self._mirror), "inflight": len(self._inflight),
                "unclaimed": count, "oldest_unclaimed_run_at": oldest,
                **self._counters.snapshot(), **self._series.counts.snapshot(),
                "series_events": self._series.hub.stats()}

    def close(self, wait: bool = True, timeout: float | None = None) -> bool:
        """Stop claiming; hand back unstarted claims; let running versions finish.

        Pending rows stay in the store. With ``wait``, returns once closed (or
        after ``timeout``); from inside one of its own tasks it never waits.
        Returns whether it is closed. Idempotent.
        """
        if self._lifecycle.begin_close():
            self._series.close()  # its thread stops; its series say "closed" here
        if not wait or _local.inside(self):
            return self._lifecycle.state == CLOSED
        return self._lifecycle.wait_closed(timeout)

    @property
    def closed(self) -> bool:
        """True once close() has finished."""
        return self._lifecycle.state == CLOSED

    @property
    def state(self) -> str:
        """open, closing or closed."""
        return self._lifecycle.state

    def __enter__(self) -> DurableScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    def _check_open(self) -> None:
        if not self._lifecycle.is_open:
            raise SchedulerClosed("the durable scheduler is closed")

    def _future(self, task_id: str, version: int) -> DurableFuture:
        return DurableFuture(self._cancel_version, task_id, version)

    def _cancel_version(self, future: DurableFuture) -> bool:
        """``future.cancel()``: cancel its version in the store if still pending there
        (False once closed: its Future fails with SchedulerClosed)."""
        try:
            cancelled = self._gate.call(partial(self.store.cancel, future.task_id,
                                                future.version))
        except SchedulerClosed:
            return False
        if cancelled is None:
            return False
        self._mirror.cancel_local(future.task_id, future.version + 1)
        if events.CANCELLED in self._events.wanted:
            self._tell_cancelled(future.task_id, future.version)
        return Future.cancel(future)

    def _shut_down(self) -> None:
        """The housekeeper's last act, once drained: join the other threads, close what is
        ours, fail the Futures of versions that did not run here."""
        self._beat.ring()
        for thread in self._threads:
            if thread is not threading.current_thread() and not thread.name.endswith("claim"):
                thread.join()
        self._runs.close_pool(wait=True)
        self._jobs.close()
        if self._roster is not None:
            guarded(self._roster.leave, "leaving the workers' roster", self._counters)
        self._lifecycle.release_store()
        if self._owns_store:
            self.store.close()
        futures = self._inflight.close()
        self._lifecycle.finish()
        for future in futures:
            if not future.done():
                future.set_exception(SchedulerClosed(
                    f"closed before task {future.task_id!r} version {future.version} ran here;"
                    " it stays in the store"))


def _beat_also(series_beat: Callable[[], object], roster: Roster | None,
               counters: Counters) -> None:
    """The heartbeat's other chores: renew the series' fire-time leases, then write the
    roster; each guarded, so one failing never skips the other."""
    guarded(series_beat, "series heartbeat", counters)
    if roster is not None:
        guarded(roster.beat, "workers' roster", counters)


def _args_text(args: Any = (), kwargs: Any = None) -> str:
    """``encode_args``, with no JSON encoding for the common call given no arguments."""
    if type(args) in (tuple, list) and not args and (
            kwargs is None or type(kwargs) is dict and not kwargs):
        return _NO_ARGS
    return encode_args(args, kwargs)


def _queues(queues: Iterable[str]) -> tuple[str, ...]:
    if isinstance(queues, str):
        raise TypeError("queues must be an iterable of str, not a str")
    served = tuple(check_key(q, "queue") for q in queues)
    if not served:
        raise ValueError("queues must name at least one queue (None serves every queue)")
    return served


def _positive(value: Any, name: str, minimum: float = 0.0) -> float:
    """``value`` as seconds: more than 0, at least ``minimum``, at most a thread's wait."""
    seconds = check_time(value, name)
    if seconds <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    if seconds < minimum:
        raise ValueError(f"{name} must be at least {minimum} s, got {value!r}")
    # Each of these durations (or a part of one) is a wait of a worker thread,
    # which raises OverflowError past the platform's limit (about 292 years).
    if seconds > threading.TIMEOUT_MAX:
        raise ValueError(f"{name} must be at most {threading.TIMEOUT_MAX:.0f} s, got {value!r}")
    return seconds
