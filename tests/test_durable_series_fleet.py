"""Worker processes sharing one durable series firing every second, on PostgreSQL and SQLite.

Each run of the series appends ``start``/``end`` lines with its fire time to a
log (tests/durable/series_worker.py), each process its events to another.
The checks: every fire time in the window ran exactly once (without a kill)
or at least once (with one process SIGKILLed mid-run), two runs of one fire
time never overlapped in time, none started before its instant, and a fire
time that did not run is named in a skipped or coalesced event.
The default run lasts about 12 s; ``-m slow`` runs the 60 s of the spec.
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
from pathlib import Path
from typing import Any

import durable_helpers as h
import pytest

from pysched import Every
from pysched.durable import DurableScheduler

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "durable"))

import series_worker  # noqa: E402 - registers "series-record"

LEASE = 3.0  # seconds: a starved but live worker must not lose its lease


def start_worker(target: str, table: str, out: Path, run: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, str(HERE / "durable" / "series_worker.py"), target,
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


def open_start(out: Path, pid: int) -> bool:
    """Whether ``pid``'s last run started and has not ended: it is mid-run."""
    mine = [r for runs in runs_of(out).values() for r in runs if r["pid"] == pid]
    return bool(mine) and max(mine, key=lambda r: r["start"])["end"] is None


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
    killed_at = None
    try:
        if kill:
            time.sleep(max(0.0, first + seconds / 3 - time.time()))
            victim = workers[0]
            h.wait_for(lambda: open_start(out, victim.pid), timeout=60, what="a run to kill")
            victim.send_signal(signal.SIGKILL)
            killed_at = time.time()
            victim.wait()
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
            assert len(its_runs) == 1, f"fire time {fire} ran {len(its_runs)} times: {its_runs}"
            continue
        # Never two at once: a killed run counts as running until the kill.
        spans = sorted((r["start"], r["end"] if r["end"] is not None else killed_at)
                       for r in its_runs)
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert start >= end, f"fire time {fire} ran twice at once: {its_runs}"
        # Twice to the end only when the first run's end died with its process unrecorded.
        assert len(ended) <= 1 or any(r["pid"] == victim.pid for r in its_runs), \
            f"fire time {fire} completed twice with no kill: {its_runs}"
    if kill:
        assert any(len(r) > 1 for r in runs.values()), "the killed run was never run again"


def sqlite_target(tmp_path: Path) -> tuple[str, str]:
    return str(tmp_path / "series.db"), "pysched_tasks"


@pytest.fixture
def postgres_table() -> Any:
    url = h.postgres_url()
    table = h.unique_table()
    yield url, table
    h.drop_postgres_table(url, table)


@pytest.mark.parametrize("kill", [False, True], ids=["all-live", "one-killed"])
def test_three_processes_on_postgres_run_each_fire_time_once(
        postgres_table: tuple[str, str], tmp_path: Path, kill: bool) -> None:
    url, table = postgres_table
    fleet(url, table, tmp_path, procs=3, seconds=12, kill=kill)


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
