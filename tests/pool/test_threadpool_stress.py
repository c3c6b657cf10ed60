"""Threads scheduling, replacing and cancelling while workers run, on the real clock.

Checked after close() returns, for each seed and both cores:
- every Future is resolved;
- each version ran at most once. A version is identified by its Future (its
  schedule number here): (task_id, version) names one only while the core
  knows the id, since the core forgets finished ids and numbers a new
  lifetime from 1 again;
- no cancelled, replaced or evicted version ever started;
- the start rule: a version whose Future was neither running nor done when a
  cancel(task_id) or a replacing schedule() returned never started (it was
  claimed but not started, say: the cancel or the replacement wins);
- at most max_workers bodies ran at once, and never two versions of one id;
- the stats account for every version and the core's invariants hold.
Nothing here waits for time to pass: run_at values are at most 2 ms ahead and
every wait is on an event or a Future.
"""

from __future__ import annotations

import random
import threading
from collections import Counter

import pytest

import pysched
from pysched.threadpool import ThreadPoolScheduler

from support.pool import WAIT, Concurrency, accounted

MAX_WORKERS = 4
PRODUCERS = 4
SERIES_IDS = ["series0", "series1", "series2"]


class Ledger:
    """What the task bodies saw, under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ran: Counter[int] = Counter()  # schedule number -> runs
        self.running_ids: set[object] = set()
        self.overlaps = 0
        self.concurrency = Concurrency()

    def body(self, n: int, task_id: object, cooperative: bool) -> int:
        self.concurrency.enter()
        with self.lock:
            self.ran[n] += 1
            # submit() bodies have no task id (None here): they may run at once
            if task_id is not None:
                if task_id in self.running_ids:
                    self.overlaps += 1
                self.running_ids.add(task_id)
        try:
            if cooperative:  # give cancel() and timeouts a running task to reach
                pysched.current_token().wait(0.0005)
            return n
        finally:
            with self.lock:
                self.running_ids.discard(task_id)
            self.concurrency.leave()


class Versions:
    """The schedules of each id, and those that a cancel or replacement must have stopped."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_id: dict[object, list[tuple[int, object]]] = {}
        self.doomed: set[int] = set()

    def before(self, task_id: object) -> list[tuple[int, object]]:
        with self.lock:
            return list(self.by_id.get(task_id, ()))

    def after(self, earlier: list[tuple[int, object]]) -> None:
        """The call that ended these ids' pending versions returned: doom the unstarted ones."""
        # One read of the state: PENDING now means neither running nor done.
        unstarted = [n for n, fut in earlier if fut._state == "PENDING"]
        with self.lock:
            self.doomed.update(unstarted)

    def add(self, task_id: object, n: int, fut: object) -> None:
        with self.lock:
            self.by_id.setdefault(task_id, []).append((n, fut))


def produce(pool, ledger, rng, ops, futures, lock, counter, versions):
    ids = [f"id{k}" for k in range(24)]
    for _ in range(ops):
        op = rng.random()
        task_id = rng.choice(ids)
        if op < 0.55:
            with lock:
                n = next(counter)
            run_at = pool.clock() + rng.random() * 0.002
            timeout = 0.0003 if rng.random() < 0.1 else None
            earlier = versions.before(task_id)
            fut = pool.schedule(task_id, run_at, rng.randrange(-3, 4), ledger.body,
                                (n, task_id, rng.random() < 0.3), timeout=timeout)
            versions.after(earlier)
            versions.add(task_id, n, fut)
            futures.append((n, task_id, fut))
        elif op < 0.65:
            with lock:
                n = next(counter)
            fut = pool.submit(ledger.body, n, None, False)
            futures.append((n, fut, fut))
        elif op < 0.68:  # a recurring series, fast enough to overlap with its next runs
            series_id = rng.choice(SERIES_IDS)
            fut = pool.schedule_every(series_id, 0.0003, 0, ledger.body, (-1, series_id, False),
                                      overlap=rng.choice(["skip", "coalesce", "queue"]),
                                      start_at=pool.clock())
            futures.append((-1, series_id, fut))
        elif op < 0.85:
            if rng.random() < 0.8:
                earlier = versions.before(task_id)
                pool.cancel(task_id)
                versions.after(earlier)
            else:
                pool.cancel(rng.choice(SERIES_IDS))
        elif futures:
            rng.choice(futures)[2].cancel()


def run_stress(impl, seed, ops):
    import itertools

    pool = ThreadPoolScheduler(MAX_WORKERS, _core_factory=impl.Scheduler)
    ledger = Ledger()
    versions = Versions()
    futures: list[tuple[int, object, object]] = []
    lock = threading.Lock()
    counter = itertools.count()
    start = threading.Barrier(PRODUCERS, timeout=WAIT)

    def producer(k):
        rng = random.Random(seed * 1000 + k)
        mine: list = []
        start.wait()
        produce(pool, ledger, rng, ops, mine, lock, counter, versions)
        with lock:
            futures.extend(mine)

    threads = [threading.Thread(target=producer, args=(k,)) for k in range(PRODUCERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    # half the seeds drain (shutdown), half cancel what is left (close)
    if seed % 2:
        pool.shutdown(wait=True)
    else:
        assert pool.close(wait=True)
    return pool, ledger, futures, versions


@pytest.mark.parametrize("seed", range(6))
def test_stress(impl, seed):
    check(*run_stress(impl, seed, ops=1500))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6, 50))
def test_stress_many_seeds(impl, seed):
    check(*run_stress(impl, seed, ops=5000))


def check(pool, ledger, futures, versions):
    started_after_their_end = sorted(n for n in versions.doomed if ledger.ran[n])
    assert not started_after_their_end, (
        f"{len(started_after_their_end)} versions started after a cancel or replacement"
        f" returned while they were neither running nor done: {started_after_their_end[:10]}")
    assert pool.state == "closed"
    for n, _task_id, fut in futures:
        assert fut.done(), f"future {n} unresolved after close"
        assert fut.version >= 1
        if n < 0:  # a series: cancelled (by cancel, replacement or close), never a result
            assert fut.cancelled(), fut
            continue
        runs = ledger.ran[n]
        assert runs <= 1, f"schedule {n} ran {runs} times"
        if fut.cancelled():
            assert runs == 0, f"cancelled ({fut.cancel_reason}) version {n} started"
        elif fut.exception(0) is None:
            assert runs == 1 and fut.result(0) == n
        else:  # a timeout: it ran, and the Future says so
            assert runs == 1 and isinstance(fut.exception(0), TimeoutError)
    assert ledger.overlaps == 0, "two versions of one id ran at once"
    assert ledger.concurrency.peak <= MAX_WORKERS
    stats = pool.stats()
    assert stats["peak_running"] <= MAX_WORKERS
    assert stats["scheduled"] == accounted(stats) >= len(futures)  # each series run is a version
    assert stats["pending"] == stats["running"] == 0
    assert stats["completed"] + stats["timed_out"] == sum(ledger.ran.values())
    pool._core._check()
