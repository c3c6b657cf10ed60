"""The pool's lock (pysched.pool.lock): a Lock whose contended acquisitions poll.

Checked here: the Lock methods and their argument checks; that a thread
finding it held sleeps with the GIL released and tries again instead of
parking on the lock (the convoy the module docstring describes); that
Conditions on it wait, notify and time out; mutual exclusion under threads
hammering it; and that a ThreadPoolScheduler's lock is one.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

from pysched.pool import lock as lock_module
from pysched.pool.lock import PoolLock, hot_path_ops, pool_lock
from pysched.threadpool import ThreadPoolScheduler

WAIT = 20.0  # only turns a hang into a failure


def test_acquire_release_and_locked() -> None:
    lock = PoolLock()
    assert not lock.locked()
    assert lock.acquire()
    assert lock.locked()
    assert not lock.acquire(False)
    lock.release()
    assert not lock.locked()
    with lock as entered:
        assert entered is True
        assert lock.locked()
    assert not lock.locked()
    with pytest.raises(RuntimeError):
        lock.release()


def test_bad_arguments_name_the_timeout_and_leave_it_free() -> None:
    lock = PoolLock()
    lock.acquire()
    with pytest.raises(ValueError, match="timeout"):
        lock.acquire(False, 1.0)
    with pytest.raises(ValueError, match="timeout"):
        lock.acquire(True, -2.0)
    lock.release()
    with pytest.raises(ValueError, match="timeout"):
        lock.acquire(False, 1.0)
    assert not lock.locked()


def test_a_held_lock_is_polled_with_sleeps_never_parked_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The waiter sleeps (GIL released) and retries; the holder's release wakes nobody."""
    lock = PoolLock()
    sleeps: list[float] = []
    may_release = threading.Event()
    real_sleep = lock_module._sleep

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            may_release.set()
        real_sleep(seconds)

    monkeypatch.setattr(lock_module, "_sleep", sleep)
    lock.acquire()

    def holder() -> None:
        may_release.wait(WAIT)
        lock.release()

    thread = threading.Thread(target=holder)
    thread.start()
    with lock:  # taken by this thread once the holder let go
        pass
    thread.join(WAIT)
    assert len(sleeps) >= 3
    assert sleeps[:3] == [lock_module.FIRST_POLL, 2 * lock_module.FIRST_POLL,
                          4 * lock_module.FIRST_POLL]
    assert max(sleeps) <= lock_module.MAX_POLL


def test_acquire_with_timeout_gives_up_while_held() -> None:
    lock = PoolLock()
    held = threading.Event()
    done = threading.Event()

    def holder() -> None:
        with lock:
            held.set()
            done.wait(WAIT)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(WAIT)
    assert not lock.acquire(timeout=0.01)  # held throughout: no timing involved
    assert not lock.acquire(blocking=False)
    done.set()
    thread.join(WAIT)
    assert lock.acquire(timeout=0.01)
    lock.release()


def test_condition_wait_notify_and_timeout() -> None:
    lock = PoolLock()
    cond = threading.Condition(lock)  # type: ignore[arg-type]
    ready: list[int] = []

    def consumer() -> None:
        with cond:
            while not ready:
                cond.wait()
            ready.append(2)

    thread = threading.Thread(target=consumer)
    thread.start()
    with cond:
        ready.append(1)
        cond.notify()
    thread.join(WAIT)
    assert ready == [1, 2]
    with cond:
        assert not cond.wait(0.001)  # nobody notifies: it times out, lock held again
        assert lock.locked()
    assert not lock.locked()
    with pytest.raises(RuntimeError):
        cond.notify()  # not held


def test_mutual_exclusion_under_threads() -> None:
    """Threads incrementing a shared pair under the lock never see it torn."""
    lock = PoolLock()
    state = [0, 0]
    torn: list[tuple[int, int]] = []
    rounds = 20_000

    def work() -> None:
        for _ in range(rounds):
            with lock:
                a = state[0]
                state[0] = a + 1
                if state[1] != a:
                    torn.append((a, state[1]))
                state[1] = a + 1

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch as often as CPython allows: contention for sure
    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT * 3)
    finally:
        sys.setswitchinterval(old)
    assert torn == []
    assert state == [4 * rounds, 4 * rounds]


def test_pool_lock_is_a_plain_lock_without_the_gil(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: False, raising=False)
    assert type(pool_lock()) is type(threading.Lock())
    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: True, raising=False)
    assert isinstance(pool_lock(), PoolLock)


def test_a_pools_lock_is_a_pool_lock(impl: Any) -> None:
    with ThreadPoolScheduler(2, _core_factory=impl.Scheduler) as pool:
        assert isinstance(pool._pool.lock, PoolLock)
        assert pool.submit(int, "7").result(WAIT) == 7


@pytest.mark.parametrize("make", [PoolLock, threading.Lock])
def test_hot_path_ops_lock_and_wait_as_with_does(make: Any) -> None:
    lock = make()
    try_acquire, wait_acquire, release = hot_path_ops(lock)
    assert try_acquire(False) and lock.locked()
    assert not try_acquire(False)
    taken = threading.Event()

    def other() -> None:  # finds it held, waits, then holds it
        if not try_acquire(False):
            wait_acquire()
        taken.set()
        release()

    thread = threading.Thread(target=other)
    thread.start()
    assert not taken.wait(0.01)  # held by this thread throughout: it cannot have it
    release()
    thread.join(WAIT)
    assert taken.is_set() and not lock.locked()
