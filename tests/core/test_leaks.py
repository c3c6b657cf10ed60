"""Leak checks: long churn on the core Scheduler, the bounded queue and the thread pool.

Each test runs a warm-up (so every array, dict and free list reaches its
steady size), then many cycles of the structure's whole life cycle, and checks
three things:

- references: objects handed in (fns, ids, keys, values, tenants, exceptions)
  and the Futures handed out are all dead once a batch
  is finished and dropped, while the structure itself lives on. No
  ``gc.collect()`` is called for that: none of these objects is in a cycle, so
  reference counting alone must free them;
- traced memory: tracemalloc, started after the warm-up, sees nothing that
  the cycles allocated still alive at the end, within TRACED_SLACK (64 KiB:
  small caches such as free lists and float/int pools);
- resident memory (Linux): RSS at the end is within RSS_SLACK (2 MiB) of RSS
  after the warm-up.

The default suite runs 100,000 cycles on the compiled core and fewer on the
pure twin and the pool, to stay within a few seconds; the ``slow`` variants run
up to a million. A cycle is one id's life: schedule, perhaps replace, cancel or
replace while running (parked), claim, complete or fail.

And memory given back: once drained, the core's Scheduler and bounded queue
keep at most a small part of their peak allocations.
"""

from __future__ import annotations

import contextlib
import gc
import time
import tracemalloc
import weakref

import pytest

from support.impl import NO_EXTENSIONS, compiled_module
from support.memory import rss

TRACED_SLACK = 64 * 1024
RSS_SLACK = 2 * 1024 * 1024
BATCH = 64  # cycles between full drains and reference checks
SETTLE = 30.0  # guard against a hang of the pool; nothing waits this long when all is well


class Key:
    """A hashable id, key or tenant that weak references can watch."""

    __slots__ = ("n", "__weakref__")

    def __init__(self, n: int) -> None:
        self.n = n

    def __hash__(self) -> int:
        return hash(self.n)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Key) and other.n == self.n


class Fn:
    __slots__ = ("__weakref__",)

    def __call__(self) -> None:
        pass


class Value:
    __slots__ = ("__weakref__",)


class Boom(Exception):
    pass


class Watch:
    """Weak references to one batch's objects; all must be dead at the batch's end."""

    def __init__(self) -> None:
        self.refs: list[weakref.ref] = []
        self.checked = 0

    def __call__(self, obj):
        self.refs.append(weakref.ref(obj))
        return obj

    def all_dead(self, what: str, settle: float = 0.0) -> None:
        """Assert every watched object is dead; wait up to ``settle`` seconds for
        other threads to drop their last references (a worker holds its task's
        locals for a moment after the Future resolves). Only a hang costs time."""
        deadline = time.monotonic() + settle
        while any(r() is not None for r in self.refs) and time.monotonic() < deadline:
            time.sleep(0.001)
        alive = [r() for r in self.refs if r() is not None]
        assert not alive, f"{len(alive)} {what} objects outlived their batch: {alive[:3]!r}"
        self.checked += len(self.refs)
        self.refs.clear()


def measure(warm_up, run, cycles: int, rss_slack: int = RSS_SLACK) -> dict:
    """Run ``warm_up()``, then ``run(cycles)`` under tracemalloc; check memory came back."""
    warm_up()
    gc.collect()
    rss_before = rss()
    tracemalloc.start()
    try:
        run(cycles)
        gc.collect()
        traced, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss_after = rss()
    figures = {"cycles": cycles, "traced_left": traced, "rss_before": rss_before,
               "rss_after": rss_after}
    print(f"\nleak figures: {figures}")
    assert traced <= TRACED_SLACK, f"{traced} bytes allocated by the cycles are still alive"
    if rss_before is not None:
        assert rss_after - rss_before <= rss_slack, figures
    return figures


# -- core Scheduler -------------------------------------------------------------------


