"""close() and shutdown(): the state machine, from outside and from inside tasks, on a FakeClock."""

from __future__ import annotations

import concurrent.futures as cf
import gc
import subprocess
import sys
import textwrap
import threading

import pytest

import pysched
from pysched import InvalidTransition, SchedulerClosed
from pysched._close_state import check_transition

from support.pool import WAIT, Gate, accounted


def test_close_cancels_pending_and_waits_for_running(make_pool, clock):
    pool = make_pool(2)
    gate = Gate()
    running = pool.schedule("running", 0.0, 0, gate, ("finished",))
    gate.wait_started()
    pending = [pool.schedule(n, 5.0, 0, print) for n in range(20)]
    closer = threading.Thread(target=pool.close)
    closer.start()
    for fut in pending:  # cancelled at once, before close returns
        _wait_cancelled(fut)
    assert all(fut.cancel_reason == "closed" for fut in pending)
    assert pool.state == "closing" and not running.done()
    gate.release()
    closer.join(WAIT)
    assert not closer.is_alive() and pool.state == "closed"
    assert running.result(0) == "finished"
    stats = pool.stats()
    assert (stats["cancelled"], stats["completed"], stats["pending"]) == (20, 1, 0)


def _wait_cancelled(fut):
    with pytest.raises(cf.CancelledError):
        fut.result(WAIT)
    return True


def test_schedule_during_close_raises_and_adds_nothing(make_pool):
    pool = make_pool(1)
    gate = Gate()
    pool.submit(gate)
    gate.wait_started()
    assert pool.close(wait=False) is False  # a task still runs: closing, not closed
    before = pool.stats()
    for call in (lambda: pool.schedule("a", 0.0, 0, print), lambda: pool.submit(print),
                 lambda: pool.schedule_in("a", 1.0, 0, print),
                 lambda: pool.schedule_every("a", 1.0, 0, print)):
        with pytest.raises(SchedulerClosed, match="closing"):
            call()
    after = pool.stats()
    assert after["scheduled"] == before["scheduled"] and after["pending"] == 0
    assert len(pool._core) == 0 and pool._book.pending == {}
    gate.release()
    assert pool.close() is True
    with pytest.raises(SchedulerClosed, match="closed"):
        pool.submit(print)


def test_close_from_inside_a_task_does_not_deadlock(make_pool, clock):
    pool = make_pool(2)
    other = Gate()
    other_done = threading.Event()

    def other_body():
        other()
        other_done.set()

    pool.submit(other_body)
    other.wait_started()
    later = pool.schedule("later", 9.0, 0, print)
    closing = threading.Event()

    def closer():
        closing.set()
        # waits for the other worker, not for its own: its Future resolves after it returns
        returned = pool.close(wait=True)
        return returned, other_done.is_set(), later.cancelled()

    fut = pool.submit(closer)
    assert closing.wait(WAIT)
    other.release()
    assert fut.result(WAIT) == (True, True, True)
    for thread in pool._threads:
        thread.join(WAIT)
    assert pool.state == "closed"


def test_close_from_a_done_callback_on_a_pool_thread(make_pool):
    pool = make_pool(1)
    result = {}
    fut = pool.submit(abs, -1)
    fut.add_done_callback(lambda f: result.setdefault("closed", pool.close(wait=True)))
    assert fut.result(WAIT) == 1
    for thread in pool._threads:
        thread.join(WAIT)
    assert result["closed"] is True and pool.state == "closed"


def test_schedule_from_a_task_during_close_raises_inside_it(make_pool):
    pool = make_pool(1)
    gate = Gate()

    def body():
        gate()
        pool.submit(print)

    fut = pool.submit(body)
    gate.wait_started()
    pool.close(wait=False)
    gate.release()
    assert isinstance(fut.exception(WAIT), SchedulerClosed)


