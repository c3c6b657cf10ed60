"""The listing and steering commands (tasks, describe, cancel, retry, series, status's
series, --version) on SQLite and PostgreSQL, and stored times no datetime holds."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pysched import durable
from pysched._version import __version__
from pysched.cli import main

from support import dashboard_data
from support.durable import postgres_url, unique_table


def no_nan(text: str) -> Any:
    raise AssertionError(f"not JSON: {text}")


class Target:
    def __init__(self, kind: str, store: str, table: str) -> None:
        self.kind, self.store, self.table = kind, store, table

    def argv(self, *words: str) -> list[str]:
        return [*words, "--store", self.store, "--table", self.table]

    def open(self) -> durable.Store:
        return durable.open_store(self.store, table=self.table)


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "sqlite":
        yield Target("sqlite", str(tmp_path / "s.db"), "pysched_tasks")
        return
    url = postgres_url()
    t = Target("postgres", url, unique_table())
    yield t
    dashboard_data.drop_postgres(url, t.table)


@pytest.fixture
def filled(target: Target) -> Iterator[Target]:
    store = target.open()
    dashboard_data.fill(store)
    store.close()
    yield target


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"pysched {__version__} (")


def test_tasks_pages_filters_and_json(filled: Target, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    code, out, _ = run(capsys, filled.argv("tasks", "--limit", "5"))
    assert code == 0 and out.count("\n") >= 5 and "More: add --after " in out
    cursor = out.rsplit("--after ", 1)[1].strip()
    code, out2, _ = run(capsys, filled.argv("tasks", "--limit", "5", "--after", cursor))
    assert code == 0 and out2.splitlines()[2:] != out.splitlines()[2:]
    code, out, _ = run(capsys, filled.argv("tasks", "--failed", "--json"))
    data = json.loads(out, parse_constant=no_nan)
    assert sorted(t["task_id"] for t in data["tasks"]) == sorted(
        ["failed-1", "error-1", dashboard_data.XSS])
    code, out, _ = run(capsys, filled.argv("tasks", "--state", "pending", "--queue", "reports",
                                           "--json"))
    tasks = json.loads(out)["tasks"]
    assert tasks and all(t["queue"] == "reports" and t["state"] == "pending" for t in tasks)
    with pytest.raises(SystemExit) as exit_:
        main(filled.argv("tasks", "--after", "not-a-cursor"))
    assert exit_.value.code == 2
    assert "argument --after" in capsys.readouterr().err


def test_describe_shows_the_error_and_the_series(filled: Target,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, filled.argv("describe", "failed-1"))
    assert code == 0 and "ValueError: <b>bad</b> input" in out and "Traceback" in out
    assert '"three": 3' in out
    code, out, _ = run(capsys, filled.argv("describe", "every-minute"))
    assert code == 0 and "Next fire times:" in out and "done 2, failed 1" in out
    code, out, _ = run(capsys, filled.argv("describe", "every-minute", "--json"))
    assert json.loads(out)["series"]["fire_counts"] == {"done": 2, "failed": 1}
    code, _, err = run(capsys, filled.argv("describe", "nobody"))
    assert code == 1 and "no task or series 'nobody'" in err


def test_actions_change_the_store(filled: Target, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, filled.argv("cancel", "cancel-me"))
    assert code == 0 and "cancelled" in out
    code, _, err = run(capsys, filled.argv("cancel", "cancel-me"))
    assert code == 1 and "nothing of 'cancel-me'" in err
    code, out, _ = run(capsys, filled.argv("retry", "failed-1"))
    assert code == 0 and "retried as version" in out
    assert run(capsys, filled.argv("series", "pause", "nightly", "--note", "db move"))[0] == 0
    code, out, _ = run(capsys, filled.argv("describe", "nightly"))
    assert "paused" in out and "db move" in out
    assert run(capsys, filled.argv("series", "resume", "nightly"))[0] == 0
    code, out, _ = run(capsys, filled.argv("series", "trigger", "nightly"))
    assert code == 0 and "as task 'nightly@" in out
    store = filled.open()
    try:
        assert store.get("cancel-me")["state"] == "cancelled"  # type: ignore[index]
        assert store.get("failed-1")["state"] == "pending"  # type: ignore[index]
        [row] = [r for r in store.series_table().rows() if r.series_id == "nightly"]
        assert row.state == "active"
        [run_now] = [r for r in store.rows() if r.task_id.startswith("nightly@")]
        assert run_now.ref == "report"
    finally:
        store.close()
    for argv in (("series", "pause", "nightly", "--note", "x" * 3000),
                 ("cancel", "x" * 2000), ("describe", "\udcff"), ("tasks", "--queue", "q\x00")):
        with pytest.raises(SystemExit) as exit_:
            main(filled.argv(*argv))
        assert exit_.value.code == 2, argv


def test_times_no_datetime_holds_are_shown(target: Target,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A row due at 1e300 (what an older writer or another tool may have stored; the scheduler
    itself refuses such times), at NaN or at text: every command prints it, none dies."""
    store = target.open()
    try:
        store.schedule([durable.NewTask("far", 1e300, 0, "cli-noop", '{"args":[],"kwargs":{}}'),
                        durable.NewTask("odd\x1b[2J", 1.0, 0, "cli-noop",
                                        '{"args":[],"kwargs":{}}')])
        odd = "'soon'" if target.kind == "sqlite" else "'NaN'"
        store._conns.get().execute(  # type: ignore[attr-defined]
            f"UPDATE {target.table} SET run_at = {odd} WHERE task_id <> 'far'")
    finally:
        store.close()
    code, out, err = run(capsys, target.argv("status"))
    assert code == 0, err
    assert "no date" in out and "\x1b" not in out
    code, out, _ = run(capsys, target.argv("status", "--json"))
    json.loads(out, parse_constant=no_nan)
    code, out, _ = run(capsys, target.argv("tasks"))
    assert code == 0 and "1e+300 s (no date)" in out and "odd\\x1b[2J" in out
    code, out, _ = run(capsys, target.argv("tasks", "--json"))
    assert {t["task_id"] for t in json.loads(out, parse_constant=no_nan)["tasks"]} == {
        "far", "odd\x1b[2J"}
    for task_id in ("far", "odd\x1b[2J"):
        code, out, _ = run(capsys, target.argv("describe", task_id))
        assert code == 0 and "\x1b" not in out
        code, out, _ = run(capsys, target.argv("describe", task_id, "--json"))
        json.loads(out, parse_constant=no_nan)


def test_a_missing_file_or_table_is_one_line_and_creates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "typo.db"
    for argv in (["tasks"], ["describe", "x"], ["cancel", "x"], ["retry", "x"],
                 ["series", "pause", "x"]):
        code, _, err = run(capsys, [*argv, "--store", str(path)])
        assert code == 1 and "no such SQLite file" in err and err.count("\n") == 1
    assert not path.exists()
    durable.open_store(str(path)).close()
    code, _, err = run(capsys, ["tasks", "--store", str(path), "--table", "other"])
    assert code == 1 and "no table other" in err
    assert os.path.exists(path)
