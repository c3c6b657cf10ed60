"""Faults that must not stop the pool: closers inside the pool, user callbacks, dying threads.

Each case is run on a FakeClock with events, never on sleeps: ``WAIT`` only
turns a hang (the defect) into a failure.
"""

from __future__ import annotations

import gc
import logging
import threading

import pytest

from pysched import TaskTimeout, current_token
from pysched.testing import FakeClock

from support.pool import WAIT, Gate, Interrupt


def test_two_tasks_closing_the_pool_at_once_both_return(make_pool):
    pool = make_pool(2)
    both_in = threading.Barrier(2, timeout=WAIT)

    def close_from_inside():
        both_in.wait()
        return pool.close(wait=True)

    first = pool.submit(close_from_inside)
    second = pool.submit(close_from_inside)
    assert first.result(WAIT) is True and second.result(WAIT) is True
    assert pool.close(wait=True, timeout=WAIT)
    assert pool.state == "closed"


def test_done_callbacks_closing_the_pool_on_two_workers_both_return(make_pool):
    pool = make_pool(2)
    both_in = threading.Barrier(2, timeout=WAIT)
    returned = []

    def close_in_callback(_):
        both_in.wait()
        returned.append(pool.close(wait=True))

    gates = [Gate(), Gate()]
    for gate in gates:  # the callbacks must run on the workers: add them before the ends
        pool.submit(gate).add_done_callback(close_in_callback)
    for gate in gates:
        gate.wait_started()
        gate.release()
    assert pool.close(wait=True, timeout=WAIT)
    assert returned == [True, True]


def test_timeout_callbacks_never_run_on_the_dispatcher(make_pool, clock):
    pool = make_pool(2)
    started = threading.Event()
    seen = []
    callback_ran = threading.Event()

    def body():
        current_token().add_callback(
            lambda: (seen.append(threading.current_thread().name), callback_ran.set()))
        started.set()
        current_token().wait()

    fut = pool.schedule("slow", 0.0, 0, body, timeout=1.0)
    assert started.wait(WAIT)
    clock.advance(1.0)
    with pytest.raises(TaskTimeout):
        fut.result(WAIT)
    assert callback_ran.wait(WAIT)
    assert seen and "dispatcher" not in seen[0]


def test_a_slow_timeout_callback_delays_no_due_task(make_pool, clock):
    pool = make_pool(2)
    started = threading.Event()
    release = threading.Event()

    def body():
        current_token().add_callback(lambda: release.wait(WAIT))  # blocks until the test ends
        started.set()
        current_token().wait()

    try:
        slow = pool.schedule("slow", 0.0, 0, body, timeout=1.0)
        assert started.wait(WAIT)
        later = pool.schedule("later", 2.0, 0, abs, (-2,))
        clock.advance(1.0)  # the timeout fires; its callback blocks
        with pytest.raises(TaskTimeout):
            slow.result(WAIT)
        clock.wait_for_sleeper(2.0)  # the dispatcher is back waiting for the next head
        clock.advance(1.0)
        assert later.result(WAIT) == 2  # dispatched while the callback still blocks
    finally:
        release.set()


def test_a_timeout_callback_raising_system_exit_does_not_stop_dispatch(make_pool, clock, caplog):
    pool = make_pool(2)
    started = threading.Event()

    def body():
        current_token().add_callback(lambda: (_ for _ in ()).throw(SystemExit(3)))
        started.set()
        current_token().wait()

    slow = pool.schedule("slow", 0.0, 0, body, timeout=1.0)
    assert started.wait(WAIT)
    later = pool.schedule("later", 2.0, 0, abs, (-2,))
    with caplog.at_level(logging.ERROR, logger="pysched"):
        clock.advance(1.0)
        with pytest.raises(TaskTimeout):
            slow.result(WAIT)
        clock.wait_for_sleeper(2.0)
    clock.advance(1.0)
    assert later.result(WAIT) == 2
    assert pool.state == "open"


def test_a_worker_killed_by_a_done_callback_closes_the_pool_and_resolves_everything(
        make_pool, clock, caplog):
    pool = make_pool(1)
    gate = Gate()
    first = pool.submit(gate)
    gate.wait_started()
    after = pool.submit(abs, -1)  # claimed by the same worker as it finishes the first
    later = pool.schedule("later", 5.0, 0, print)

    def die(_):
        raise SystemExit("a done callback that ends its thread")

    first.add_done_callback(die)
    with caplog.at_level(logging.ERROR, logger="pysched"):
        gate.release()
        assert pool.close(wait=True, timeout=WAIT)
    assert first.result(0) is None
    assert after.done() and later.done()
    assert later.cancelled() and later.cancel_reason == "closed"
    if not after.cancelled():  # started by the worker that died before running it
        assert isinstance(after.exception(0), RuntimeError)
    assert any("died" in record.getMessage() for record in caplog.records)


