"""DurableScheduler on each store: runs, replacement, cancel, close, restart, hostile rows.

Tasks are the registered ones in support.durable; tests wait on Futures and
events with generous hang guards and assert outcomes, never durations.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import pytest

from pysched import SchedulerClosed
from pysched.durable import DurableScheduler, MemoryStore, NewTask, NotDurable, TaskRegistry

import support.durable as h

ARGS = '{"args":[],"kwargs":{}}'



@pytest.fixture
def make(store_spec: dict[str, Any]) -> Any:
    yield from h.schedulers(store_spec)

def test_runs_with_args_and_reports_results_and_errors(make: Any) -> None:
    s = make(max_workers=2)
    now = s.clock()
    ok = s.schedule("a", now, 0, h.note, [1, "x"], {})
    bad = s.schedule_in("b", 0.0, 0, h.fail, args=["broken"])
    assert ok.result(30) == 1
    with pytest.raises(ValueError, match="broken"):
        bad.result(30)
    h.wait_for(lambda: s.row("b")["state"] == "failed", what="the failure to be stored")
    error = s.row("b")["error"]
    assert error.startswith("ValueError: broken\n") and "in fail" in error  # with its traceback
    assert s.row("a")["state"] == "completed" and s.row("a")["attempts"] == 1
    assert ("a", 1, "x") in h.CALLS


def test_order_is_time_then_priority_then_fifo(make: Any) -> None:
    s = make(max_workers=1, prefetch=0)
    past = s.clock() - 10
    futures = s.schedule_many([("low", past, 0, h.note, ["low"]),
                               ("high", past, 9, h.note, ["high"]),
                               ("low2", past, 0, h.note, ["low2"]),
                               ("first", past - 1, -5, h.note, ["first"])])
    for f in futures:
        f.result(30)
    assert [c[1] for c in h.CALLS] == ["first", "high", "low", "low2"]


def test_replace_and_cancel_before_the_run(make: Any) -> None:
    s = make()
    later = s.clock() + 3600
    old = s.schedule("a", later, 0, h.note, args=["old"])
    new = s.schedule("a", s.clock(), 0, h.note, args=["new"])
    gone = s.schedule("b", later, 0, h.note, args=["b"])
    assert (old.version, new.version) == (1, 2)
    assert old.cancelled()
    assert s.cancel("b") and gone.cancelled()
    assert not s.cancel("b") and not s.cancel("never-scheduled")
    assert new.result(30) == "new"
    assert s.row("b")["state"] == "cancelled" and s.row("b")["version"] == 2
    assert [c for c in h.CALLS if c[0] in ("a", "b")] == [("a", "new")]


def test_future_cancel_removes_a_pending_version_only(make: Any) -> None:
    s = make()
    pending = s.schedule("p", s.clock() + 3600, 0, h.note)
    assert pending.cancel() and pending.cancelled()
    assert s.row("p")["state"] == "cancelled"
    running = s.schedule("r", s.clock(), 0, h.hold, args=["r-started", "r-release"])
    assert h.event("r-started").wait(30)
    assert not running.cancel()  # running: the Future cannot stop it
    h.event("r-release").set()
    assert running.result(30) is False


def test_replace_while_running_waits_for_the_old_version(make: Any) -> None:
    s = make(max_workers=4)
    first = s.schedule("a", s.clock(), 0, h.hold, args=["v1-started", "v1-release", "v1"])
    assert h.event("v1-started").wait(30)
    second = s.schedule("a", s.clock(), 0, h.note, args=["v2"])
    assert s.row("a")["version"] == 2 and s.row("a")["state"] == "pending"
    assert ("a", "v2") not in h.CALLS  # free workers, but version 1 still holds the lease
    h.event("v1-release").set()
    assert second.result(30) == "v2"
    assert first.result(30) is False  # it ran; the store kept version 2's outcome
    assert [c for c in h.CALLS if c[0] == "a"] == [("a", "start", "v1"), ("a", "end", "v1"),
                                                  ("a", "v2")]
    h.wait_for(lambda: s.stats()["not_recorded"] == 1, what="v1's outcome to be refused")
    assert s.row("a")["state"] == "completed" and s.row("a")["version"] == 2


def test_cancel_reaches_a_running_task(make: Any) -> None:
    s = make()
    f = s.schedule("a", s.clock(), 0, h.hold, args=["c-started", "c-release"])
    assert h.event("c-started").wait(30)
    assert s.cancel("a")
    h.event("c-release").set()
    assert f.result(30) is True  # cancel_requested was set while it ran
    h.wait_for(lambda: s.row("a")["lease_owner"] is None, what="the lease to be released")
    assert s.row("a")["state"] == "cancelled"


def test_work_that_cannot_be_stored_is_refused_and_nothing_is_written(make: Any) -> None:
    s = make()
    with pytest.raises(NotDurable, match="lambda"):
        s.schedule("a", 0, 0, lambda: None)

    def nested() -> None:
        pass

    with pytest.raises(NotDurable, match="inside a function"):
        s.schedule("a", 0, 0, nested)
    with pytest.raises(NotDurable, match="not in allowed_modules"):
        s.schedule("a", 0, 0, h.module_level_function)
    with pytest.raises(NotDurable, match="JSON"):
        s.schedule("a", 0, 0, h.note, args=[object()])
    with pytest.raises(NotDurable, match="JSON"):
        s.schedule("a", 0, 0, h.note, args=[math.nan])
    with pytest.raises(TypeError, match="task_id must be a str"):
        s.schedule(7, 0, 0, h.note)
    with pytest.raises(ValueError, match="run_at must be finite"):
        s.schedule("a", math.inf, 0, h.note)
    with pytest.raises(ValueError, match="delay must be >= 0"):
        s.schedule_in("a", -1.0, 0, h.note)
    with pytest.raises(TypeError, match="priority"):
        s.schedule("a", 0, 1.5, h.note)
    with pytest.raises(TypeError):  # one bad item stores none of the batch
        s.schedule_many([("ok", 0, 0, h.note), ("bad", 0, 0, print)])
    assert s.row("a") is None and s.row("ok") is None


def test_close_keeps_pending_rows_and_fails_their_futures(make: Any) -> None:
    s = make()
    f = s.schedule("later", s.clock() + 3600, 0, h.note)
    assert s.close() is True
    assert s.close() is True  # idempotent
    assert s.closed and s.state == "closed"
    with pytest.raises(SchedulerClosed):
        f.result(0)
    with pytest.raises(SchedulerClosed):
        s.schedule("x", 0, 0, h.note)


def test_close_from_inside_a_task_does_not_deadlock(make: Any) -> None:
    s = h.SCHEDULERS["done"] = make()
    assert s.schedule("a", s.clock(), 0, h.close_self, args=["done"]).result(30) == "done"
    h.wait_for(lambda: s.closed, what="close to finish")


def test_a_restart_rebuilds_the_heap_from_the_store(make: Any) -> None:
    first = make(clock=lambda: 0.0)  # its clock stands still: nothing comes due in it
    first.schedule_many([(f"t{i}", 0.05 * (i % 3 + 1), i, h.note, [i]) for i in range(30)])
    first.schedule("never", first.clock() + 3600, 0, h.note)
    first.cancel("t0")
    first.close()  # nothing may have run yet: everything is still in the store
    second = make(max_workers=3)
    h.wait_for(lambda: second.store.counts().get("completed", 0) == 29, what="29 runs")
    assert sorted(c[1] for c in h.CALLS) == list(range(1, 30))
    assert second.row("never")["state"] == "pending" and second.stats()["local_pending"] == 1


def test_a_restart_under_the_same_owner_reclaims_its_leases_at_once(make: Any) -> None:
    crashed = make()
    crashed.close()
    crashed.store.schedule([NewTask("a", 0.0, 0, "note", ARGS)])
    # The "crashed" run: 5 s left of a 30 s lease, so last renewed two heartbeats ago
    # and more (one renewed since may be a live process's: tests/durable/test_durable_owner.py).
    (claim,) = crashed.store.claim(1e9, 1, "node-1", 5.0)
    s = make(owner="node-1", lease=30.0)
    h.wait_for(lambda: s.row("a")["state"] == "completed", what="the re-run")
    assert s.row("a")["attempts"] == 2 and s.stats()["reruns"] == 1


def test_another_owner_takes_over_an_expired_lease(make: Any) -> None:
    s = make()
    s.store.schedule([NewTask("a", 0.0, 0, "note", ARGS)])
    s.store.claim(1e9, 1, "dead-node", -1.0)  # claimed by a node whose lease ran out
    h.wait_for(lambda: s.row("a")["state"] == "completed", what="the takeover")
    assert s.row("a")["attempts"] == 2


def test_hostile_rows_get_an_error_and_the_rest_run(make: Any, store_spec: dict[str, Any]) -> None:
    registry = TaskRegistry(allowed_modules=["support.durable"])
    registry.register(h.note, "note")
    s = make(registry=registry, resync_interval=0.05, stale_after=0.01)
    rows = {"badjson": ("note", "{not json", 1), "badshape": ("note", '[1, 2]', 1),
            "future": ("note", ARGS, 2), "missing": ("support.durable:missing", ARGS, 1)}
    # Names this worker does not serve are left for one that does, never run or marked.
    unserved = {"unknown": ("no-such-task", ARGS, 1),
                "imports": ("os:system", json.dumps({"args": ["true"], "kwargs": {}}), 1)}
    for task_id, (ref, args, fmt) in {**rows, **unserved}.items():
        h.put_raw(s.store, store_spec, task_id=task_id, ref=ref, args=args, fmt=fmt)
    good = s.schedule_many([(f"ok{i}", s.clock(), 0, h.note, [i]) for i in range(10)])
    for f in good:
        f.result(30)
    h.wait_for(lambda: all(s.row(i)["state"] == "error" for i in rows), what="errors stored")
    errors = {i: s.row(i)["error"] for i in rows}
    assert "not valid JSON" in errors["badjson"]
    assert "JSON object" in errors["badshape"]
    assert "row format 2 is newer" in errors["future"]
    assert "has no attribute 'missing'" in errors["missing"]
    assert s.stats()["errors"] == len(rows)
    h.wait_for(lambda: s.stats()["unclaimed"] == len(unserved), what="unclaimed rows in stats")
    assert all(s.row(i)["state"] == "pending" and s.row(i)["attempts"] == 0 for i in unserved)


def test_rows_with_impossible_fields_are_marked_at_sync(
        make: Any, store_spec: dict[str, Any]) -> None:
    if store_spec["kind"] == "postgres":
        pytest.skip("PostgreSQL's column types refuse these values at insert")
    s = make(resync_interval=0.05)  # the memory store has no other way to see a raw write
    h.put_raw(s.store, store_spec, task_id="textver", version="x")
    h.put_raw(s.store, store_spec, task_id="textrun", run_at="soon")
    h.put_raw(s.store, store_spec, task_id="negver", version=-3)
    s.schedule("fine", s.clock(), 0, h.note).result(30)
    h.wait_for(lambda: all(s.row(i)["state"] == "error" for i in ("textver", "textrun", "negver")),
               what="errors stored")
    assert "version 'x' is not a positive" in s.row("textver")["error"]
    assert "run_at 'soon' is not a finite time" in s.row("textrun")["error"]


def test_schedules_from_another_scheduler_are_seen(make: Any, store_spec: dict[str, Any]) -> None:
    """Two schedulers on the same data: the client's schedule and cancel reach the worker."""
    if store_spec["kind"] == "memory":
        pytest.skip("a memory store is one process's")
    worker = make(max_workers=2, resync_interval=3600)
    client = make(max_workers=1, resync_interval=3600)
    client.schedule("far", client.clock() + 3600, 0, h.note)
    h.wait_for(lambda: worker.stats()["local_pending"] == 1, what="the worker to see it")
    client.cancel("far")
    h.wait_for(lambda: worker.stats()["local_pending"] == 0, what="the cancel to reach it")
    done = [client.schedule(f"n{i}", client.clock(), 0, h.note, args=[i]) for i in range(20)]
    for f in done:
        f.result(30)  # whichever of the two ran it, the client's Future settles
    h.wait_for(lambda: client.store.counts().get("completed", 0) == 20, what="20 runs")
    assert sorted(c[1] for c in h.CALLS) == list(range(20))  # exactly once each


