"""ThreadSafeBoundedPriorityQueue over both implementations: blocking, closing, accounting.

No test sleeps to hope: threads start together at a Barrier, finish by join,
and a test that needs a consumer to be waiting polls the wrapper's own count
of waiters (``stats()["waiting"]``) until it says so.
"""

from __future__ import annotations

import collections
import contextlib
import random
import threading
import time
from typing import Any

import pytest

from pysched.bounded import Empty, QueueClosed, ThreadSafeBoundedPriorityQueue

JOIN = 30.0  # seconds: only a deadlock or a lost wakeup gets near it


def make(impl, capacity, **kwargs):
    return ThreadSafeBoundedPriorityQueue(
        capacity, queue_type=impl.StableBoundedPriorityQueue, **kwargs)


def start(target, *args):
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def join(*threads):
    for thread in threads:
        thread.join(JOIN)
        assert not thread.is_alive(), "a thread is stuck: deadlock or lost wakeup"


def until_waiting(q, n):
    """Return once ``n`` consumers wait inside get() (a state, polled; not a guess)."""
    deadline = time.monotonic() + JOIN
    while q.stats()["waiting"] < n:
        assert time.monotonic() < deadline, "consumers never started waiting"
        time.sleep(0.001)


def test_same_rule_and_order_as_the_queue(impl):
    q = make(impl, 2)
    assert q.push(3, "c") and q.push(1, "a")
    assert not q.push(3, "equal")
    assert q.push_or_evict(2, "b").value == "c"
    assert q.capacity == 2 and len(q) == 2
    assert q.snapshot() == [(1, 2, "a"), (2, 4, "b")]
    assert [q.get(), q.get(timeout=0)] == ["a", "b"]
    with pytest.raises(Empty):
        q.get(timeout=0)
    q._check()


def test_keys_tenants_and_bad_input(impl):
    q = make(impl, 3, tenant_limit=1)
    assert q.push(1, "a", key="a", tenant="t")
    assert q.push_or_evict(0, "b", tenant="t").reason == "quota"
    q.reprioritize("a", 5)
    before = (q.snapshot(), q.stats())
    for call, error in [
        (lambda: q.push(1.5, "x"), TypeError),
        (lambda: q.push(1, "x", key=[]), TypeError),
        (lambda: q.push(1, "x", key="a"), ValueError),
        (lambda: q.push(1, "x", tenant={}), TypeError),
        (lambda: q.reprioritize("zz", 1), KeyError),
        (lambda: q.reprioritize("a", "1"), TypeError),
        (lambda: q.remove("zz"), KeyError),
        (lambda: q.get(timeout=-1), ValueError),
        (lambda: q.get(timeout="1"), TypeError),
    ]:
        with pytest.raises(error):
            call()
        assert (q.snapshot(), q.stats()) == before
    assert q.remove("a") == "a"
    q._check()


def test_close_drains_then_raises(impl):
    q = make(impl, 4)
    q.push(2, "b")
    q.push(1, "a")
    q.close()
    q.close()  # idempotent
    assert q.closed
    with pytest.raises(QueueClosed, match="push to a closed queue"):
        q.push(0, "late")
    assert [q.get(), q.get()] == ["a", "b"]
    for timeout in (None, 0, 5):
        with pytest.raises(QueueClosed, match="closed, empty"):
            q.get(timeout=timeout)


def test_get_waits_for_a_push(impl):
    q = make(impl, 4)
    got = []
    consumer = start(lambda: got.append(q.get()))
    until_waiting(q, 1)
    assert q.push(7, "x")
    join(consumer)
    assert got == ["x"] and q.stats()["waiting"] == 0


def test_get_times_out_on_an_empty_queue(impl):
    q = make(impl, 4)
    with pytest.raises(Empty):
        q.get(timeout=0.01)
    assert q.stats()["waiting"] == 0


def test_close_wakes_every_waiter(impl):
    q = make(impl, 4)
    outcomes = []

    def consume():
        try:
            q.get()
        except QueueClosed:
            outcomes.append("closed")

    consumers = [start(consume) for _ in range(4)]
    until_waiting(q, 4)
    q.close()
    join(*consumers)
    assert outcomes == ["closed"] * 4


class Reentrant:
    """A value or key whose finaliser calls into the queue: deadlocks if run under the lock."""

    def __init__(self, q, log):
        self.q, self.log = q, log

    def __del__(self):
        self.log.append(len(self.q))


def test_dropped_objects_are_released_outside_the_lock(impl):
    q = make(impl, 1)
    log = []

    def run():
        q.push(5, Reentrant(q, log))
        q.push(1, "better")  # evicts the value: its finaliser takes the lock
        q.push(-1, "best", key=Reentrant(q, log), tenant=Reentrant(q, log))
        assert q.get() == "best"  # releases the key and the tenant

    join(start(run))
    assert log == [1, 0, 0]


