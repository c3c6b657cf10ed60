"""``pysched tasks`` and ``pysched describe`` print the pysched.jobs snapshot shapes: the
columns and fields of TaskInfo and SeriesInfo, and the snapshots in --json."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pysched import durable
from pysched.cli import main
from pysched.jobs import TaskInfo

from support import dashboard_data
from support.durable import postgres_url, unique_table


@pytest.fixture(params=["sqlite", "postgres"])
def filled(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    """``--store``/``--table`` arguments of a store holding one row of each kind."""
    if request.param == "sqlite":
        store, table = str(tmp_path / "s.db"), "pysched_tasks"
    else:
        store, table = postgres_url(), unique_table()
    opened = durable.open_store(store, table=table)
    dashboard_data.fill(opened)
    opened.close()
    yield ["--store", store, "--table", table]
    if request.param == "postgres":
        dashboard_data.drop_postgres(store, table)


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().out


def test_tasks_prints_task_snapshots(filled: list[str], capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    code, out = run(capsys, ["tasks", "--failed", *filled])
    assert code == 0
    header = out.splitlines()[0].split()
    assert header[:6] == ["TASK", "ID", "STATE", "DUE", "PRIORITY", "VERSION"]
    assert "LAST" in header and "OUTCOME" in header
    code, out = run(capsys, ["tasks", "--json", "--limit", "500", *filled])
    tasks = {t["task_id"]: t for t in json.loads(out)["tasks"]}
    assert set(tasks["failed-1"]) == {"kind", *TaskInfo.__dataclass_fields__}
    failed, retrying = tasks["failed-1"], tasks["retrying-1"]
    assert (failed["kind"], failed["state"], failed["last_outcome"], failed["attempts"]) == (
        "task", "failed", "failed", 1)
    assert failed["error"].startswith("ValueError")
    assert retrying["state"] == "pending" and retrying["last_outcome"] == "failed"
    assert tasks["far-future"]["due"] == 1e300 and tasks["far-future"]["due_wall"] is None
    assert tasks["later-0"]["due_wall"].endswith("+00:00")


def test_describe_prints_the_snapshot_fields(filled: list[str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, ["describe", "failed-1", *filled])
    assert code == 0 and "last outcome  failed" in out
    code, out = run(capsys, ["describe", "every-minute", *filled])
    assert code == 0 and "Last runs:" in out and "succeeded" in out
    assert re.search(r"^  running +no$", out, re.MULTILINE)
    code, out = run(capsys, ["describe", "every-minute", "--json", *filled])
    snapshot: dict[str, Any] = json.loads(out)["snapshot"]
    series = snapshot["series"]
    assert snapshot["task"] is None and series["kind"] == "series"
    assert [r["outcome"] for r in series["last_runs"]] == ["succeeded", "failed", "succeeded"]
    assert series["state"] == "active" and series["next_fires_wall"]
    code, out = run(capsys, ["describe", "far-future", "--json", *filled])
    task = json.loads(out)["snapshot"]["task"]
    assert task["due_wall"] is None and task["state"] == "pending"
