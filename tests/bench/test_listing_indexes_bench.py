"""benchmarks/bench_listing_indexes.py: each set it measures is the one it names, and a
run at a tiny size, so that it cannot rot."""

from __future__ import annotations

import os
import runpy
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_listing_indexes.py"


def bench() -> dict[str, Any]:
    return runpy.run_path(str(BENCH))


def test_each_set_has_the_indexes_it_names(tmp_path: Path) -> None:
    b = bench()
    for k, (name, statements) in enumerate(b["index_sets"]().items()):
        path = os.path.join(tmp_path, f"{k}.db")
        b["one_run"](path, statements, 10)
        with sqlite3.connect(path) as db:
            found = {r[0]: r[1] for r in db.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                " AND tbl_name = 'pysched_tasks'")}
        listing = {n for n in found if "_list_" in n}
        assert {"pysched_tasks_due", "pysched_tasks_lease", "pysched_tasks_owner"} <= set(found)
        assert ("pysched_tasks_finished" in found) == (name != "without _finished"), name
        with_in = "IN (" in found.get("pysched_tasks_finished", "")
        assert with_in == ("IN" in name), name
        assert len(listing) == (4 if "four" in name else 1 if name.startswith("+ _") else 0)


def test_a_tiny_run_prints_every_set(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", [str(BENCH), "--n", "20", "--rounds", "1"])
    bench()["main"]()
    out = capsys.readouterr().out
    assert "the stores' set" in out and "+ all four listing indexes" in out