def core_cycles(s, task_cls, count: int, watch: Watch, first: int = 0) -> None:
    """``count`` id lives on ``s``: every path that keeps or drops a reference."""
    t = 0.0
    for i in range(first, first + count):
        s.schedule(watch(Key(i)), t, i % 5, watch(Fn()))
        if i % 3 == 0:  # replace the pending version: the old fn must go
            s.schedule(watch(Key(i)), t, 0, watch(Fn()))
        if i % 7 == 0:  # cancel it: the id is forgotten
            s.cancel(watch(Key(i)))
        if i % BATCH == BATCH - 1:
            drain_core(s, task_cls, watch, t)
            watch.all_dead("core")
            assert len(s) == 0 and s.stats()["running"] == 0
        t += 0.25


def drain_core(s, task_cls, watch: Watch, now: float) -> None:
    k = 0
    while True:
        task = s.next(now=now)
        if not isinstance(task, task_cls):
            break
        k += 1  # (tasks take no weak references: tracemalloc shows they are freed)
        if k % 5 == 0:  # replace while running: parked, pushed back when finished
            s.schedule(watch(Key(task.task_id.n)), now, 0, watch(Fn()))
        if k % 11 == 0:  # cancel while running: only cancel_requested
            s.cancel(task.task_id)
        if k % 4 == 0:
            s.fail(task, watch(Boom()))
        else:
            s.complete(task)
    del task
    s._check()


def check_core(impl, cycles: int) -> dict:
    s = impl.Scheduler(clock=lambda: 0.0)
    watch = Watch()
    figures = measure(lambda: core_cycles(s, impl.Task, 20 * BATCH, watch),
                      lambda n: core_cycles(s, impl.Task, n, watch, first=10**6), cycles)
    assert watch.checked > 2 * cycles  # ids, fns and exceptions were all watched
    return figures


def test_core_frees_everything(impl):
    compiled = impl.Scheduler.__module__ == "pysched._core"
    check_core(impl, 100_000 if compiled else 30_000)


@pytest.mark.slow
def test_core_frees_everything_long(impl):
    compiled = impl.Scheduler.__module__ == "pysched._core"
    check_core(impl, 1_000_000 if compiled else 200_000)


# -- bounded queue ---------------------------------------------------------------------


def queue_cycles(q, count: int, watch: Watch, first: int = 0) -> None:
    """Push (with eviction and refusals), reprioritize, remove and pop, with keys and tenants."""
    tenants = [watch(Key(-1 - k)) for k in range(4)]
    for i in range(first, first + count):
        key = watch(Key(i))
        q.push_or_evict(i % 9, watch(Value()), key=key, tenant=tenants[i % 4])
        if i % 5 == 0 and q:
            q.pop_entry()
        if i % 6 == 0:
            with contextlib.suppress(KeyError):  # it may have been evicted or refused
                q.reprioritize(key, i % 4)
        if i % 7 == 0:
            with contextlib.suppress(KeyError):
                q.remove(key)
        if i % BATCH == BATCH - 1:
            while q:
                q.pop()
            q._check()
            del key, tenants
            watch.all_dead("queue")
            tenants = [watch(Key(-1 - k)) for k in range(4)]


def check_queue(impl, cycles: int) -> dict:
    q = impl.StableBoundedPriorityQueue(16, tenant_limit=6)
    watch = Watch()
    return measure(lambda: queue_cycles(q, 20 * BATCH, watch),
                   lambda n: queue_cycles(q, n, watch, first=10**6), cycles)


def test_bounded_queue_frees_everything(impl):
    if not hasattr(impl, "StableBoundedPriorityQueue"):
        pytest.skip("no bounded queue in this build")
    compiled = impl.StableBoundedPriorityQueue.__module__ == "pysched._core"
    check_queue(impl, 50_000 if compiled else 15_000)


@pytest.mark.slow
def test_bounded_queue_frees_everything_long(impl):
    compiled = impl.StableBoundedPriorityQueue.__module__ == "pysched._core"
    check_queue(impl, 500_000 if compiled else 100_000)


# -- thread pool -------------------------------------------------------------------------


