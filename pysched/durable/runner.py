"""DurableScheduler: the core Scheduler as a local heap over a shared, persistent store.

The store holds the truth (versions, states, leases); each process keeps a
core ``pysched.Scheduler`` with one entry per pending row it knows, at the
row's monotonic deadline, only to know when to claim. Invariants:

- A version runs here only after ``Store.claim`` gave this owner its lease,
  so a cancelled or superseded version (its row's version moved on) never
  starts, whatever a local heap still holds.
- A local entry's version only grows; one is dropped when the store shows
  the row at that version or newer in any other state. Heaps that miss a
  write are repaired by the next notification, poll or full resync: a stale
  entry costs one failed claim, never a wrong run.
- At most ``max_workers + prefetch`` claimed versions are in flight here;
  claimed ones hold leases, renewed by heartbeat until their outcome is
  stored by a conditional update on the claim's token.

Threads: a dispatcher (waits for the head, claims, hands runs to the
worker pool), a housekeeper (stores outcomes in batches, heartbeats, requeues
expired leases, polls or resyncs) and, on PostgreSQL, a listener for
NOTIFY. Lock order: ``_lock`` is never held across a user callable or a
Future callback, and across one store call only (the write in
``schedule_many``); no thread inside a store call waits for ``_lock``. A
callable that raises fails its version (recorded with the error text) and
the worker survives.

Life cycle: open -> closing (no new schedules, no new claims, claimed runs
not yet started are handed back to the store unrun, running ones finish) ->
closed (outcomes flushed, Futures of versions that did not finish here fail
with SchedulerClosed: their rows stay in the store for the next start).
``close()`` is idempotent and safe to call from inside a task.
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future
from typing import Any

from .._errors import SchedulerClosed
from .._impl import Scheduler, Task
from .._validate import check_capacity, check_priority, check_time
from ..threadpool import ThreadPoolScheduler
from . import _local
from ._local import RunningTask, current_task
from .errors import BadRow, UnknownTask
from .registry import REGISTRY, TaskRegistry
from .store import (
    COMPLETED,
    ERROR,
    FAILED,
    FINAL_STATES,
    PENDING,
    Claim,
    NewTask,
    Outcome,
    Row,
    Store,
    check_claim,
    check_fields,
    check_key,
    encode_args,
)
from .stores import open_store
from .timebase import Timebase

log = logging.getLogger("pysched.durable")

OPEN, CLOSING, CLOSED = "open", "closing", "closed"

__all__ = ["DurableFuture", "DurableScheduler", "DurableTaskFailed", "current_task"]


class DurableFuture(Future):  # type: ignore[type-arg]
    """The Future of one stored version, as this process sees it.

    It resolves with the callable's return value or exception when the
    version runs here; with None or ``DurableTaskFailed`` when this process
    sees it finished elsewhere; it is cancelled when the version is
    cancelled or replaced anywhere. ``cancel()`` cancels the version in the
    store if it is still pending there.
    """

    def __init__(self, scheduler: DurableScheduler, task_id: str, version: int) -> None:
        super().__init__()
        self._scheduler = scheduler
        self.task_id = task_id
        self.version = version

    def cancel(self) -> bool:
        if self.done():
            return super().cancel()
        return self._scheduler._cancel_version(self)


class DurableTaskFailed(Exception):
    """A version failed (or its row was unusable) in another process."""


class DurableScheduler:
    """A task scheduler whose schedule survives restarts and is shared between processes.

    ``store``: None (in memory), a SQLite path, a ``postgresql://`` URL or a
    ``Store``. ``schedule()`` is one store write plus an O(log n) heap push;
    claims are batches of up to ``max_workers + prefetch`` rows.

    ``owner`` names this process in leases. Leave it None for a unique name;
    give a stable one (say, a host and service name) and a restart under it
    releases that owner's leases at once instead of waiting for them to
    expire: then no two live processes may share it.
    """

    def __init__(self, store: Store | str | os.PathLike[str] | None = None, *,
                 max_workers: int = 4, prefetch: int | None = None, owner: str | None = None,
                 lease: float = 30.0, heartbeat: float | None = None,
                 poll_interval: float = 1.0, resync_interval: float = 30.0,
                 registry: TaskRegistry = REGISTRY, executor: Executor | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        max_workers = check_capacity(max_workers, "max_workers")
        if max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        prefetch = max_workers if prefetch is None else check_capacity(prefetch, "prefetch")
        self._lease = _positive(lease, "lease")
        self._beat = _positive(self._lease / 3 if heartbeat is None else heartbeat, "heartbeat")
        if self._beat >= self._lease:
            raise ValueError("heartbeat must be shorter than lease")
        self._poll = _positive(poll_interval, "poll_interval")
        self._resync_every = _positive(resync_interval, "resync_interval")
        if owner is not None and (check_key(owner, "owner") == ""):
            raise ValueError("owner must be a non-empty str")
        self._owns_store = not isinstance(store, Store)
        self.store: Store = open_store(store)
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.registry = registry
        self._cap = max_workers + prefetch
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)  # dispatcher: head, room or state changed
        self._chores = threading.Condition(self._lock)  # housekeeper: outcomes or closing
        self._core = Scheduler(clock=clock)
        self._clock = clock
        self._local: dict[str, _Entry] = {}  # task id -> its pending entry in _core
        self._epoch = 0  # counts local puts, so a full resync spares entries newer than its read
        self._inflight: dict[str, RunningTask] = {}  # lease token -> claimed, not yet finished
        self._outcomes: list[tuple[Outcome, DurableFuture | None, Any]] = []
        self._futures: dict[str, dict[int, DurableFuture]] = {}
        self._state = OPEN
        self._dispatching = True  # until the dispatcher thread has exited
        self._counts = dict.fromkeys(("claimed", "reruns", "completed", "failed", "errors",
                                      "not_recorded", "handed_back", "claim_rounds",
                                      "resyncs", "bad_rows", "store_errors"), 0)
        if owner is not None:
            self.store.release_owner(owner)  # a restart: whatever it held died with it
        self.store.requeue_expired()
        self.timebase = Timebase(clock, wall_clock, self.store.wall_high_water())
        self.store.wall_high_water(self.timebase.wall0)
        if self.timebase.wall_jumped_back:
            log.warning("wall clock is behind the store's latest instant; using that instead")
        self._resync()
        # The pool runs claimed versions: a ThreadPoolScheduler keyed by lease
        # token (so cancel() reaches a run's token, pysched.current_token()),
        # or any Executor the caller passes.
        self._pool: Executor = executor or ThreadPoolScheduler(
            max_workers, thread_name_prefix="pysched-durable")
        self._owns_pool = executor is None
        self._threads = [threading.Thread(target=self._dispatch, name="pysched-durable-dispatch",
                                          daemon=True),
                         threading.Thread(target=self._housekeep, name="pysched-durable-keeper",
                                          daemon=True)]
        if self.store.notifies:
            self._threads.append(threading.Thread(target=self._listen, daemon=True,
                                                  name="pysched-durable-listen"))
        for thread in self._threads:
            thread.start()

    # -- public API ------------------------------------------------------------------------

    @property
    def clock(self) -> Callable[[], float]:
        """The monotonic clock that ``run_at`` is measured on."""
        return self._clock

    def schedule(self, task_id: str, run_at: float, priority: int, fn: Callable[..., Any],
                 args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None) -> DurableFuture:
        """Store ``fn(*args, **kwargs)`` due at ``run_at`` (on ``clock``) as a new version.

        ``fn`` must be a registered task or an allowed module-level function
        (NotDurable otherwise, for lambdas too); args must be JSON. Returns
        the Future of the new version. One store transaction, O(log n) here.
        """
        return self.schedule_many([(task_id, run_at, priority, fn, args, kwargs)])[0]

    def schedule_in(self, task_id: str, delay: float, priority: int, fn: Callable[..., Any],
                    args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None
                    ) -> DurableFuture:
        """``schedule()`` at ``delay`` (>= 0) seconds from now, as on ThreadPoolScheduler."""
        delay = check_time(delay, "delay")
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay!r}")
        return self.schedule(task_id, self._clock() + delay, priority, fn, args, kwargs)

    def schedule_many(self, items: Iterable[Sequence[Any]]) -> list[DurableFuture]:
        """``schedule`` many ``(task_id, run_at, priority, fn[, args[, kwargs]])`` at once.

        All are checked before any is stored: one bad item stores none.
        """
        new = []
        for item in items:
            task_id, run_at, priority, fn, *rest = item
            check_key(task_id, "task_id")
            run_at = check_time(run_at, "run_at")
            args = encode_args(rest[0] if rest else (), rest[1] if len(rest) > 1 else None)
            new.append(NewTask(task_id, self.timebase.to_wall(run_at), check_priority(priority),
                               self.registry.reference(fn), args))
        futures, cancelled = [], []
        with self._lock:
            self._check_open()
            # The one store call made under _lock: otherwise the dispatcher
            # could claim, run and finish a version before its Future exists.
            versions = self.store.schedule(new)
            for task, version in zip(new, versions, strict=True):
                self._put_local(task.task_id, version, task.run_at, task.priority)
                cancelled += self._supersede(task.task_id, version)
                future = DurableFuture(self, task.task_id, version)
                self._futures.setdefault(task.task_id, {})[version] = future
                futures.append(future)
            self._wake.notify()
        for future in cancelled:
            Future.cancel(future)
        return futures

    def cancel(self, task_id: str) -> bool:
        """Cancel the pending version of ``task_id`` everywhere, and flag its run here if it runs.

        Returns False when nothing of it is pending or running in the store.
        A version already running (here or elsewhere) runs on; here its
        ``current_task().cancel_requested`` turns true. One store write.
        """
        check_key(task_id, "task_id")
        version = self.store.cancel(task_id)
        if version is None:
            return False
        with self._lock:
            self._drop_local(task_id, version)
            cancelled = self._supersede(task_id, version)
            tokens = []
            for running in self._inflight.values():
                if running.task_id == task_id:
                    running.cancel_requested = True
                    tokens.append(running.token)
        if isinstance(self._pool, ThreadPoolScheduler):
            for token in tokens:  # sets a running version's token; an unstarted one never starts
                self._pool.cancel(token)
        for future in cancelled:
            Future.cancel(future)
        return True

    def row(self, task_id: str) -> dict[str, Any] | None:
        """The stored row of ``task_id`` (every column), or None."""
        return self.store.get(task_id)

    def stats(self) -> dict[str, Any]:
        """Counters: claims, re-runs (claims of an attempt after the first), outcomes, errors."""
        with self._lock:
            return {"owner": self.owner, "state": self._state, "local_pending": len(self._local),
                    "inflight": len(self._inflight), **self._counts}

    def close(self, wait: bool = True, timeout: float | None = None) -> bool:
        """Stop claiming; hand back unstarted claims; let running versions finish.

        Pending rows stay in the store. With ``wait``, returns once closed (or
        after ``timeout``); from inside one of its own tasks it never waits.
        Returns whether it is closed. Idempotent.
        """
        with self._lock:
            if self._state == OPEN:
                self._state = CLOSING
                self._wake.notify_all()
                self._chores.notify_all()
            if not wait or _local.inside(self):
                return self._state == CLOSED
            deadline = None if timeout is None else time.monotonic() + timeout
            while self._state != CLOSED:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._chores.wait(left)
            return True

    @property
    def closed(self) -> bool:
        """True once close() has finished."""
        return self._state == CLOSED

    @property
    def state(self) -> str:
        """open, closing or closed."""
        return self._state

    def __enter__(self) -> DurableScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- local heap (all under _lock) ------------------------------------------------------

    def _check_open(self) -> None:
        if self._state != OPEN:
            raise SchedulerClosed("the durable scheduler is closed")

    def _put_local(self, task_id: str, version: int, wall: float, priority: int) -> None:
        old = self._local.get(task_id)
        if old is not None and old.version >= version:
            return
        self._epoch += 1
        entry = _Entry(task_id, version, wall, priority, self._epoch)
        self._core.schedule(task_id, self.timebase.to_mono(wall), priority, entry)
        self._local[task_id] = entry

    def _drop_local(self, task_id: str, version: int) -> None:
        """Forget the local entry of ``task_id`` if it is at ``version`` or older."""
        old = self._local.get(task_id)
        if old is not None and old.version <= version:
            del self._local[task_id]
            self._core.cancel(task_id)

    def _supersede(self, task_id: str, version: int) -> list[DurableFuture]:
        """Take out the Futures of versions older than ``version`` that are not running here."""
        futures = self._futures.get(task_id)
        if not futures:
            return []
        running = {r.version for r in self._inflight.values() if r.task_id == task_id}
        old = [v for v in futures if v < version and v not in running]
        return [futures.pop(v) for v in old]

    def _apply(self, rows: Sequence[Row], full_epoch: int | None = None
               ) -> tuple[list[tuple[Row, str]], list[tuple[DurableFuture, Row]]]:
        """Bring the local heap in step with ``rows``; return bad rows and Futures to settle.

        With ``full_epoch`` the rows are every pending row as read after that
        epoch: local entries put before it that the read did not return go.
        """
        bad, settle = [], []
        pending = set()
        running_here = {(r.task_id, r.version) for r in self._inflight.values()}
        for row in rows:
            try:
                check_fields(row.version, row.run_at, row.priority)
            except BadRow as exc:
                bad.append((row, str(exc)))
                continue
            if row.state == PENDING and not row.blocked:
                pending.add(row.task_id)
                if (row.task_id, row.version) not in running_here:
                    self._put_local(row.task_id, row.version, row.run_at, row.priority)
            else:
                self._drop_local(row.task_id, row.version)
            # A final state settles this version's Future too (unless it runs here).
            upto = row.version + 1 if row.state in FINAL_STATES else row.version
            settle += [(f, row) for f in self._supersede(row.task_id, upto)]
        if full_epoch is not None:
            for task_id, entry in list(self._local.items()):
                if entry.epoch <= full_epoch and task_id not in pending:
                    self._drop_local(task_id, entry.version)
        self._wake.notify()
        return bad, settle

    def _sync(self, rows: Sequence[Row], full_epoch: int | None = None) -> None:
        """``_apply`` under the lock, then record bad rows and settle Futures outside it."""
        with self._lock:
            bad, settle = self._apply(rows, full_epoch)
            self._counts["bad_rows"] += len(bad)
        for row, message in bad:
            log.error("task %r version %r: %s", row.task_id, row.version, message)
            self.store.mark_error(row.task_id, row.version, message)
        for future, row in settle:
            _settle_from_row(future, row)

    def _resync(self) -> None:
        """Re-read every pending row."""
        with self._lock:
            epoch = self._epoch
            self._counts["resyncs"] += 1
        self._sync(self.store.rows(), epoch)

    def _settle_watched(self) -> None:
        """Re-read the rows of Futures whose versions are neither pending nor running here.

        Their versions run (or were cancelled) in other processes, which
        send no notification for a finish. O(such Futures) per poll.
        """
        with self._lock:
            running = {r.task_id for r in self._inflight.values()}
            watched = [i for i in self._futures if i not in self._local and i not in running]
        if watched:
            self._sync(self.store.rows(watched))

    # -- threads ---------------------------------------------------------------------------

    def _dispatch(self) -> None:
        """Wait for the local head; claim a batch; hand it to the worker pool."""
        try:
            while True:
                with self._lock:
                    popped: list[_Entry] = []
                    while True:
                        if self._state != OPEN:
                            return
                        room = self._cap - len(self._inflight)
                        delay = self._pop_due(room, popped) if room > 0 else None
                        if popped:
                            break
                        self._wake.wait(self._poll if delay is None else min(delay, self._poll))
                self._claim(popped, room)
        finally:
            if self._owns_pool:  # its unstarted claims are cancelled: handed back
                self._pool.close(wait=False)  # type: ignore[attr-defined]
            with self._lock:
                self._dispatching = False
                self._chores.notify_all()

    def _pop_due(self, room: int, popped: list[_Entry]) -> float | None:
        """Take up to ``room`` due entries off the local heap; else the delay to the head."""
        now = self._clock()
        while len(popped) < room:
            item = self._core.next(now)
            if not isinstance(item, Task):
                return item
            self._core.complete(item)
            entry: _Entry = item.fn  # type: ignore[assignment]
            if self._local.get(entry.task_id) is entry:
                del self._local[entry.task_id]
            popped.append(entry)
        return None

    def _claim(self, popped: list[_Entry], room: int) -> None:
        """Claim due rows up to the latest popped instant; re-check popped ones not won."""
        threshold = max(e.wall for e in popped)
        try:
            claims = self.store.claim(threshold, room, self.owner, self._lease)
        except Exception:
            log.exception("claim failed; retrying after %s s", self._poll)
            with self._lock:
                self._counts["store_errors"] += 1
                for e in popped:
                    self._put_local(e.task_id, e.version, e.wall, e.priority)
                self._wake.wait(self._poll)
            return
        runs = []
        with self._lock:
            self._counts["claim_rounds"] += 1
            for claim in claims:
                running = RunningTask(self, claim)
                self._inflight[claim.token] = running
                self._drop_local(claim.task_id, claim.version)
                future = self._futures.get(claim.task_id, {}).get(claim.version)
                runs.append((running, claim, future))
            self._counts["claimed"] += len(claims)
            self._counts["reruns"] += sum(c.attempts > 1 for c in claims)
        for run in runs:
            self._start(*run)
        won = {(c.task_id, c.version) for c in claims}
        lost = [e.task_id for e in popped if (e.task_id, e.version) not in won]
        if lost:
            self._guarded(lambda: self._sync(self.store.rows(lost)))

    def _start(self, running: RunningTask, claim: Claim, future: DurableFuture | None) -> None:
        """Hand a claimed version to the pool; one that never starts is handed back."""
        handle: Future[Any]
        try:
            if isinstance(self._pool, ThreadPoolScheduler):
                handle = self._pool.schedule(claim.token, self._pool.clock(), claim.priority,
                                             self._run, (running, claim, future))
            else:
                handle = self._pool.submit(self._run, running, claim, future)
        except Exception:  # the pool is closing: the claim goes back unrun
            self._unstarted(claim)
            return
        def started_or_not(done: Future[Any]) -> None:
            if done.cancelled():  # closed or cancelled before it started
                self._unstarted(claim)

        handle.add_done_callback(started_or_not)

    def _unstarted(self, claim: Claim) -> None:
        """Queue the hand-back of a claim whose run never started (its pool task was cancelled)."""
        with self._lock:
            if self._inflight.pop(claim.token, None) is None:
                return
            outcome = Outcome(claim.token, claim.task_id, claim.version, PENDING, None)
            self._outcomes.append((outcome, None, None))
            self._chores.notify()
            self._wake.notify()

    def _run(self, running: RunningTask, claim: Claim, future: DurableFuture | None) -> None:
        """Worker: run one claimed version (or hand it back when closing) and queue its outcome."""
        value: Any = None
        # What the finally block records if fn raises a BaseException (SystemExit, ...).
        state: str = FAILED
        error: str | None = "interrupted by a BaseException"
        try:
            if self._state != OPEN:
                state = PENDING
            else:
                if future is not None and not future.set_running_or_notify_cancel():
                    future = None
                try:
                    args, kwargs = check_claim(claim)
                    fn = self.registry.resolve(claim.ref)
                except (BadRow, UnknownTask) as exc:
                    state, value, error = ERROR, exc, str(exc)
                    log.error("task %r version %d: %s", claim.task_id, claim.version, exc)
                else:
                    with _local.running(running):
                        try:
                            value = fn(*args, **kwargs)
                            state, error = COMPLETED, None
                        except Exception as exc:  # noqa: BLE001 - recorded as the outcome
                            state, value, error = FAILED, exc, f"{type(exc).__name__}: {exc}"
        finally:
            outcome = Outcome(claim.token, claim.task_id, claim.version, state, error)
            with self._lock:
                del self._inflight[claim.token]
                if state != PENDING:  # settled from here on, never from a row read
                    by_version = self._futures.get(claim.task_id, {})
                    by_version.pop(claim.version, None)
                    if not by_version:
                        self._futures.pop(claim.task_id, None)
                self._outcomes.append((outcome, future, value))
                self._chores.notify()
                self._wake.notify()

    def _housekeep(self) -> None:
        """Store outcomes; heartbeat; requeue expired leases; poll or resync; finally close."""
        now = time.monotonic()
        beat, poll, resync = now + self._beat, now + self._poll, now + self._resync_every
        while True:
            with self._lock:
                while not self._outcomes and not self._drained():
                    left = min(beat, poll, resync) - time.monotonic()
                    if left <= 0:
                        break
                    self._chores.wait(left)
                batch, self._outcomes = self._outcomes, []
                done = not batch and self._drained()
                busy = bool(self._inflight)
            if batch:
                self._guarded(functools.partial(self._store_outcomes, batch))
            now = time.monotonic()
            if now >= beat:
                beat = now + self._beat
                if busy:
                    self._guarded(lambda: self.store.heartbeat(self.owner, self._lease))
            if done:
                break
            if now >= poll and self._state == OPEN:
                poll = now + self._poll
                self._guarded(self._poll_store)
            if now >= resync and self._state == OPEN:
                resync = now + self._resync_every
                self._guarded(self._resync)
                self._guarded(lambda: self.store.wall_high_water(
                    self.timebase.to_wall(self._clock())))
        self._shut_down()

    def _drained(self) -> bool:
        """Closing, and nothing can produce an outcome any more. Lock held."""
        return self._state != OPEN and not self._dispatching and not self._inflight

    def _poll_store(self) -> None:
        expired = self.store.requeue_expired()
        if expired:
            self._sync(self.store.rows(expired))
        if not self.store.notifies and self.store.changed():
            self._resync()
        self._settle_watched()

    def _store_outcomes(self, batch: list[tuple[Outcome, DurableFuture | None, Any]]) -> None:
        recorded = self.store.finish([o for o, _, _ in batch])
        lost = []
        with self._lock:
            for (outcome, _, _), ok in zip(batch, recorded, strict=True):
                key = {PENDING: "handed_back", COMPLETED: "completed", FAILED: "failed",
                       ERROR: "errors"}[outcome.state]
                self._counts[key if ok else "not_recorded"] += 1
                if not ok:
                    lost.append(outcome.task_id)
        for outcome, future, value in batch:
            if future is None or future.done() or outcome.state == PENDING:
                continue
            if outcome.state == COMPLETED:
                future.set_result(value)
            else:
                future.set_exception(value)
        if lost:  # a newer version may have waited for a lease released just now
            self._sync(self.store.rows(lost))

    def _listen(self) -> None:
        """NOTIFY wake-ups: re-read the rows other processes wrote."""
        while self._state == OPEN:
            try:
                # A short wait, so that close() is not held up by the listener.
                changed = self.store.wait_changes(min(self._poll, 0.25))
                if changed is None or self._state != OPEN:
                    continue
                if changed:
                    self._sync(self.store.rows(sorted(changed)))
                else:
                    self._resync()
            except Exception:
                log.exception("listening for changes failed; retrying after %s s", self._poll)
                with self._lock:
                    self._counts["store_errors"] += 1
                    self._wake.wait(self._poll)

    def _shut_down(self) -> None:
        for thread in self._threads[2:]:
            thread.join()
        if self._owns_pool:
            self._pool.close(wait=True)  # type: ignore[attr-defined]
        if self._owns_store:
            self.store.close()
        with self._lock:
            futures = [f for by_version in self._futures.values() for f in by_version.values()]
            self._futures.clear()
            self._state = CLOSED
            self._chores.notify_all()
        for future in futures:
            if not future.done():
                future.set_exception(SchedulerClosed(
                    f"closed before task {future.task_id!r} version {future.version} ran here;"
                    " it stays in the store"))

    def _guarded(self, action: Callable[[], object]) -> None:
        """Run a store chore; log and count a failure instead of killing the thread."""
        try:
            action()
        except Exception:
            log.exception("durable store operation failed")
            with self._lock:
                self._counts["store_errors"] += 1

    def _cancel_version(self, future: DurableFuture) -> bool:
        """``future.cancel()``: cancel its version in the store if still pending there."""
        if self.store.cancel(future.task_id, future.version) is None:
            return False
        with self._lock:
            self._drop_local(future.task_id, future.version + 1)
            self._supersede(future.task_id, future.version + 1)
        return Future.cancel(future)


class _Entry:
    """A local heap entry: the store version and wall instant it stands for (never called)."""

    __slots__ = ("epoch", "priority", "task_id", "version", "wall")

    def __init__(self, task_id: str, version: int, wall: float, priority: int,
                 epoch: int) -> None:
        self.task_id = task_id
        self.version = version
        self.wall = wall
        self.priority = priority
        self.epoch = epoch  # when it was put: a full resync read before then cannot drop it

    def __call__(self) -> None:  # the core wants a callable; runs go through the store
        raise AssertionError("a local heap entry is never run")


def _settle_from_row(future: DurableFuture, row: Row) -> None:
    """Resolve a Future whose version another process finished, cancelled or replaced."""
    if future.done():
        return
    if row.version == future.version and row.state == COMPLETED:
        future.set_result(None)
    elif row.version == future.version and row.state in (FAILED, ERROR):
        future.set_exception(DurableTaskFailed(
            f"task {row.task_id!r} version {row.version} {row.state} in another process"))
    else:
        Future.cancel(future)


def _positive(value: Any, name: str) -> float:
    seconds = check_time(value, name)
    if seconds <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return seconds