def test_close_with_pending_running_and_recurring_tasks(make_pool, clock):
    pool = make_pool(2)
    started = threading.Event()
    reasons = []

    def cooperative():
        token = pysched.current_token()
        started.set()
        token.wait()
        reasons.append(token.reason)
        return "stopped"

    running = pool.schedule("running", 0.0, 0, cooperative)
    assert started.wait(WAIT)
    pending = pool.schedule("pending", 10.0, 0, print)
    series = pool.schedule_every("series", 1.0, 0, print)
    assert pool.close(wait=True, cancel_running=True) is True
    assert reasons == ["closed"] and running.result(0) == "stopped"
    assert pending.cancelled() and pending.cancel_reason == "closed"
    assert series.cancelled() and series.cancel_reason == "closed"
    assert pool.state == "closed"
    stats = pool.stats()
    assert stats["scheduled"] == accounted(stats) == 3


def test_close_stops_a_series_while_it_runs(make_pool, clock):
    pool = make_pool(1)
    gate = Gate()
    series = pool.schedule_every("series", 1.0, 0, gate, start_at=0.0)
    gate.wait_started()
    pool.close(wait=False)
    assert series.cancelled() and series.cancel_reason == "closed"
    gate.release()
    assert pool.close() is True and pool.stats()["pending"] == 0


def test_close_is_idempotent_and_can_upgrade_to_cancel_running(make_pool):
    pool = make_pool(1)
    started = threading.Event()

    def body():
        started.set()
        return pysched.current_token().wait()

    fut = pool.submit(body)
    assert started.wait(WAIT)
    assert pool.close(wait=False) is False
    assert pool.close(wait=False) is False  # nothing new: still closing
    assert pool.close(wait=True, cancel_running=True) is True  # the second call sets the token
    assert fut.result(0) is True
    assert pool.close() is True and pool.state == "closed"


def test_close_timeout_runs_on_the_clock(make_pool, clock):
    pool = make_pool(1)
    gate = Gate()
    pool.submit(gate)
    gate.wait_started()
    outcome = []
    closer = threading.Thread(target=lambda: outcome.append(pool.close(timeout=5.0)))
    closer.start()
    clock.wait_for_sleeper(5.0)
    clock.advance(5.0)
    closer.join(WAIT)
    assert outcome == [False] and pool.state == "closing"
    gate.release()
    assert pool.close() is True


def test_cancelled_futures_wake_concurrent_futures_wait(make_pool):
    pool = make_pool(1)
    futs = [pool.schedule(n, 50.0, 0, print) for n in range(3)]
    waiter = cf.ThreadPoolExecutor(1).submit(cf.wait, futs)
    pool.close()
    done, not_done = waiter.result(WAIT)
    assert len(done) == 3 and not not_done


def test_shutdown_drains_pending_work_first(make_pool, clock):
    pool = make_pool(2)
    ran = []
    pending = [pool.schedule(n, float(n), 0, ran.append, (n,)) for n in (1, 2, 3)]
    series = pool.schedule_every("series", 0.5, 0, print)
    pool.shutdown(wait=False)
    assert pool.state == "draining" and series.cancelled()
    with pytest.raises(SchedulerClosed, match="draining"):
        pool.submit(print)
    clock.advance(2.0)
    pending[1].result(WAIT)
    assert pool.state == "draining"
    clock.advance(1.0)
    pending[2].result(WAIT)
    pool.shutdown(wait=True)
    assert ran == [1, 2, 3] and pool.state == "closed"


def test_close_while_draining_cancels_the_rest(make_pool, clock):
    pool = make_pool(1)
    futs = [pool.schedule(n, 10.0, 0, print) for n in range(3)]
    pool.shutdown(wait=False)
    assert pool.close() is True
    assert all(fut.cancel_reason == "closed" for fut in futs)


def test_shutdown_cancel_futures(make_pool):
    pool = make_pool(1)
    futs = [pool.schedule(n, 10.0, 0, print) for n in range(3)]
    pool.shutdown(wait=True, cancel_futures=True)
    assert all(fut.cancelled() for fut in futs) and pool.state == "closed"


def test_an_empty_drain_closes_at_once(make_pool):
    pool = make_pool(1)
    pool.shutdown(wait=True)
    assert pool.state == "closed"


