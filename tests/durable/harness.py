"""Crash and multi-process harness: a driver, worker processes it SIGKILLs, and a run log.

The work is the registered task ``record``: it appends ``S`` when it starts
and ``E`` when it ends (task id, tag, attempt, owner, wall time) to a log
opened with O_APPEND, one ``write`` per line, so a SIGKILL leaves whole
lines only. Tags name versions from the driver's side: a task's tag changes
with every replacement, so a run of a superseded or cancelled version shows
up in the log as a forbidden tag.

Used by tests/durable/test_durable_crash.py and benchmarks/bench_durable.py.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pysched import durable
from pysched.durable import NewTask, Store, current_task

WORKER = Path(__file__).with_name("worker.py")
FAR = 10 * 24 * 3600.0  # "never due" during a run: ten days ahead
SENTINEL = "zz-sentinel"  # keeps the last worker running through a database restart

_log_fd: int | None = None
_owner = ""
_pause = 0.0


def set_log(path: str, owner: str, pause: float) -> None:
    """Worker side: where ``record`` writes, and how long a run lasts at most."""
    global _log_fd, _owner, _pause
    _log_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    _owner, _pause = owner, pause


@durable.task(name="record")
def record(tag: int) -> None:
    running = current_task()
    assert running is not None and _log_fd is not None
    head = f"{running.task_id} {tag} {running.attempt} {_owner}"
    os.write(_log_fd, f"S {head} {time.time():.6f}\n".encode())
    if _pause:
        time.sleep(random.uniform(0, _pause))  # a window for a kill to land mid-run
    os.write(_log_fd, f"E {head} {time.time():.6f}\n".encode())


def args(tag: int) -> str:
    return json.dumps({"args": [tag], "kwargs": {}})


@dataclass
class Plan:
    """What the driver scheduled: the tag each task must run with, and what must never run."""

    final: dict[str, int] = field(default_factory=dict)  # id -> latest tag (not cancelled)
    forbidden: set[tuple[str, int]] = field(default_factory=set)  # superseded versions
    cancelled: set[str] = field(default_factory=set)
    later: list[list[tuple[str, str]]] = field(default_factory=list)  # per round: (op, id)


def populate(store: Store, n: int, spread: float, rounds: int, seed: int) -> Plan:
    """Schedule ``n`` tasks due over ``spread`` seconds; plan replaces and cancels.

    5% are replaced at once by a version due elsewhere in the window; 10% start
    ten days out and are moved into the window during the run (their first
    version superseded); 5% start ten days out and are cancelled during the run.
    """
    rng = random.Random(seed)
    now = time.time()
    plan = Plan()
    first, second, parked = [], [], []
    for i in range(n):
        task_id = f"t{i:05d}"
        kind = rng.random()
        if kind < 0.15:
            first.append(NewTask(task_id, now + FAR, 0, "record", args(0)))
            plan.forbidden.add((task_id, 0))
            if kind < 0.05:
                plan.cancelled.add(task_id)
                parked.append(("cancel", task_id))
            else:
                plan.final[task_id] = 1
                parked.append(("move", task_id))
            continue
        first.append(NewTask(task_id, now + rng.uniform(0, spread), rng.randrange(4), "record",
                             args(0)))
        plan.final[task_id] = 0
        if kind < 0.20:  # replaced before any worker starts: version 1 never runs
            second.append(NewTask(task_id, now + rng.uniform(0, spread), 0, "record", args(1)))
            plan.forbidden.add((task_id, 0))
            plan.final[task_id] = 1
    # One transaction: a replaced first version is never visible, so it can never run.
    store.schedule(first + second)
    rng.shuffle(parked)
    plan.later = [parked[k::rounds] for k in range(rounds)] if rounds else [parked]
    return plan


def apply_round(store: Store, plan: Plan, k: int, window: float) -> None:
    """Move or cancel the parked tasks of round ``k`` (another process's writes, to the workers)."""
    moves = [NewTask(i, time.time() + random.uniform(0, window), 0, "record", args(1))
             for op, i in plan.later[k] if op == "move"]
    store.schedule(moves)
    for op, i in plan.later[k]:
        if op == "cancel":
            assert store.cancel(i) is not None


def start_worker(target: str, table: str, owner: str, log: str, *, lease: float,
                 heartbeat: float | None = None, workers: int = 4, prefetch: int = 4,
                 pause: float = 0.002, exit_when_done: bool = False,
                 tolerate_store_errors: bool = False, wait: bool = True
                 ) -> subprocess.Popen[str]:
    """Start a worker process; with ``wait``, wait until its scheduler is up."""
    cmd = [sys.executable, str(WORKER), target, table, owner, log, "--lease", str(lease),
           "--workers", str(workers), "--prefetch", str(prefetch), "--pause", str(pause)]
    if heartbeat is not None:
        cmd += ["--heartbeat", str(heartbeat)]
    if exit_when_done:
        cmd.append("--exit-when-done")
    if tolerate_store_errors:
        cmd.append("--tolerate-store-errors")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    return wait_ready(proc) if wait else proc


def wait_ready(proc: subprocess.Popen[str]) -> subprocess.Popen[str]:
    """Wait for a worker's ``ready`` line."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise RuntimeError(f"worker {proc.args!r} did not start: {line!r}, exit {proc.wait()}")
    return proc


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    reap(proc)


def reap(proc: subprocess.Popen[str], timeout: float = 600) -> int:
    """Wait for a worker to exit and close its pipe; its exit code."""
    code = proc.wait(timeout)
    assert proc.stdout is not None
    proc.stdout.close()
    return code


def wait_for_ends(path: str, count: float) -> None:
    """Wait until the log holds ``count`` ends, reading only what was appended (cheap:
    the driver shares the CPUs with the workers and must not fall behind them)."""
    seen = 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read()
            seen += chunk.count(b"E ")  # "E " starts only end lines: ids and owners have no "E "
            if seen >= count:
                return
            time.sleep(0.002)


def read_log(path: str) -> list[tuple[str, str, int, int, str, float]]:
    """(kind, task id, tag, attempt, owner, time) for every whole line of the log."""
    runs = []
    with open(path) as f:
        for line in f:
            kind, task_id, tag, attempt, owner, at = line.split()
            runs.append((kind, task_id, int(tag), int(attempt), owner, float(at)))
    return runs


def crash_run(target: str, table: str, log: str, *, n: int, kills: int, seed: int,
              spread: float, max_delay: float, lease: float = 30.0,
              stable_owner: bool = True,
              restart: Callable[[], None] | None = None) -> dict[str, Any]:
    """Schedule ``n`` tasks, SIGKILL a worker ``kills`` times at random points, then let
    one run until nothing is pending or running. Returns the figures.

    With ``restart`` (a database server restart), the last worker lives through one:
    a parked sentinel keeps it from finishing early; after the restart the driver
    schedules 50 more tasks and moves the sentinel in, which that worker must run."""
    rng = random.Random(seed)
    store = durable.open_store(target, table=table)
    plan = populate(store, n, spread, kills, seed)
    started = time.monotonic()
    for k in range(kills):
        owner = "crash-worker" if stable_owner else f"crash-worker-{k}"
        proc = start_worker(target, table, owner, log, lease=lease)
        time.sleep(rng.uniform(0, max_delay))
        apply_round(store, plan, k, spread / 2)
        kill(proc)
    if not kills:
        apply_round(store, plan, 0, spread / 2)
    if restart is not None:
        store.schedule([NewTask(SENTINEL, time.time() + FAR, 0, "record", args(0))])
        plan.forbidden.add((SENTINEL, 0))
    last = start_worker(target, table, "crash-worker" if stable_owner else "crash-final", log,
                        lease=lease, exit_when_done=True,
                        tolerate_store_errors=restart is not None)
    if restart is not None:
        time.sleep(0.2)
        restart()
        after = [NewTask(f"after{i:02d}", time.time(), 0, "record", args(0)) for i in range(50)]
        store.schedule([*after, NewTask(SENTINEL, time.time(), 0, "record", args(1))])
        plan.final.update({t.task_id: 0 for t in after})
        plan.final[SENTINEL] = 1
    assert reap(last) == 0
    elapsed = time.monotonic() - started
    figures = check(plan, read_log(log), store)
    store.close()
    return {**figures, "kills": kills, "tasks": n, "seconds": round(elapsed, 2)}


def check(plan: Plan, runs: list[tuple[str, str, int, int, str, float]],
          store: Store) -> dict[str, Any]:
    """Lost, forbidden and re-run counts from the log, and the store's final states."""
    starts = [(r[1], r[2]) for r in runs if r[0] == "S"]
    ends = {(r[1], r[2]) for r in runs if r[0] == "E"}
    lost = [i for i, tag in plan.final.items() if (i, tag) not in ends]
    forbidden = [s for s in starts if s in plan.forbidden or s[0] in plan.cancelled]
    states = store.counts()
    return {"lost": len(lost), "forbidden_runs": len(forbidden),
            "runs": len(starts), "reruns": len(starts) - len(set(starts)),
            "interrupted": len(starts) - sum(1 for r in runs if r[0] == "E"),
            "completed_rows": states.get("completed", 0), "cancelled_rows":
            states.get("cancelled", 0), "expected_completed": len(plan.final),
            "expected_cancelled": len(plan.cancelled), "other_rows": {
                s: c for s, c in states.items() if s not in ("completed", "cancelled")}}


def share_run(target: str, table: str, log: str, *, n: int, procs: int, lease: float,
              heartbeat: float, kill_at: float | None, seed: int, spread: float,
              workers: int = 4, prefetch: int = 16, task_pause: float = 0.002,
              stops: int = 0) -> dict[str, Any]:
    """``procs`` workers share ``n`` tasks; the first is SIGKILLed once ``kill_at`` of
    them have ended (no kill for None); the last is stopped (SIGSTOP) ``stops`` times
    for two and a half leases each, then continued, as a paused or starved host would
    be: it holds claims whose leases lapse meanwhile. Returns figures, including
    duplicate runs under a live lease and the tasks per second between the first
    start and the last end (meaningful without a kill: a takeover waits for a lease)."""
    store = durable.open_store(target, table=table)
    owners = [f"node-{k}" for k in range(procs)]
    # Every worker is up, on an empty table, before the first task is scheduled.
    running = [wait_ready(start_worker(target, table, o, log, lease=lease, workers=workers,
                                       prefetch=prefetch, exit_when_done=True, wait=False,
                                       heartbeat=heartbeat, pause=task_pause))
               for o in owners]
    # The leases the killed node held, frozen at its death: task id -> lease expiry.
    frozen: dict[str, float] = {}

    def kill_first() -> None:
        wait_for_ends(log, kill_at * n)  # type: ignore[operator]
        # Kill while the node holds leases, which is what the takeover checks: right
        # after a batch's outcomes are stored it may briefly hold none.
        deadline = time.monotonic() + 60
        while not store.held_by(owners[0]) and time.monotonic() < deadline:
            time.sleep(0.001)
        kill(running[0])
        for task_id in store.held_by(owners[0]):  # the dead release nothing any more
            row = store.get(task_id)
            # Read apart from held_by: by now the lease may have lapsed and a survivor
            # claimed the row, whose lease is then not the one frozen.
            if row is not None and row["lease_owner"] == owners[0]:
                frozen[task_id] = row["lease_expires"]

    def stop_last() -> None:
        wait_for_ends(log, n / 10)
        for _ in range(stops):
            running[-1].send_signal(signal.SIGSTOP)
            time.sleep(2.5 * lease)
            running[-1].send_signal(signal.SIGCONT)
            time.sleep(lease / 2)

    killer = threading.Thread(target=kill_first) if kill_at is not None else None
    if killer is not None:  # watches from the start: the driver's writes below take a while
        killer.start()
    stopper = threading.Thread(target=stop_last) if stops else None
    if stopper is not None:
        stopper.start()
    started = time.monotonic()
    plan = populate(store, n, spread, 1, seed)
    apply_round(store, plan, 0, spread)  # every parked task moves or is cancelled up front
    if killer is not None:
        killer.join()
    if stopper is not None:
        stopper.join()
    for proc in running[1:] if killer is not None else running:
        assert reap(proc) == 0
    elapsed = time.monotonic() - started
    runs = read_log(log)
    figures = check(plan, runs, store)
    store.close()
    # A second start of a version is legal only under a newer claim: a higher attempt
    # than every earlier start's (the store claims a row again only once the lease
    # before has expired or been released). A start under an older claim than one
    # already started is a worker starting a claim whose lease had lapsed, while the
    # newer claim's lease was live. A re-run of the killed node's versions must also
    # wait for its frozen lease (the store's clock and the log's are this machine's).
    # Re-runs by survivors (a lease lost while a node was starved) are at-least-once:
    # counted, not refused.
    by_task: dict[tuple[str, int], list[tuple[float, str, int]]] = {}
    for kind, task_id, tag, attempt, owner, at in runs:
        if kind == "S":
            by_task.setdefault((task_id, tag), []).append((at, owner, attempt))
    live_duplicates = survivor_reruns = 0
    for (task_id, _), starts in by_task.items():
        starts.sort()
        for k, (at2, _, attempt2) in enumerate(starts[1:], 1):
            newest = max(starts[:k], key=lambda s: s[2])
            _, owner1, attempt1 = newest
            if attempt2 <= attempt1 or owner1 == owners[0] and task_id in frozen \
                    and at2 < frozen[task_id]:
                live_duplicates += 1
            elif owner1 != owners[0]:
                survivor_reruns += 1
    # Takeovers: each version the killed node held is run by a survivor on a later
    # claim, after the lease expired (whether or not the dead node had started it).
    taken = {r[1] for r in runs if r[0] == "S" and r[1] in frozen and r[4] != owners[0]
             and r[3] >= 2 and r[5] >= frozen[r[1]]}
    first = min(r[5] for r in runs)
    last = max(r[5] for r in runs if r[0] == "E")
    rate = round(len(plan.final) / (last - first))
    return {**figures, "procs": procs, "tasks": n, "live_duplicates": live_duplicates,
            "survivor_reruns": survivor_reruns,
            "held_at_kill": len(frozen), "taken_over": len(taken), "killed": owners[0],
            "runs_by_owner": {o: sum(1 for r in runs if r[0] == "E" and r[4] == o) for o in owners},
            "seconds": round(elapsed, 2), "tasks_per_s_run_window": rate}