def pool_cycles(pool, count: int, watch: Watch, first: int = 0) -> None:
    """Schedule, replace and cancel on a running pool; every Future resolves and is dropped."""
    futures = []
    for i in range(first, first + count):
        now = pool.clock()
        futures.append(watch(pool.schedule(watch(Key(i % 97)), now, i % 3, watch(Fn()))))
        if i % 4 == 0:  # replace: the older Future is cancelled as "replaced"
            futures.append(watch(pool.schedule(watch(Key(i % 97)), now, 0, watch(Fn()))))
        if i % 9 == 0:
            pool.cancel(Key(i % 97))
        if len(futures) >= 4 * BATCH:
            settle(pool, futures, watch)
    settle(pool, futures, watch)


def settle(pool, futures: list, watch: Watch) -> None:
    while futures:
        fut = futures.pop()
        assert fut.cancelled() or fut.result(timeout=SETTLE) is None
    del fut
    watch.all_dead("thread pool", settle=SETTLE)
    stats = pool.stats()
    assert stats["pending"] == stats["running"] == 0, stats


def check_pool(impl, cycles: int, rss_slack: int) -> dict:
    from pysched.threadpool import ThreadPoolScheduler

    # The pool keeps up to lateness_samples start delays for stats(): a small
    # reservoir fills during the warm-up, so what stays after is a leak.
    pool = ThreadPoolScheduler(2, _core_factory=impl.Scheduler, lateness_samples=256)
    watch = Watch()
    try:
        figures = measure(lambda: pool_cycles(pool, 2_000, watch),
                          lambda n: pool_cycles(pool, n, watch, first=10**6), cycles, rss_slack)
    finally:
        assert pool.close(wait=True, timeout=30)
    return figures


def test_thread_pool_frees_everything(impl):
    check_pool(impl, 5_000, RSS_SLACK)


@pytest.mark.slow
def test_thread_pool_frees_everything_long(impl):
    check_pool(impl, 100_000, RSS_SLACK)


def test_watch_catches_a_leak():
    """The checks can fail: a structure that keeps what it was given is caught."""
    kept = []
    watch = Watch()
    kept.append(watch(Value()))
    with pytest.raises(AssertionError, match="outlived"):
        watch.all_dead("demo")
    with pytest.raises(AssertionError, match="still alive"):
        measure(lambda: None, lambda n: kept.extend(Value() for _ in range(n)), 10_000)


def noop() -> None:
    pass


# -- memory given back after a drain ------------------------------------------


def allocations_left_after_a_drain(make, fill, drain):
    """(bytes the core held at its peak, bytes it still holds once drained), by tracemalloc."""
    import tracemalloc

    tracemalloc.start()
    try:
        subject = make()
        base = tracemalloc.get_traced_memory()[0]
        fill(subject)
        peak = tracemalloc.get_traced_memory()[0] - base
        drain(subject)
        gc.collect()
        left = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    return peak, left


@pytest.mark.skipif(NO_EXTENSIONS, reason="the core's own allocations")
def test_the_core_gives_memory_back_after_a_drain():
    """Core: after 200,000 tasks drained to none it still held 22.7 of its 29.1 MB peak."""
    core = compiled_module()

    def fill(s):
        for i in range(200_000):
            s.schedule(i, float(i % 1000), 0, noop)

    def drain(s):
        while (task := s.next(now=1e9)) is not None:
            s.complete(task)
        assert len(s) == 0 and s.stats()["completed"] == 200_000

    peak, left = allocations_left_after_a_drain(core.Scheduler, fill, drain)
    assert left < 0.10 * peak, f"{left} of a {peak}-byte peak kept"


@pytest.mark.skipif(NO_EXTENSIONS, reason="the core's own allocations")
def test_the_core_queue_gives_memory_back_after_a_drain():
    """Core: the bounded queue's arrays, too, stayed at their peak size; then its per-key
    and per-tenant arrays did (1.3 MB of a 21.5 MB peak left; 2.6 kB once they shrink)."""
    core = compiled_module()

    def fill(q):
        for i in range(100_000):
            q.push(i % 1000, i, key=i if i % 2 else None, tenant=i if i % 3 else None)

    def drain(q):
        while q:
            q.pop()
        q._check()

    peak, left = allocations_left_after_a_drain(
        lambda: core.StableBoundedPriorityQueue(100_000), fill, drain)
    assert left < 0.01 * peak, f"{left} of a {peak}-byte peak kept"
