"""The worker's summary lines name the durable recurring series: how many the store holds
as it starts, and the fire times it ran when it stops."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pysched import Every
from pysched.durable import DurableScheduler, TaskRegistry

if sys.platform == "win32":  # pragma: no cover
    pytest.skip("the worker tests send POSIX signals", allow_module_level=True)

TIMEOUT = 60.0  # a hang guard, never a speed check
TASKS = '''
import os
from pysched import durable

@durable.task(name="summary-tick")
def tick(path):
    with open(path, "a") as f:
        f.write("ran\\n")
'''


def stand_in(path: str) -> None:
    raise AssertionError("only the worker runs it")


def test_the_worker_names_its_series_at_start_and_stop(tmp_path: Path) -> None:
    (tmp_path / "summary_tasks.py").write_text(TASKS)
    db, ran = str(tmp_path / "s.db"), tmp_path / "ran.log"
    registry = TaskRegistry()
    registry.register(stand_in, "summary-tick")  # the worker runs its own summary-tick
    with DurableScheduler(db, max_workers=0, registry=registry) as producer:
        producer.schedule_recurring("tick", Every(1.0), 0, stand_in, (str(ran),))
    proc = subprocess.Popen([sys.executable, "-m", "pysched", "worker", "--store", db,
                             "--import", "summary_tasks"], cwd=tmp_path, text=True,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (ran.exists() and ran.read_text().count("ran") >= 1):
            assert proc.poll() is None and time.monotonic() < deadline, "no series run"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    [start] = [line for line in err.splitlines() if " serving " in line]
    assert "1 recurring series" in start, start
    [stop] = [line for line in err.splitlines() if "stopped after running" in line]
    assert "series fire times" in stop, stop
