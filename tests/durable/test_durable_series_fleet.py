"""Worker processes sharing one durable series firing every second, on PostgreSQL and SQLite.

Each run of the series appends ``start``/``end`` lines with its fire time to a
log (tests/durable/series_worker.py), each process its events to another.
The checks: every fire time in the window ran exactly once (without a kill)
or at least once (with one process SIGKILLed mid-run, and taken over by
another), two runs of one fire time never overlapped in time (unless the first
outlasted the lease: a stalled machine), none started before its instant, and
a fire time that did not run is named in a skipped or coalesced event.
The default run lasts about 12 s, longer if the victim runs nothing to kill for
a while; ``-m slow`` runs the 60 s of the spec.
"""

from __future__ import annotations

import datetime
import json
import math
import signal
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pysched import Every
from pysched.durable import DurableScheduler

import support.durable as h

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # the worker scripts beside this file

import series_worker  # noqa: E402 - registers "series-record"

LEASE = 3.0  # seconds: a starved but live worker must not lose its lease


def start_worker(target: str, table: str, out: Path, run: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, str(HERE / "series_worker.py"), target,
                             table, str(out), "--lease", str(LEASE), "--run", str(run)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def runs_of(out: Path) -> dict[float, list[dict[str, Any]]]:
    """Fire time -> its runs: {"pid", "start", "end" (None: never ended)}."""
    runs: dict[float, list[dict[str, Any]]] = defaultdict(list)
    path = out / "runs.log"
    for line in path.read_text().splitlines() if path.exists() else []:
        what, fire, pid, t = line.split()
        if what == "start":
            runs[float(fire)].append({"pid": int(pid), "start": float(t), "end": None})
        else:
            # The earliest open run of that process (one process may run a fire time twice).
            run = [r for r in runs[float(fire)] if r["pid"] == int(pid) and r["end"] is None]
            run[0]["end"] = float(t)
    return runs


def reported(out: Path) -> list[dict[str, Any]]:
    path = out / "events.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def covered(fire: float, events: list[dict[str, Any]]) -> bool:
    """Whether a skipped or coalesced event names ``fire``."""
    return any(e["kind"] in ("skipped", "coalesced") and e["fire_time"] is not None
               and e["fire_time"] <= fire <= (e["last_fire_time"] or e["fire_time"])
               for e in events)


def open_run(out: Path, pid: int) -> float | None:
    """The fire time ``pid`` is running (its last run started and has not ended), or None."""
    mine = [(r["start"], fire, r["end"]) for fire, runs in runs_of(out).items() for r in runs
            if r["pid"] == pid]
    if not mine:
        return None
    _, fire, end = max(mine)
    return fire if end is None else None


def stalled_past_lease(run: dict[str, Any]) -> bool:
    """Whether a run (of half a second at most) outlasted the lease: its process, or the
    whole machine, stalled past it. Another live process then takes its fire time over, as
    it would a dead one's (a lease cannot tell them apart), and the two runs may overlap."""
    return run["end"] is not None and run["end"] - run["start"] > LEASE


def stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP has taken effect: it writes nothing more)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def kill_mid_run(out: Path, victim: subprocess.Popen[str]) -> tuple[float, float]:
    """SIGKILL ``victim`` in the middle of a run: (the fire time it was running, when it
    was killed). It is stopped before its log is read, so the run read as open cannot end
    between the read and the kill."""
    while True:
        h.wait_for(lambda: open_run(out, victim.pid) is not None, timeout=60,
                   what="a run to kill")
        victim.send_signal(signal.SIGSTOP)
        h.wait_for(lambda: stopped(victim.pid), what="the worker to stop")
        fire = open_run(out, victim.pid)
        if fire is not None:
            victim.send_signal(signal.SIGKILL)
            killed_at = time.time()
            victim.wait()
            return fire, killed_at
        victim.send_signal(signal.SIGCONT)  # it ended that run meanwhile: try the next


def ran_elsewhere(out: Path, fire: float, pid: int) -> bool:
    """Whether a process other than ``pid`` has run ``fire`` to its end."""
    return any(r["pid"] != pid and r["end"] is not None for r in runs_of(out).get(fire, []))


