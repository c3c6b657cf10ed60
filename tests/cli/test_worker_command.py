"""The ``pysched`` command in real processes: signals, exit statuses, restarts, status output.

Each worker test starts ``python -m pysched worker`` on a SQLite file and on
the test PostgreSQL (skipped without PYSCHED_TEST_POSTGRES_URL, failed under
PYSCHED_REQUIRE_POSTGRES=1), with tasks from a module written into the test's
folder. The tasks append one line per start and end to a log (O_APPEND, one
write per line) and wait on a release file or their cancel token, so every
wait here is for a line or a row to appear, bounded by a generous timeout.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pysched import durable
from pysched.cli import main
from pysched.cli import worker as worker_module
from pysched.cli.worker import REPEAT_WINDOW

from support.durable import drop_postgres_table, postgres_url, unique_table, wait_for

if sys.platform == "win32":  # pragma: no cover
    pytest.skip("the worker tests send POSIX signals", allow_module_level=True)

TIMEOUT = 60.0  # a hang guard for every wait, never a speed check

TASKS = '''
import os
import time

import pysched
from pysched import durable
from pysched.cli import main

def _log(path, kind):
    run = durable.current_task()
    line = f"{kind} {run.task_id} {run.version} {run.attempt} {os.getpid()} {time.time():.6f}\\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)

def _released(release, token):
    """Wait for the release file; False if the token was set first."""
    deadline = time.monotonic() + 120
    while not os.path.exists(release):
        if token is not None and token.wait(0.01):
            return False
        if token is None:
            time.sleep(0.01)
        assert time.monotonic() < deadline, "the test never released this task"
    return True

@durable.task(name="wc-hold")
def hold(log, release):
    """Runs until the release file exists; stops (raising) when its token is set."""
    _log(log, "S")
    if not _released(release, pysched.current_token()):
        _log(log, "X")
        raise pysched.TaskCancelled("closed")
    _log(log, "E")

@durable.task(name="wc-stubborn")
def stubborn(log, release):
    """Runs until the release file exists, whatever its token says."""
    _log(log, "S")
    _released(release, None)
    _log(log, "E")

@durable.task(name="wc-quick")
def quick(log):
    _log(log, "S")
    time.sleep(0.005)  # a window for a SIGKILL to land mid-run
    _log(log, "E")
'''


class Run:
    """One line of the task log: a start (S), an end (E) or a stop on the token (X)."""

    def __init__(self, line: str) -> None:
        kind, self.task_id, version, attempt, pid, at = line.split()
        self.kind = kind
        self.version, self.attempt, self.pid, self.at = int(version), int(attempt), int(pid), \
            float(at)


STARTED: list[Worker] = []


@pytest.fixture(autouse=True)
def stop_workers() -> Iterator[None]:
    yield
    while STARTED:
        STARTED.pop().stop()


class Worker:
    """A ``pysched`` subprocess whose stderr lines are collected as they come."""

    def __init__(self, folder: Path, *args: str, script: bool = False) -> None:
        command = ([str(Path(sysconfig.get_path("scripts")) / "pysched")] if script
                   else [sys.executable, "-m", "pysched"])
        self.proc = subprocess.Popen([*command, *args], cwd=folder, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        STARTED.append(self)
        self.lines: list[str] = []
        self.out = ""
        self._readers = [threading.Thread(target=self._read_err, daemon=True),
                         threading.Thread(target=self._read_out, daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        self.out = self.proc.stdout.read()

    def wait_line(self, text: str) -> None:
        wait_for(lambda: any(text in line for line in self.lines) or self.proc.poll() is not None,
                 TIMEOUT, f"a log line with {text!r}")
        assert any(text in line for line in self.lines), self.stderr()

    def send(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait(self) -> int:
        status = self.proc.wait(TIMEOUT)
        for reader in self._readers:
            reader.join(TIMEOUT)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        return status

    def stop(self) -> None:
        """Kill it if it still runs (a failed test must not leave a worker behind)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.wait()

    def stderr(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture(params=["sqlite", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A folder with the tasks module, a store target and table, the log and release paths."""
    (tmp_path / "worker_tasks.py").write_text(TASKS)
    spec: dict[str, Any] = {"folder": tmp_path, "log": str(tmp_path / "runs.log"),
                            "release": str(tmp_path / "release")}
    if request.param == "sqlite":
        spec.update(target=str(tmp_path / "schedule.db"), table="pysched_tasks")
        yield spec
    else:
        url = postgres_url()
        spec.update(target=url, table=unique_table())
        yield spec
        drop_postgres_table(url, spec["table"])


def store_of(place: dict[str, Any]) -> durable.Store:
    return durable.open_store(place["target"], table=place["table"])


def schedule(place: dict[str, Any], ref: str, ids: list[str], *args: Any) -> None:
    """Store each id as a task due now, running ``ref(*args)``."""
    with store_of(place) as store:
        store.schedule([durable.NewTask(i, 0.0, 0, ref, json.dumps({"args": list(args),
                                                                      "kwargs": {}}))
                        for i in ids])


def start(place: dict[str, Any], *options: str) -> Worker:
    worker = Worker(place["folder"], "worker", "--store", place["target"], "--table",
                    place["table"], "--import", "worker_tasks", *options)
    worker.wait_line("serving")
    return worker


def runs(place: dict[str, Any], kind: str | None = None) -> list[Run]:
    try:
        text = Path(place["log"]).read_text()
    except FileNotFoundError:
        return []
    found = [Run(line) for line in text.splitlines()]
    return [r for r in found if kind is None or r.kind == kind]


def rows(place: dict[str, Any], ids: list[str]) -> dict[str, dict[str, Any]]:
    with store_of(place) as store:
        return {i: store.get(i) or {} for i in ids}


def release(place: dict[str, Any]) -> None:
    Path(place["release"]).touch()


def test_sigterm_lets_running_tasks_finish_and_hands_back_the_rest(place: dict[str, Any]
                                                                   ) -> None:
    ids = [f"t{i}" for i in range(6)]
    schedule(place, "wc-hold", ids, place["log"], place["release"])
    # Five claims at most (2 workers + prefetch 3): two run, three wait for a thread.
    worker = start(place, "--max-workers", "2", "--prefetch", "3", "--grace", "600")
    wait_for(lambda: len(runs(place, "S")) == 2, TIMEOUT, "two tasks running")
    worker.send(signal.SIGTERM)
    worker.wait_line("received SIGTERM")
    release(place)
    assert worker.wait() == 0, worker.stderr()
    started = sorted(r.task_id for r in runs(place, "S"))
    assert sorted(r.task_id for r in runs(place, "E")) == started  # both finished
    assert not runs(place, "X")
    after = rows(place, ids)
    assert all(row["lease_owner"] is None for row in after.values()), after  # no lease left
    assert {i for i, row in after.items() if row["state"] == "completed"} == set(started)
    assert {i for i, row in after.items() if row["state"] == "pending"} == set(ids) - set(started)
    assert ("stopped after running 2 tasks (0 failed); 3 unstarted claims and 0 stopped runs"
            " handed back") in worker.stderr()

    again = start(place, "--max-workers", "2")  # the handed-back rows run, and only they
    with store_of(place) as store:
        wait_for(lambda: store.counts() == {"completed": 6}, TIMEOUT, "every task completed")
    again.send(signal.SIGINT)
    assert again.wait() == 0, again.stderr()
    ended = sorted(r.task_id for r in runs(place, "E"))
    assert ended == ids  # each exactly once


def test_second_signal_sets_cancel_tokens_and_exits_promptly(place: dict[str, Any]) -> None:
    ids = ["a", "b"]
    schedule(place, "wc-hold", ids, place["log"], place["release"])
    # A grace far beyond the hang guard: only the second signal can end this run in time.
    worker = start(place, "--max-workers", "2", "--grace", "3600", "--cancel-grace", "3600")
    wait_for(lambda: len(runs(place, "S")) == 2, TIMEOUT, "two tasks running")
    worker.send(signal.SIGTERM)
    worker.wait_line("received SIGTERM")
    time.sleep(REPEAT_WINDOW)  # a second signal sooner would count as part of the first
    worker.send(signal.SIGINT)
    assert worker.wait() == 0, worker.stderr()
    assert sorted(r.task_id for r in runs(place, "X")) == ids  # each saw its token
    assert "cancel tokens set on 2 running tasks" in worker.stderr()
    assert "2 stopped runs handed back" in worker.stderr()
    after = rows(place, ids)
    # Stopped by the shutdown, not failed: pending for another worker, no attempt used.
    assert all((row["state"], row["attempts"], row["lease_owner"]) == ("pending", 0, None)
               for row in after.values()), after

    release(place)
    again = start(place, "--max-workers", "2")
    with store_of(place) as store:
        wait_for(lambda: store.counts() == {"completed": 2}, TIMEOUT, "both run elsewhere")
    again.send(signal.SIGTERM)
    assert again.wait() == 0, again.stderr()
    assert sorted((r.task_id, r.attempt) for r in runs(place, "E")) == [("a", 1), ("b", 1)]


# On PostgreSQL under heavy load the worker's log line can come after the wait; under study.
@pytest.mark.xfail(strict=False, reason="timing-dependent on a loaded PostgreSQL run")
def test_a_burst_of_stop_signals_is_one_stop(place: dict[str, Any]) -> None:
    ids = ["a", "b"]
    schedule(place, "wc-hold", ids, place["log"], place["release"])
    worker = start(place, "--max-workers", "2", "--grace", "3600", "--cancel-grace", "0")
    wait_for(lambda: len(runs(place, "S")) == 2, TIMEOUT, "two tasks running")
    # GNU timeout signals the process, then its group: one stop that may arrive twice,
    # milliseconds apart. The kernel merges a pending signal with its repeat but never
    # two different ones, so at least a SIGTERM and a SIGINT arrive here.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGTERM):
        worker.send(sig)
    worker.wait_line("the same stop request")
    release(place)
    assert worker.wait() == 0, worker.stderr()
    assert sorted(r.task_id for r in runs(place, "E")) == ids  # both finished, uncancelled
    assert not runs(place, "X")
    assert "cancel tokens set" not in worker.stderr()
    assert {row["state"] for row in rows(place, ids).values()} == {"completed"}


def test_grace_running_out_abandons_the_run_and_a_restart_runs_it_again(place: dict[str, Any]
                                                                         ) -> None:
    schedule(place, "wc-stubborn", ["s"], place["log"], place["release"])
    # The restart under the same owner finds the lease renewed moments ago, as a live
    # twin's would be, so it keeps it until it expires (3 s) and runs it then.
    options = ("--owner", "node-1", "--lease", "3", "--grace", "0.2")
    worker = start(place, *options)
    wait_for(lambda: len(runs(place, "S")) == 1, TIMEOUT, "the task running")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 3, worker.stderr()
    assert "exiting with 1 tasks still running" in worker.stderr()
    # Not "at once": a restart under the same owner waits for two heartbeats (2 s here).
    assert ("a worker started with --owner node-1 releases them sooner, once 2 s (two"
            " heartbeats) have passed since this exit") in " ".join(worker.stderr().split())
    row = rows(place, ["s"])["s"]
    assert (row["state"], row["lease_owner"]) == ("running", "node-1")  # left as in a crash

    release(place)
    again = start(place, *options)
    wait_for(lambda: len(runs(place, "E")) == 1, TIMEOUT, "the task run again")
    again.send(signal.SIGTERM)
    assert again.wait() == 0, again.stderr()
    assert [(r.kind, r.attempt) for r in runs(place)] == [("S", 1), ("S", 2), ("E", 2)]
    row = rows(place, ["s"])["s"]
    assert (row["state"], row["lease_owner"]) == ("completed", None)


def test_sigkill_then_restart_loses_nothing(place: dict[str, Any]) -> None:
    ids = [f"q{i:03}" for i in range(80)]
    schedule(place, "wc-quick", ids, place["log"])
    # A short lease: node-a restarted at once finds its leases just renewed, as a live
    # twin's would be, so they are run again once they expire, not at its start.
    a = start(place, "--owner", "node-a", "--max-workers", "2", "--lease", "6")
    b = start(place, "--owner", "node-b", "--max-workers", "2")
    wait_for(lambda: len(runs(place, "E")) >= 20, TIMEOUT, "a quarter of the tasks run")
    a.send(signal.SIGKILL)
    assert a.wait() == -signal.SIGKILL
    killed_at = time.time()  # every run of node-a ended by now
    a = start(place, "--owner", "node-a", "--max-workers", "2", "--lease", "6")
    with store_of(place) as store:
        wait_for(lambda: store.counts() == {"completed": len(ids)}, TIMEOUT,
                 "every task completed")
    for worker in (a, b):
        worker.send(signal.SIGTERM)
    assert (a.wait(), b.wait()) == (0, 0), a.stderr() + b.stderr()
    assert sorted({r.task_id for r in runs(place, "E")}) == ids  # none lost
    assert all(row["lease_owner"] is None for row in rows(place, ids).values())
    # No two runs of one task overlap: a run cut short by the kill ends at the kill.
    ends = {(r.task_id, r.attempt, r.pid): r.at for r in runs(place, "E")}
    by_task: dict[str, list[tuple[float, float]]] = {}
    for r in runs(place, "S"):
        by_task.setdefault(r.task_id, []).append(
            (r.at, ends.get((r.task_id, r.attempt, r.pid), killed_at)))
    for task_id, spans in by_task.items():
        spans.sort()
        for (_, end), (begin, _) in itertools.pairwise(spans):
            assert begin >= end, f"{task_id} ran twice at once: {spans}"


def test_queue_limits_the_worker_to_the_queues_it_names(place: dict[str, Any]) -> None:
    with store_of(place) as store:
        store.schedule([durable.NewTask(task_id, 0.0, 0, "wc-quick",
                                        json.dumps({"args": [place["log"]], "kwargs": {}}),
                                        queue)
                        for task_id, queue in [("m1", "mail"), ("d1", "default"),
                                               ("r1", "reports"), ("m2", "mail")]])
    worker = start(place, "--queue", "mail", "--queue", "reports")
    assert "queues mail, reports: tasks wc-hold, wc-quick, wc-stubborn" in worker.stderr()
    wait_for(lambda: len(runs(place, "E")) == 3, TIMEOUT, "the mail and reports tasks run")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0, worker.stderr()
    assert sorted(r.task_id for r in runs(place, "S")) == ["m1", "m2", "r1"]
    assert rows(place, ["d1"])["d1"]["state"] == "pending"  # left for a worker of its queue


def test_status_prints_counts_and_the_oldest_rows(place: dict[str, Any]) -> None:
    with store_of(place) as store:
        store.schedule([durable.NewTask(f"p{i}", 1000.0 + i, 0, "wc-quick", '{"args":[],'
                                        '"kwargs":{}}') for i in range(4)])
        claim, = store.claim(1000.0, 1, "node-x", 600.0)  # p0 is running now
    folder = place["folder"]
    as_json = Worker(folder, "status", "--store", place["target"], "--table", place["table"],
                     "--json", "--limit", "2")
    assert as_json.wait() == 0, as_json.stderr()
    status = json.loads(as_json.out)
    assert status["counts"] == {"pending": 3, "running": 1}
    assert status["queues"] == {"default": {"pending": 3, "running": 1}}
    assert [r["task_id"] for r in status["oldest_pending"]] == ["p1", "p2"]
    assert [(r["task_id"], r["lease_owner"]) for r in status["oldest_running"]] == \
        [("p0", "node-x")]
    assert status["oldest_running"][0]["lease_expires"] > status["now"]

    target = place["target"]
    if not target.startswith("postgresql://"):
        target = "sqlite:///" + target  # the URL form reads the same file
    text = Worker(folder, "status", "--store", target, "--table", place["table"])
    assert text.wait() == 0, text.stderr()
    assert re.search(r"pending +3\n", text.out) and re.search(r"total +4\n", text.out)
    assert "1970-01-01 00:16:41 UTC" in text.out  # p1's run_at
    assert "node-x" in text.out and "expires in" in text.out
    assert re.search(r"default +running +1\n", text.out)


@pytest.mark.parametrize(("args", "complaint"), [
    ([], "required: COMMAND"),
    (["worker", "--import", "m"], "required: --store"),
    (["worker", "--store", "x.db"], "required: --import"),
    (["worker", "--store", "x.db", "--import", "m", "--max-workers", "0"], "--max-workers"),
    (["worker", "--store", "x.db", "--import", "m", "--prefetch", "-1"], "--prefetch"),
    (["worker", "--store", "x.db", "--import", "m", "--queue", ""], "--queue"),
    (["worker", "--store", "x.db", "--import", "m", "--queue", "a\x00b"], "--queue"),
    (["worker", "--store", "x.db", "--import", "m", "--grace", "-1"], "--grace"),
    (["worker", "--store", "x.db", "--import", "m", "--grace", "nan"], "--grace"),
    (["worker", "--store", "x.db", "--import", "m", "--lease", "0"], "--lease"),
    (["worker", "--store", "x.db", "--import", "m", "--table", "no-such"], "--table"),
    (["status", "--store", "x.db", "--table", "Bad Name"], "--table"),
    (["status", "--store", "x.db", "--limit", "-1"], "--limit"),
    (["status", "--store", "localhost:5432"], "--store"),
    (["worker", "--store", "localhost:5432", "--import", "json"], "--store"),
    (["launch"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str],
                                              args: list[str], complaint: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert complaint in err and "usage: pysched" in err
    assert not (tmp_path / "x.db").exists()  # nothing was opened


TOO_BIG = str(2**64)


@pytest.mark.parametrize(("args", "complaint"), [
    (["worker", "--store", "x.db", "--import", "json", "--max-workers", TOO_BIG],
     "argument --max-workers"),
    (["worker", "--store", "x.db", "--import", "json", "--prefetch", TOO_BIG],
     "argument --prefetch"),
    (["status", "--store", "x.db", "--limit", TOO_BIG], "argument --limit"),
    (["worker", "--store", "", "--import", "json"], "argument --store"),
    (["worker", "--store", ":memory:", "--import", "json"], "argument --store"),
    (["worker", "--store", "x.db", "--import", "json", "--owner", ""], "argument --owner"),
    (["worker", "--store", "x.db", "--import", "json", "--owner", "a\x00b"],
     "argument --owner"),
    (["worker", "--store", "x.db", "--import", "json", "--owner", "o" * 5000],
     "argument --owner"),
    (["worker", "--store", "x.db", "--import", "json", "--lease", "3e10"], "argument --lease"),
    (["worker", "--store", "x.db", "--import", "json", "--lease", "1e300"], "argument --lease"),
    (["status", "--store", ""], "argument --store"),
    (["status", "--store", ":memory:"], "argument --store"),
])
def test_a_bad_argument_exits_2_naming_the_option_before_opening_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        args: list[str], complaint: str) -> None:
    monkeypatch.chdir(tmp_path)
    # A bad argument must stop the command before it opens a store (and a
    # worker that got one would serve until signalled).
    def refuse_to_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("a store was opened despite a bad argument")

    monkeypatch.setattr(worker_module, "open_store", refuse_to_open)
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert complaint in err and "usage: pysched" in err
    assert "Traceback" not in err
    assert not (tmp_path / "x.db").exists()


def test_the_console_script_is_installed(tmp_path: Path) -> None:
    run = Worker(tmp_path, "worker", "--help", script=True)
    assert run.wait() == 0
    assert "--max-workers" in run.out and "SIGTERM" in run.out


@pytest.mark.parametrize("command", ["worker", "status"])
def test_an_unreachable_store_is_one_line_and_status_1(tmp_path: Path, command: str) -> None:
    # Port 1 on the loopback: nothing listens there, so the connection is refused at once.
    url = "postgresql://app:secret@127.0.0.1:1/app"
    extra = ["--import", "json"] if command == "worker" else []
    run = Worker(tmp_path, command, "--store", url, *extra)
    assert run.wait() == 1
    assert len(run.lines) == 1, run.stderr()
    line = run.lines[0]
    assert line.startswith(f"pysched {command}: cannot "), line
    assert "app:***@127.0.0.1:1/app" in line and "secret" not in line


def test_status_of_a_missing_file_or_table_creates_nothing(tmp_path: Path) -> None:
    missing = Worker(tmp_path, "status", "--store", "nowhere.db")
    assert missing.wait() == 1
    assert missing.lines == ["pysched status: nowhere.db: no such SQLite file"]
    assert not (tmp_path / "nowhere.db").exists()
    durable.open_store(str(tmp_path / "s.db")).close()
    no_table = Worker(tmp_path, "status", "--store", "s.db", "--table", "other")
    assert no_table.wait() == 1
    assert no_table.lines == ["pysched status: s.db: no table other"]


def test_a_module_that_cannot_be_imported_is_one_line_and_status_1(tmp_path: Path) -> None:
    (tmp_path / "broken_tasks.py").write_text("raise RuntimeError('missing setting')\n")
    for module, message in [("no_such_tasks", "ModuleNotFoundError: No module named"),
                            ("broken_tasks", "RuntimeError: missing setting")]:
        run = Worker(tmp_path, "worker", "--store", "s.db", "--import", module)
        assert run.wait() == 1
        assert run.lines == [f"pysched worker: cannot import {module}: {message}"
                             + (" 'no_such_tasks'" if module == "no_such_tasks" else "")]
    bad = Worker(tmp_path, "worker", "--store", "s.db", "--import", "json",
                 "--registry", "json:dumps")
    assert bad.wait() == 1
    assert bad.lines == ["pysched worker: --registry json:dumps is a function,"
                         " not a pysched.durable.TaskRegistry"]
    assert not (tmp_path / "s.db").exists()
