"""The test suite's own layout: a folder per part, helpers in tests/support.

No test module imports another test module or a conftest (shared code lives in
the ``support`` package), and test file names are unique across the tree, since
pytest imports each by its basename.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def all_test_modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def imported_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_test_module_imports_another_or_a_conftest() -> None:
    local = {path.stem for path in all_test_modules()} | {"conftest"}
    offenders = {
        str(path.relative_to(TESTS)): sorted(name for name in imported_names(path)
                                             if name.split(".")[-1] in local)
        for path in all_test_modules()}
    assert {path: names for path, names in offenders.items() if names} == {}


def test_every_test_module_is_in_a_part_folder_with_a_unique_name() -> None:
    paths = all_test_modules()
    assert [str(p.relative_to(TESTS)) for p in paths if p.parent == TESTS] == []
    assert [name for name, n in Counter(p.name for p in paths).items() if n > 1] == []