def fleet(target: str, table: str, out: Path, *, procs: int, seconds: float,
          kill: bool) -> None:
    """Run the series on ``procs`` workers for ``seconds``; SIGKILL one mid-run if ``kill``;
    check the runs and events."""
    first = math.ceil(time.time()) + 2
    producer = DurableScheduler(target, table=table, max_workers=0)
    producer.schedule_recurring(
        "tick", Every(1, start=datetime.datetime.fromtimestamp(first, datetime.timezone.utc)),
        0, series_worker.record)
    producer.close()
    workers = [start_worker(target, table, out, run=0.5 if kill else 0.2) for _ in range(procs)]
    killed_at = killed = None
    try:
        if kill:
            time.sleep(max(0.0, first + seconds / 3 - time.time()))
            victim = workers[0]
            killed, killed_at = kill_mid_run(out, victim)
            # The takeover waits for the lease to expire: the fleet runs on until it is
            # done however late the victim ran something to kill.
            h.wait_for(partial(ran_elsewhere, out, killed, victim.pid), timeout=60,
                       what="the killed run to be run again elsewhere")
        time.sleep(max(0.0, first + seconds - time.time()))
    finally:
        stop = time.time()
        for proc in workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in workers:
            proc.wait(timeout=60)
            assert proc.stdout is not None
            proc.stdout.close()
    assert [p.returncode for p in workers if p.returncode not in (0, -signal.SIGKILL)] == []
    runs, events = runs_of(out), reported(out)
    # Fire times whose runs could all have been cut short by the stop are left out.
    window = [float(f) for f in range(first, math.floor(stop - LEASE - 1))]
    assert len(window) >= seconds - LEASE - 3
    unreported = [f for f in window if f not in runs and not covered(f, events)]
    assert unreported == [], f"fire times neither run nor named in an event: {unreported}"
    for fire, its_runs in runs.items():
        assert all(r["start"] >= fire for r in its_runs), f"{fire} started early: {its_runs}"
        ended = [r for r in its_runs if r["end"] is not None]
        if fire in window:
            assert ended, f"fire time {fire} never completed: {its_runs}"
        if not kill:
            assert len(its_runs) == 1 or any(map(stalled_past_lease, its_runs)), \
                f"fire time {fire} ran {len(its_runs)} times: {its_runs}"
            continue
        # Never two at once: a killed run counts as running until the kill.
        spans = sorted(its_runs, key=lambda r: r["start"])
        for before, after in zip(spans, spans[1:], strict=False):
            end = before["end"] if before["end"] is not None else killed_at
            assert after["start"] >= end or stalled_past_lease(before), \
                f"fire time {fire} ran twice at once: {its_runs}"
        # Twice to the end only when the first run's end died with its process unrecorded.
        assert len(ended) <= 1 or any(r["pid"] == victim.pid or stalled_past_lease(r)
                                      for r in its_runs), \
            f"fire time {fire} completed twice with no kill: {its_runs}"
    if kill:
        assert killed is not None and len(runs[killed]) > 1, "the killed run was never run again"


def sqlite_target(tmp_path: Path) -> tuple[str, str]:
    return str(tmp_path / "series.db"), "pysched_tasks"


@pytest.fixture
def postgres_table() -> Any:
    url = h.postgres_url()
    table = h.unique_table()
    yield url, table
    h.drop_postgres_table(url, table)


@pytest.mark.slow  # a fleet of processes
@pytest.mark.parametrize("kill", [False, True], ids=["all-live", "one-killed"])
def test_three_processes_on_postgres_run_each_fire_time_once(
        postgres_table: tuple[str, str], tmp_path: Path, kill: bool) -> None:
    url, table = postgres_table
    fleet(url, table, tmp_path, procs=3, seconds=12, kill=kill)


@pytest.mark.slow  # a fleet of processes
@pytest.mark.parametrize("kill", [False, True], ids=["all-live", "one-killed"])
def test_two_processes_on_one_sqlite_file_run_each_fire_time_once(
        tmp_path: Path, kill: bool) -> None:
    target, table = sqlite_target(tmp_path)
    fleet(target, table, tmp_path, procs=2, seconds=12, kill=kill)


@pytest.mark.slow
def test_a_minute_on_each_store_with_and_without_a_kill(postgres_table: tuple[str, str],
                                                        tmp_path: Path) -> None:
    """The spec's 60 s, the four fleets at once (their workers are mostly idle), so CI
    spends one minute on them, not four."""
    url, table = postgres_table
    killed_table = h.unique_table()
    runs = {"pg": (url, table, 3, False), "pg-killed": (url, killed_table, 3, True),
            "sqlite": (str(tmp_path / "a.db"), "pysched_tasks", 2, False),
            "sqlite-killed": (str(tmp_path / "b.db"), "pysched_tasks", 2, True)}
    for name in runs:
        (tmp_path / name).mkdir()
    try:
        with ThreadPoolExecutor(len(runs)) as pool:
            done = {name: pool.submit(fleet, target, tbl, tmp_path / name, procs=procs,
                                      seconds=60, kill=kill)
                    for name, (target, tbl, procs, kill) in runs.items()}
        for future in done.values():
            future.result()
    finally:
        h.drop_postgres_table(url, killed_table)