def test_producers_and_consumers_account_for_every_value(impl):
    producers, consumers, per_producer = 4, 3, 1500
    q = make(impl, 16, tenant_limit=6)
    barrier = threading.Barrier(producers + consumers)
    dropped = [[] for _ in range(producers)]  # (value, reason) per producer
    popped = [[] for _ in range(consumers)]

    def produce(n):
        rng = random.Random(n)
        barrier.wait()
        for i in range(per_producer):
            entry = q.push_or_evict(rng.randrange(100), (n, i), tenant=rng.choice([None, n]))
            if entry is not None:
                dropped[n].append((entry.value, entry.reason))

    def consume(n):
        barrier.wait()
        while True:
            try:
                popped[n].append(q.get())
            except QueueClosed:
                return

    threads = [start(consume, n) for n in range(consumers)]
    makers = [start(produce, n) for n in range(producers)]
    join(*makers)
    q.close()
    join(*threads)

    out = [value for values in popped for value in values]
    drops = [drop for drops in dropped for drop in drops]
    # Every value pushed left exactly once: popped, refused or evicted.
    everything = out + [value for value, _ in drops]
    assert len(everything) == len(set(everything)) == producers * per_producer
    stats = q.stats()
    reasons = [reason for _, reason in drops]
    assert stats["length"] == 0 and len(q) == 0
    assert stats["popped"] == len(out)
    assert stats["evicted"] == reasons.count("evicted")
    assert stats["rejected_capacity"] == reasons.count("capacity")
    assert stats["rejected_quota"] == reasons.count("quota")
    assert stats["accepted"] == producers * per_producer - stats["rejected_capacity"] \
        - stats["rejected_quota"]
    q._check()


@pytest.mark.parametrize("timeout", [threading.TIMEOUT_MAX * 2, 1e300])
def test_get_with_a_timeout_beyond_the_platform_limit_waits_for_a_push(
        impl: Any, timeout: float) -> None:
    q = ThreadSafeBoundedPriorityQueue(2, queue_type=impl.StableBoundedPriorityQueue)
    got: list[Any] = []
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            got.append(q.get(timeout=timeout))
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    deadline = time.monotonic() + JOIN
    while q.stats()["waiting"] < 1 and consumer.is_alive():
        assert time.monotonic() < deadline, "the consumer never started waiting"
        time.sleep(0.001)
    q.push(1, "x")
    consumer.join(JOIN)
    assert not consumer.is_alive()
    assert errors == [] and got == ["x"]
    assert q.stats()["waiting"] == 0


def test_keyed_producers_timed_consumers_and_a_close_midway_account_for_every_value(
        impl: Any) -> None:
    # Producers push keyed values and take some back with remove(); consumers
    # poll with short timeouts; one producer closes the queue halfway.
    # Every value offered ends exactly one way: popped, dropped (as reported),
    # removed, or refused by QueueClosed.
    producers, consumers, per_producer = 3, 3, 800
    q = ThreadSafeBoundedPriorityQueue(8, tenant_limit=4,
                                       queue_type=impl.StableBoundedPriorityQueue)
    barrier = threading.Barrier(producers + consumers)
    ends: list[list[tuple[Any, str]]] = [[] for _ in range(producers + consumers)]

    def produce(n: int) -> None:
        rng = random.Random(n)
        barrier.wait()
        for i in range(per_producer):
            if n == 0 and i == per_producer // 2:
                q.close()  # the others may still push: they get QueueClosed
            value = (n, i)
            try:
                entry = q.push_or_evict(rng.randrange(50), value, key=value,
                                        tenant=rng.choice([None, n]))
            except QueueClosed:
                ends[n].append((value, "closed"))
                continue
            if entry is not None:
                ends[n].append((entry.value, entry.reason))
            if i and rng.random() < 0.2:
                earlier = (n, rng.randrange(i))
                with contextlib.suppress(KeyError):  # it ended some other way already
                    ends[n].append((q.remove(earlier), "removed"))
            if rng.random() < 0.1:
                with contextlib.suppress(KeyError):
                    q.reprioritize((n, rng.randrange(i + 1)), rng.randrange(50))

    def consume(n: int) -> None:
        barrier.wait()
        while True:
            try:
                ends[producers + n].append((q.get(timeout=0.001), "popped"))
            except Empty:
                continue
            except QueueClosed:
                return

    threads = [threading.Thread(target=produce, args=(n,), daemon=True)
               for n in range(producers)]
    threads += [threading.Thread(target=consume, args=(n,), daemon=True)
                for n in range(consumers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN)
        assert not thread.is_alive(), "a thread is stuck: deadlock or lost wakeup"

    outcomes = [end for per_thread in ends for end in per_thread]
    values = [value for value, _ in outcomes]
    assert len(values) == len(set(values)), "a value ended twice"
    assert sorted(values) == sorted((n, i) for n in range(producers)
                                    for i in range(per_producer)), "a value was lost"
    reasons = collections.Counter(reason for _, reason in outcomes)
    assert reasons["closed"] >= per_producer // 2  # at least the closer's second half
    stats = q.stats()
    assert stats["length"] == 0 and stats["waiting"] == 0
    assert stats["popped"] == reasons["popped"]
    assert stats["evicted"] == reasons["evicted"]
    assert stats["rejected_capacity"] == reasons["capacity"]
    assert stats["rejected_quota"] == reasons["quota"]
    q._check()