def test_three_schedulers_share_one_schedule_without_duplicates(
        make: Any, store_spec: dict[str, Any]) -> None:
    if store_spec["kind"] == "memory":
        pytest.skip("a memory store is one process's")
    nodes = [make(max_workers=2, prefetch=4) for _ in range(3)]
    nodes[0].schedule_many([(f"t{i}", nodes[0].clock(), i % 4, h.note, [i]) for i in range(300)])
    h.wait_for(lambda: nodes[0].store.counts() == {"completed": 300}, what="300 runs")
    assert sorted(c[1] for c in h.CALLS) == list(range(300))
    assert sum(n.stats()["claimed"] for n in nodes) == 300


def test_lock_free_teardown_guard() -> None:
    """Every scheduler thread is a daemon and ends with close (no leaked non-daemon threads)."""
    assert all(t.daemon for t in threading.enumerate() if t.name.startswith("pysched-durable"))


def test_cancel_sets_the_pool_token_of_a_running_task(make: Any) -> None:
    """The worker pool is a ThreadPoolScheduler: pysched.current_token() works in a task."""
    s = make()
    f = s.schedule("a", s.clock(), 0, h.wait_token, args=["t-started"])
    assert h.event("t-started").wait(30)
    assert s.cancel("a")
    assert f.result(30) == "cancelled"