def test_a_slow_done_callback_holds_back_no_claimed_task(make_pool):
    pool = make_pool(2)
    first, second = Gate(), Gate()
    head = pool.submit(first)
    other = pool.submit(second)
    first.wait_started()
    second.wait_started()
    ran = threading.Event()
    target = pool.submit(ran.set)  # both workers busy: it waits in the core
    saw_target_run = []
    head.add_done_callback(lambda _: saw_target_run.append(ran.wait(WAIT)))
    first.release()  # its worker runs the callback, which waits for target
    second.release()  # the other worker must be free to run target
    target.result(WAIT)
    other.result(WAIT)
    assert pool.close(wait=True, timeout=WAIT)
    assert saw_target_run == [True], "target waited behind the callback that waited for it"


class OnceBroken:
    """A task id whose hash raises once, when armed: a fault inside the pool's lock."""

    def __init__(self) -> None:
        self.armed = False

    def __hash__(self) -> int:
        if self.armed:
            self.armed = False
            raise TypeError("unhashable for a moment")
        return 1

    def __eq__(self, other: object) -> bool:
        return self is other


def test_a_worker_dying_as_it_claims_still_settles_the_task_it_ran(make_pool, clock):
    # The pool promises that a pool thread dying of any exception closes the
    # pool "so every Future resolves". A worker that ran a task and then died
    # claiming the next one (here: that one's id refuses its hash once) left
    # the task it ran RUNNING for good, its result lost.
    pool = make_pool(1)
    poisoned = OnceBroken()

    def body():
        poisoned.armed = True  # the worker hashes it next, claiming it
        return "ran"

    later = pool.schedule(poisoned, 1.0, 0, print)
    clock.advance(1.0)
    first = pool.schedule("first", 0.0, 5, body)  # due first: higher priority
    assert first.result(WAIT) == "ran"
    assert pool.close(wait=True, timeout=WAIT)
    assert later.done()


class ClockThatFailsOnce(FakeClock):
    """A FakeClock that raises a BaseException once, on the thread that arms it."""

    armed_on: int | None = None

    def __call__(self) -> float:
        if self.armed_on == threading.get_ident():
            self.armed_on = None
            raise Interrupt("the clock, read by the worker after the task returned")
        return super().__call__()


def test_a_worker_killed_by_the_clock_after_a_task_still_settles_it(make_pool):
    clock = ClockThatFailsOnce()
    pool = make_pool(1, clock=clock)

    def body():
        clock.armed_on = threading.get_ident()
        return "ran"

    fut = pool.submit(body)
    assert pool.close(wait=True, timeout=WAIT)  # the worker dies: the pool closes
    assert fut.done(), "the Future of a task that ran stayed running after close"


class CallsBackWhenFreed:
    """A task id whose finaliser calls back into the pool: it must never run under the lock.

    It takes the pool's lock as any call into the pool would, with a timeout,
    so that a finaliser run under the lock fails the test instead of hanging it.
    """

    def __init__(self, name: str, pool, freed: list) -> None:
        self.name, self.pool, self.freed = name, pool, freed

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CallsBackWhenFreed) and other.name == self.name

    def __del__(self) -> None:
        lock = self.pool._lock
        took = lock.acquire(timeout=WAIT)
        if took:
            lock.release()
        self.freed.append(took)


@pytest.mark.parametrize("end", ["cancel", "close", "run"])
def test_a_replaced_task_ids_finaliser_never_runs_under_the_lock(make_pool, clock, end):
    # The pool promises that objects a call drops are held until its lock is
    # released, so their finalisers run outside it. The core and the book keep
    # the id object of the first version of an id as their key; once every
    # Future of it was gone, the call that made them forget the id dropped it
    # under the lock, and a finaliser calling back into the pool deadlocked.
    pool = make_pool(1)
    freed: list = []

    def ending():
        if end == "cancel":
            pool.cancel(CallsBackWhenFreed("t", pool, freed))
        elif end == "close":
            pool.close(wait=False)
        else:
            clock.advance(10.0)
            assert latest.result(WAIT) == 0

    pool.schedule(CallsBackWhenFreed("t", pool, freed), 10.0, 0, print)
    latest = pool.schedule(CallsBackWhenFreed("t", pool, freed), 10.0, 0, int)
    ending()
    gc.collect()
    assert freed and all(freed), "a task id's finaliser ran under the pool's lock"
