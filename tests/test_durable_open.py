"""open_store: what a store string may be, and what is refused instead of becoming a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pysched.durable import DurableScheduler, MemoryStore, SQLiteStore, open_store


@pytest.mark.parametrize("target", ["localhost:5432", "db.example:5432/app",
                                    "postgresql+psycopg://u@h/db", "mysql://u@h/db",
                                    "sqlite://", "sqlite:///", "file:///tmp/x.db"])
def test_a_string_that_is_neither_a_path_nor_a_supported_url_is_refused(
        target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="store"):
        open_store(target)
    with pytest.raises(ValueError, match="store"):
        DurableScheduler(target)
    assert list(tmp_path.iterdir()) == []  # no file of that name was made


def test_sqlite_urls_and_paths_open_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for target, path in [("sqlite:///rel.db", tmp_path / "rel.db"),
                         (f"sqlite:///{tmp_path}/abs.db", tmp_path / "abs.db"),
                         (str(tmp_path / "plain.db"), tmp_path / "plain.db"),
                         (tmp_path / "host:5432", tmp_path / "host:5432")]:  # a Path is a path
        store = open_store(target, table="custom")
        assert isinstance(store, SQLiteStore) and store.table == "custom"
        store.close()
        assert path.exists(), target
    assert isinstance(open_store(None), MemoryStore)


def test_the_scheduler_opens_the_table_it_is_given(tmp_path: Path) -> None:
    s = DurableScheduler(str(tmp_path / "t.db"), table="jobs")
    try:
        assert isinstance(s.store, SQLiteStore) and s.store.table == "jobs"
    finally:
        s.close()
    with pytest.raises(ValueError, match="table"):
        DurableScheduler(None, table="jobs")
    with pytest.raises(ValueError, match="table must match"):
        DurableScheduler(str(tmp_path / "t.db"), table="bad name; drop")
