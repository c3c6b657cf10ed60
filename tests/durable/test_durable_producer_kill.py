"""Durability of group commit: a producer process with many threads is killed (SIGKILL)
while its calls are in flight. Every call that returned is in the store as it said;
no row is stored whose call raised.

The producer (tests/durable/producer.py) writes what each call did to a file, fsync'd,
after the call returned; the calls in flight at the kill are in no file, and may or
may not have committed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pysched.durable import open_store

import support.durable as h

PRODUCER = Path(__file__).parent / "producer.py"
THREADS = 8
CALLS_BEFORE_KILL = 1500


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield str(tmp_path / "producers.db"), "pysched_tasks"
    else:
        url, table = h.postgres_url(), h.unique_table()
        yield url, table
        h.drop_postgres_table(url, table)


def records(folder: Path) -> list[list[str]]:
    return [line for thread in thread_records(folder) for line in thread]


def thread_records(folder: Path) -> list[list[list[str]]]:
    """Each producer thread's records, in the order of its calls."""
    threads = []
    for path in folder.glob("*.log"):
        text = path.read_text()
        # A line cut by the kill is no record (the call returned, nothing else is known).
        threads.append([line.split() for line in text.split("\n")[:-1]])
    return threads


def last_scheduled(folder: Path) -> set[str]:
    """The id each thread scheduled last: the kill may have come after a cancel of it
    had committed and before that cancel was recorded."""
    return {next(line[1] for line in reversed(thread) if line[0] == "ok")
            for thread in thread_records(folder) if any(line[0] == "ok" for line in thread)}


@pytest.mark.slow
def test_every_returned_call_survives_a_kill_and_no_raised_one_is_stored(
        target: tuple[str, str], tmp_path: Path) -> None:
    where, table = target
    folder = tmp_path / "records"
    folder.mkdir()
    producer = subprocess.Popen([sys.executable, str(PRODUCER), where, table, str(folder),
                                 str(THREADS)], stdout=subprocess.PIPE, text=True)
    try:
        assert producer.stdout is not None and producer.stdout.readline().strip() == "ready"
        h.wait_for(lambda: len(records(folder)) >= CALLS_BEFORE_KILL, timeout=120,
                   what="the producers' calls")
        producer.send_signal(signal.SIGKILL)
        assert producer.wait(30) == -signal.SIGKILL
    finally:
        if producer.poll() is None:
            producer.kill()
            producer.wait()
        if producer.stdout is not None:
            producer.stdout.close()
    done = records(folder)
    last = last_scheduled(folder)
    store: Any = open_store(where, table=table)
    try:
        kinds = {line[0] for line in done}
        assert kinds == {"ok", "cancel", "raised"}, kinds
        cancelled = {line[1]: int(line[2]) for line in done if line[0] == "cancel"}
        for line in done:
            row = store.get(line[1])
            if line[0] == "raised":
                assert row is None, line
            elif line[0] == "cancel":
                assert (row["state"], row["version"]) == ("cancelled", int(line[2])), line
            elif line[1] not in cancelled:
                if line[1] in last and row["state"] == "cancelled":
                    assert row["version"] >= int(line[2]), line  # an unrecorded last cancel
                else:
                    assert (row["state"], row["version"]) == ("pending", int(line[2])), line
    finally:
        store.close()
    assert len(done) >= CALLS_BEFORE_KILL