def test_illegal_transitions():
    assert check_transition("open", "closing") == "closing"
    for old, new in [("closed", "open"), ("closing", "open"), ("open", "closed"),
                     ("draining", "open")]:
        with pytest.raises(InvalidTransition, match=f"from {old} to {new}"):
            check_transition(old, new)


def test_shutdown_from_inside_a_task_does_not_wait_for_the_drain(make_pool, clock):
    # The pending version of "job" waits for the running one, which calls
    # shutdown(wait=True): waiting for the drain would wait for itself.
    pool = make_pool(2)

    def body():
        pool.schedule("job", 0.0, 0, abs, (-2,))
        pool.shutdown(wait=True)
        return pool.state

    first = pool.schedule("job", 0.0, 0, body)
    assert first.result(WAIT) == "draining"
    pool.shutdown(wait=True)  # from outside: waits for the second version
    assert pool.state == "closed" and pool.stats()["completed"] == 2


# -- the interpreter's exit and an unreferenced pool, as ThreadPoolExecutor ----------

def _run_child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, check=False)


def test_work_submitted_before_exit_runs_before_the_interpreter_exits():
    child = _run_child("""
        import time, pysched
        pool = pysched.ThreadPoolScheduler(2)
        pool.submit(lambda: (time.sleep(0.3), print("apple")))
        pool.schedule_in("later", 3600.0, 0, print, ("never",))
    """)
    assert (child.returncode, child.stdout, child.stderr) == (0, "apple\n", "")


def test_shutdown_without_waiting_then_exit_keeps_the_running_task():
    child = _run_child("""
        import threading, pysched
        started = threading.Event()
        def task():
            started.set()
            threading.Event().wait(0.3)
            print("apple")
        pool = pysched.ThreadPoolScheduler(2)
        pool.submit(task)
        started.wait()
        pool.shutdown(wait=False)
    """)
    assert (child.returncode, child.stdout, child.stderr) == (0, "apple\n", "")


def test_submit_after_the_interpreter_began_to_exit_raises_runtime_error():
    child = _run_child("""
        import atexit, pysched
        @atexit.register
        def last():  # atexit runs after threading's exit hooks
            try:
                pool.submit(print, "never")
            except RuntimeError as exc:
                print(type(exc).__name__, exc)
        pool = pysched.ThreadPoolScheduler(2)
    """)
    assert child.stdout == ("RuntimeError cannot schedule new futures after interpreter"
                            " shutdown\n"), child
    assert child.returncode == 0


def test_an_unreferenced_pool_runs_its_work_and_its_threads_exit(impl):
    pool = pysched.ThreadPoolScheduler(3, _core_factory=impl.Scheduler)
    futures = [pool.submit(abs, -n) for n in range(10)]
    threads = list(pool._threads)
    del pool
    gc.collect()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), f"{thread.name} outlived its unreferenced pool"
    assert [f.result(0) for f in futures] == list(range(10))


@pytest.mark.parametrize("bad", [0, -1])
def test_max_workers_below_one_is_refused_in_thread_pool_executors_words(bad):
    with pytest.raises(ValueError, match="max_workers must be greater than 0"):
        pysched.ThreadPoolScheduler(bad)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_exits_without_waiting_for_its_parents_pool_threads():
    child = _run_child("""
        import os, pysched
        pool = pysched.ThreadPoolScheduler(2)
        pool.submit(abs, -1).result()
        pid = os.fork()
        if pid == 0:
            raise SystemExit(7)  # the child exits through the interpreter's exit hooks
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    assert (child.returncode, child.stdout) == (0, "7\n"), child


def test_a_closed_pool_is_freed_without_the_cycle_collector(impl):
    import weakref

    gc.disable()
    try:
        pool = pysched.ThreadPoolScheduler(2, _core_factory=impl.Scheduler)
        assert pool.submit(abs, -1).result(WAIT) == 1
        pool.schedule("t", 0.0, 0, abs, (-2,), timeout=60.0).result(WAIT)
        assert pool.close(wait=True, timeout=WAIT)
        parts = [weakref.ref(pool._pool), weakref.ref(pool._book), weakref.ref(pool._threads[0])]
        del pool
        assert [part() for part in parts] == [None, None, None]
    finally:
        gc.enable()
