"""``pysched worker`` on a store with no schedule: refused by name unless ``--create``.

A mistyped ``--store`` path or ``--table`` name used to give a new, empty
schedule and a worker waiting on it. Each case runs the command in a real
process, bounded by a hang guard: a worker that starts instead of refusing
never exits on its own, so the guard fails the test.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pysched import durable

from support.durable import drop_postgres_table, postgres_url, unique_table

TIMEOUT = 60.0  # a hang guard, never a speed check


def pysched(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pysched ARGS`` in ``folder``; its status and output."""
    return subprocess.run([sys.executable, "-m", "pysched", *args], cwd=folder, text=True,
                          capture_output=True, timeout=TIMEOUT)


def sqlite_tables(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return {name for (name,) in db.execute("SELECT name FROM sqlite_master"
                                               " WHERE type = 'table'")}


@pytest.mark.parametrize("target", ["typo.db", "sqlite:///typo.db", "no/such/dir/typo.db"])
def test_a_missing_sqlite_file_is_refused_naming_store(tmp_path: Path, target: str) -> None:
    run = pysched(tmp_path, "worker", "--store", target, "--import", "json")
    assert run.returncode == 2, run.stderr
    assert "usage: pysched worker" in run.stderr
    assert (f"error: argument --store: {target}: no such SQLite file (give --create to start"
            " a new schedule there)") in run.stderr
    assert not (tmp_path / "typo.db").exists()


def test_a_missing_table_is_refused_naming_table(tmp_path: Path) -> None:
    durable.open_store(str(tmp_path / "s.db")).close()
    before = sqlite_tables(tmp_path / "s.db")
    run = pysched(tmp_path, "worker", "--store", "s.db", "--table", "pysched_taks",
                  "--import", "json")
    assert run.returncode == 2, run.stderr
    assert "error: argument --table: s.db: no table pysched_taks (give --create" in run.stderr
    assert sqlite_tables(tmp_path / "s.db") == before  # nothing created


@pytest.fixture
def postgres_target() -> Iterator[tuple[str, str]]:
    url, table = postgres_url(), unique_table()
    yield url, table
    drop_postgres_table(url, table)


def test_a_missing_postgres_table_is_refused_naming_table(
        tmp_path: Path, postgres_target: tuple[str, str]) -> None:
    import psycopg

    url, table = postgres_target
    run = pysched(tmp_path, "worker", "--store", url, "--table", table, "--import", "json")
    assert run.returncode == 2, run.stderr
    assert f"error: argument --table: {url}: no table {table} (give --create" in run.stderr
    with psycopg.connect(url) as db:
        assert db.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (None,)


def serve_then_stop(folder: Path, *args: str) -> tuple[int, str]:
    """Run ``pysched worker ARGS``, SIGTERM it once it serves; its exit status and stderr."""
    with subprocess.Popen([sys.executable, "-m", "pysched", "worker", *args], cwd=folder,
                          text=True, stderr=subprocess.PIPE) as proc:
        guard = threading.Timer(TIMEOUT, proc.kill)
        guard.start()
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:  # to its end: the worker exits, or the guard kills it
            lines.append(line)
            if " serving " in line:
                proc.send_signal(signal.SIGTERM)
        guard.cancel()
        return proc.wait(), "".join(lines)


def test_create_starts_a_new_schedule(tmp_path: Path) -> None:
    status, err = serve_then_stop(tmp_path, "--store", "new.db", "--table", "jobs", "--create",
                                  "--import", "json")
    assert status == 0, err
    assert {"jobs", "jobs_meta"} <= sqlite_tables(tmp_path / "new.db")
    # The schedule exists now: no --create needed, and --create changes nothing.
    for extra in ([], ["--create"]):
        status, err = serve_then_stop(tmp_path, "--store", "new.db", "--table", "jobs", *extra,
                                      "--import", "json")
        assert status == 0, err

