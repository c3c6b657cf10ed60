"""open_store: what a store string may be, and what is refused instead of becoming a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pysched.cli import main
from pysched.durable import (
    DurableScheduler,
    MemoryStore,
    SQLiteStore,
    StoreTarget,
    open_store,
    parse_store_target,
)

REFUSED = ["localhost:5432", "db.example:5432/app", "postgresql+psycopg://u@h/db", "mysql://u@h/db",
           "sqlite://", "sqlite:///", "file:///tmp/x.db"]


@pytest.mark.parametrize("target", REFUSED)
def test_a_string_that_is_neither_a_path_nor_a_supported_url_is_refused(
        target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="store") as parsed:
        parse_store_target(target)
    with pytest.raises(SystemExit) as status:  # pysched status refuses it the same way
        main(["status", "--store", target])
    assert status.value.code == 2
    assert f"argument --store: {parsed.value}" in capsys.readouterr().err
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


@pytest.mark.parametrize(("target", "expected"), [
    ("postgresql://u:p@h:5432/db", ("postgres", "postgresql://u:p@h:5432/db")),
    ("postgres://h/db", ("postgres", "postgres://h/db")),
    ("sqlite:///rel.db", ("sqlite", "rel.db")),
    ("sqlite:////abs/x.db", ("sqlite", "/abs/x.db")),
    ("plain.db", ("sqlite", "plain.db")),
    ("C:\\data\\x.db", ("sqlite", "C:\\data\\x.db")),  # a drive letter is a path
    (Path("host:5432"), ("sqlite", "host:5432")),  # a Path is always a path
])
def test_parse_store_target_names_the_kind_and_location(target: str | Path,
                                                        expected: tuple[str, str]) -> None:
    parsed = parse_store_target(target)
    assert isinstance(parsed, StoreTarget) and parsed == expected
    assert (parsed.kind, parsed.location) == expected


@pytest.mark.parametrize("target", [None, 5, b"x.db", ["x.db"]])
def test_parse_store_target_refuses_what_is_not_a_str_or_path(target: object) -> None:
    with pytest.raises(TypeError, match="store must be"):
        parse_store_target(target)  # type: ignore[arg-type]
