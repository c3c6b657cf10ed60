"""Soak: the ThreadPoolScheduler under 8 producer threads for a set time.

Eight producers schedule, replace (ids come from a small pool), cancel by id,
cancel Futures and submit, on the real clock, for PYSCHED_SOAK_SECONDS
(default 10 per core in the ``slow`` suite; run it for minutes by hand):

    PYSCHED_SOAK_SECONDS=300 python -m pytest -m slow -n 0 -s -o faulthandler_timeout=0 \
        tests/pool/test_soak.py -k c

Checked all along, without keeping every Future (memory must stay flat):
- each version runs at most once, and never after its Future was seen done;
- a cancelled or replaced version never starts;
- at most max_workers bodies run at once, never two versions of one id;
- every Future resolves, and close() returns with all of them resolved;
- the core's invariants hold at the end and the stats account for every version;
- resident memory at the end is within 10% of its level after the warm-up
  (the first 10% of the run, at least 2 s).

Each producer keeps at most WINDOW Futures outstanding and checks them as they
resolve; its ledger is a ring of RING slots, so the bookkeeping is fixed-size.
The run length is the only timed thing here: no assertion depends on speed.
"""

from __future__ import annotations

import concurrent.futures
import gc
import os
import random
import threading
import time
from collections import deque

import pytest

import pysched
from pysched.threadpool import ThreadPoolScheduler

from support.memory import rss
from support.pool import WAIT, Concurrency, accounted

SECONDS = float(os.environ.get("PYSCHED_SOAK_SECONDS", "10"))
PRODUCERS = 8
MAX_WORKERS = 4
IDS = [f"id{k}" for k in range(256)]
WINDOW = 256  # outstanding Futures per producer
RING = 4096  # ledger slots per producer: > WINDOW, so a slot is reused only once verified
LIVE, SEEN_CANCELLED, SEEN_DONE = 0, 1, 2
RSS_TOLERANCE = 0.10