def test_a_reference_through_an_allowed_module_is_refused_and_logged(
        make: Any, store_spec: dict[str, Any], tmp_path: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    """``myapp:os.system`` must not run a shell command because myapp imports os."""
    registry = TaskRegistry(allowed_modules=["support.durable"])
    registry.register(h.note, "note")
    s = make(registry=registry)
    marker = tmp_path / "ran"
    shell = json.dumps({"args": [f"touch {marker}"], "kwargs": {}})
    rows = {"chain": "support.durable:os.system",
            "deeper": "support.durable:subprocess.os.system",
            "class": "support.durable:Holder",
            "alias": "support.durable:alias_of_module_level_function"}
    with caplog.at_level("ERROR", logger="pysched.durable"):
        for task_id, ref in rows.items():
            h.put_raw(s.store, store_spec, task_id=task_id, ref=ref, args=shell)
        s.schedule("ok", s.clock(), 0, h.note, ["fine"]).result(30)
        h.wait_for(lambda: all(s.row(i)["state"] == "error" for i in rows), what="errors stored")
    assert not marker.exists()
    for task_id in rows:
        assert "refused" in s.row(task_id)["error"]
        assert any(task_id in r.getMessage() and "refused" in r.getMessage()
                   for r in caplog.records)


def test_the_heartbeat_renews_only_the_leases_in_flight_here(make: Any) -> None:
    """A lease of this owner that no run here holds (a claim whose answer was lost)
    is left to expire, so its row is claimed again instead of being held forever."""
    s = make(owner="node-1", lease=30.0, heartbeat=0.02)
    s.store.schedule([NewTask("orphan", 0.0, 0, "note", ARGS)])
    # Claimed under this owner's name, but the scheduler never saw the answer.
    (orphan,) = s.store.claim(1e9, 1, "node-1", 3600.0)
    expiry = s.row("orphan")["lease_expires"]
    s.schedule("busy", s.clock(), 0, h.hold, args=["hb-started", "hb-release"])
    assert h.event("hb-started").wait(30)
    before = s.row("busy")["lease_expires"]
    h.wait_for(lambda: s._heartbeat.renewed >= 3 and s.row("busy")["lease_expires"] != before,
               what="heartbeats")
    assert s.row("orphan")["lease_expires"] == expiry
    h.event("hb-release").set()


def test_a_claimed_version_replaced_before_it_started_never_starts(make: Any) -> None:
    """The start rule: a newer version reaching this process between a version's claim
    and its start means the claimed one never starts (here it waits behind a busy worker)."""
    s = make(max_workers=1, prefetch=1)
    s.schedule("busy", s.clock(), 0, h.hold, args=["sr-started", "sr-release"])
    assert h.event("sr-started").wait(30)
    old = s.schedule("victim", s.clock(), 0, h.note, args=["old"])
    h.wait_for(lambda: s.row("victim")["state"] == "running", what="the prefetch claim")
    s.schedule("victim", s.clock() + 3600, 0, h.note, args=["new"])
    h.event("sr-release").set()
    h.wait_for(lambda: s.stats()["not_started"] == 1, what="the hand-back")
    assert ("victim", "old") not in h.CALLS
    h.wait_for(old.done, what="the old version's Future")
    assert old.cancelled()
    h.wait_for(lambda: s.row("victim")["lease_owner"] is None, what="the lease release")
    assert (s.row("victim")["version"], s.row("victim")["state"]) == (2, "pending")


def test_a_claimed_version_cancelled_before_it_started_never_starts_on_any_executor(
        make: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1)
    try:
        s = make(max_workers=1, prefetch=1, executor=pool)
        s.schedule("busy", s.clock(), 0, h.hold, args=["sc-started", "sc-release"])
        assert h.event("sc-started").wait(30)
        s.schedule("victim", s.clock(), 0, h.note, args=["old"])
        h.wait_for(lambda: s.row("victim")["state"] == "running", what="the prefetch claim")
        assert s.cancel("victim")
        h.event("sc-release").set()
        h.wait_for(lambda: s.stats()["not_started"] == 1, what="the hand-back")
        assert ("victim", "old") not in h.CALLS
        assert s.row("victim")["state"] == "cancelled"
    finally:
        h.event("sc-release").set()
        s.close()
        pool.shutdown()


class _SlowFullReads(MemoryStore):
    """A memory store whose full re-reads hang while ``gate`` is shut."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.stuck = threading.Event()

    def rows(self, task_ids: Any = None) -> Any:
        if task_ids is None and not self.gate.is_set():
            self.stuck.set()
            assert self.gate.wait(30)
        return super().rows(task_ids)


def test_a_slow_full_read_never_delays_the_heartbeat() -> None:
    h.reset()
    store = _SlowFullReads()
    s = DurableScheduler(store, lease=5.0, heartbeat=0.02, poll_interval=0.05,
                         resync_interval=0.05)
    try:
        s.schedule("busy", s.clock(), 0, h.hold, args=["slow-started", "slow-release"])
        assert h.event("slow-started").wait(30)
        store.gate.clear()
        assert store.stuck.wait(30)  # housekeeping is now inside a re-read that hangs
        expiry = s.row("busy")["lease_expires"]
        h.wait_for(lambda: s.row("busy")["lease_expires"] > expiry, what="a renewal")
    finally:
        store.gate.set()
        h.event("slow-release").set()
        s.close()


def test_a_worker_repairs_rows_running_without_a_lease_and_reports_unknown_states(
        make: Any, store_spec: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    s = make(resync_interval=0.05)
    with caplog.at_level("WARNING", logger="pysched.durable"):
        h.put_raw(s.store, store_spec, task_id="orphan", state="running")
        h.put_raw(s.store, store_spec, task_id="odd", state="zombie")
        h.wait_for(lambda: s.row("orphan")["state"] == "completed", what="the repaired row's run")
        h.wait_for(lambda: any("does not know" in r.getMessage() for r in caplog.records),
                   what="the unknown state's report")
    assert s.stats()["repaired"] == 1 and s.row("odd")["state"] == "zombie"
    reports = [r for r in caplog.records if "'odd'" in r.getMessage()]
    assert len(reports) == 1  # once, not at every resync