class Ledger:
    """What the bodies saw, in fixed-size rings (one per producer), under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner = [[-1] * RING for _ in range(PRODUCERS)]  # version number in each slot
        self.runs = [bytearray(RING) for _ in range(PRODUCERS)]
        self.seen = [bytearray(RING) for _ in range(PRODUCERS)]
        self.running_ids: set[object] = set()
        self.violations: list[str] = []
        self.concurrency = Concurrency()
        self.bodies = 0

    def issue(self, p: int, n: int) -> None:
        k = n % RING
        with self.lock:
            if self.owner[p][k] >= 0 and self.seen[p][k] == LIVE:
                self.violations.append(f"ring slot {p}/{k} reused while {self.owner[p][k]} live")
            self.owner[p][k] = n
            self.runs[p][k] = 0
            self.seen[p][k] = LIVE

    def body(self, p: int, n: int, task_id: object, cooperative: bool) -> int:
        self.concurrency.enter()
        k = n % RING
        with self.lock:
            self.bodies += 1
            if self.owner[p][k] != n or self.seen[p][k] != LIVE:
                self.violations.append(f"version {p}/{n} started after its Future was done")
            elif self.runs[p][k]:
                self.violations.append(f"version {p}/{n} ran twice")
            else:
                self.runs[p][k] = 1
            if task_id is not None:
                if task_id in self.running_ids:
                    self.violations.append(f"two versions of {task_id!r} ran at once")
                self.running_ids.add(task_id)
        try:
            if cooperative:  # give cancel() and timeouts a running body to reach
                pysched.current_token().wait(0.0005)
            return n
        finally:
            with self.lock:
                self.running_ids.discard(task_id)
            self.concurrency.leave()

    def verify(self, p: int, n: int, fut: concurrent.futures.Future) -> None:
        """Check a resolved Future against what its body did."""
        k = n % RING
        with self.lock:
            runs = self.runs[p][k]
            if fut.cancelled():
                if runs:
                    self.violations.append(f"cancelled ({fut.cancel_reason}) {p}/{n} started")
                self.seen[p][k] = SEEN_CANCELLED
                return
            self.seen[p][k] = SEEN_DONE
        exc = fut.exception(0)
        if runs != 1:
            self.violations.append(f"{p}/{n} resolved ({exc!r}) after {runs} runs")
        elif exc is None and fut.result(0) != n:
            self.violations.append(f"{p}/{n} returned {fut.result(0)!r}")
        elif exc is not None and not isinstance(exc, pysched.TaskTimeout):
            self.violations.append(f"{p}/{n} failed: {exc!r}")


def produce(pool, ledger: Ledger, p: int, stop: threading.Event, seed: int) -> int:
    """Schedule, replace, cancel and submit until ``stop``; return the versions issued."""
    rng = random.Random(seed)
    outstanding: deque = deque()
    n = 0
    while not stop.is_set():
        op = rng.random()
        if op < 0.65 or not outstanding:
            n += 1
            ledger.issue(p, n)
            if op < 0.60:
                task_id = rng.choice(IDS)
                timeout = 0.0003 if rng.random() < 0.05 else None
                fut = pool.schedule(task_id, pool.clock() + rng.random() * 0.002,
                                    rng.randrange(-3, 4), ledger.body,
                                    (p, n, task_id, rng.random() < 0.2), timeout=timeout)
            else:
                fut = pool.submit(ledger.body, p, n, None, False)
            outstanding.append((n, fut))
        elif op < 0.85:
            pool.cancel(rng.choice(IDS))
        else:
            rng.choice(outstanding)[1].cancel()
        while outstanding and (outstanding[0][1].done() or len(outstanding) > WINDOW):
            wait_resolved(pool, outstanding[0][1])
            ledger.verify(p, *outstanding.popleft())
    for item in outstanding:
        wait_resolved(pool, item[1])
        ledger.verify(p, *item)
    return n


def wait_resolved(pool, fut) -> None:
    """Wait for ``fut``; fail only if the pool stops making progress meanwhile.

    On a loaded machine a Future may wait long for a worker, so only WAIT
    seconds without any version finishing count as a hang.
    """
    while True:
        before = pool.stats()
        done, _ = concurrent.futures.wait([fut], timeout=WAIT)
        if done:
            return
        after = pool.stats()
        finished = ("completed", "cancelled", "replaced", "timed_out", "failed")
        if all(after[k] == before[k] for k in finished):
            with pool._lock:
                core_state = pool._core.state(fut._task_id)
            raise AssertionError(f"{fut!r} (id {fut._task_id!r} v{fut._version}) never resolved;"
                                 f" core state {core_state!r}; stats {after}")


def soak(impl, seconds: float) -> dict:
    pool = ThreadPoolScheduler(MAX_WORKERS, _core_factory=impl.Scheduler)
    ledger = Ledger()
    stop = threading.Event()
    issued = [0] * PRODUCERS
    errors: list[BaseException] = []

    def producer(p: int) -> None:
        try:
            issued[p] = produce(pool, ledger, p, stop, seed=p)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=producer, args=(p,), name=f"producer{p}")
               for p in range(PRODUCERS)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    warm_up = max(2.0, seconds * 0.1)
    stop.wait(warm_up)
    gc.collect()
    rss_warm = rss()
    rss_peak = rss_warm or 0
    while not stop.wait(1.0) and time.monotonic() - started < seconds:
        rss_peak = max(rss_peak, rss() or 0)
    gc.collect()
    rss_end = rss()
    stop.set()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), "a producer hung"
    assert not errors, errors
    closed = pool.close(wait=True, timeout=WAIT)
    elapsed = time.monotonic() - started
    stats = pool.stats()
    figures = {"seconds": round(elapsed, 1), "versions": sum(issued), "bodies": ledger.bodies,
               "rss_after_warm_up": rss_warm, "rss_end": rss_end, "rss_peak": rss_peak,
               "rss_change": None if not rss_warm else round(rss_end / rss_warm - 1, 4),
               "peak_running": stats["peak_running"], "completed": stats["completed"],
               "cancelled": stats["cancelled"], "replaced": stats["replaced"],
               "timed_out": stats["timed_out"]}
    print(f"\nsoak figures ({impl.Scheduler.__module__}): {figures}")

    assert closed, "close() did not return with every worker gone"
    assert ledger.violations == [], ledger.violations[:10]
    assert ledger.concurrency.peak <= MAX_WORKERS
    assert stats["peak_running"] <= MAX_WORKERS
    assert stats["pending"] == stats["running"] == 0
    assert stats["scheduled"] == accounted(stats) == sum(issued)
    assert stats["completed"] + stats["timed_out"] == ledger.bodies
    pool._core._check()
    if rss_warm:
        assert rss_end <= rss_warm * (1 + RSS_TOLERANCE), figures
    return figures


@pytest.mark.slow
def test_soak(impl):
    soak(impl, SECONDS)


def test_the_ledger_catches_what_it_must():
    """The soak's checks can fail: a second run and a run after cancel are reported."""
    ledger = Ledger()
    ledger.issue(0, 1)
    ledger.body(0, 1, "a", False)
    ledger.body(0, 1, "a", False)
    ledger.issue(0, 2)
    fut: concurrent.futures.Future = concurrent.futures.Future()
    fut.cancel_reason = "test"
    fut.cancel()
    ledger.verify(0, 2, fut)
    ledger.body(0, 2, "b", False)
    assert ledger.violations == ["version 0/1 ran twice",
                                 "version 0/2 started after its Future was done"]
