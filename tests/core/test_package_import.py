"""Importing pysched loads the core and nothing heavy; every public name still resolves.

Which modules an import loads is checked in a fresh interpreter (this one has
loaded everything already), as the modules it adds to ``sys.modules``, so
whatever the interpreter's own start-up imports does not count. Import times
are not asserted: ``python -X importtime -c "import pysched"`` measures them.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = ["pysched", "pysched.pool", "pysched.aio", "pysched.calendar", "pysched.durable",
            "pysched.metrics"]

# What `import pysched` may load of pysched: the package, the selected core and
# the small modules the core reads.
CORE_MODULES = {"pysched", "pysched._errors", "pysched._impl", "pysched._validate",
                "pysched._constants", "pysched._version", "pysched._lazy"}
TWIN_MODULES = {"pysched._scheduler_py", "pysched._bounded_queue_py"}

# Standard modules that cost milliseconds each and that only some parts need.
HEAVY_STDLIB = {"asyncio", "sqlite3", "concurrent.futures", "threading", "queue", "logging",
                "zoneinfo", "datetime", "json", "inspect", "dataclasses", "contextvars",
                "traceback", "weakref"}

HAS_CORE = importlib.util.find_spec("pysched._core") is not None


def modules_added_by(statement: str, **env: str) -> set[str]:
    """The modules that ``statement`` adds to ``sys.modules`` in a fresh interpreter."""
    code = ("import json, sys\nbefore = set(sys.modules)\n" + statement
            + "\nprint(json.dumps(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def test_import_pysched_loads_the_core_only():
    added = modules_added_by("import pysched")
    pysched_modules = {m for m in added if m.split(".")[0] == "pysched"}
    if HAS_CORE and not os.environ.get("PYSCHED_NO_EXTENSIONS"):
        assert pysched_modules == CORE_MODULES | {"pysched._core"}
        assert "typing" not in added  # as costly as the rest of the import
    else:
        assert pysched_modules == CORE_MODULES | TWIN_MODULES
    assert not added & HEAVY_STDLIB


def test_without_extensions_import_pysched_loads_the_twin_only():
    added = modules_added_by("import pysched; assert pysched.IMPLEMENTATION == 'python'",
                             PYSCHED_NO_EXTENSIONS="1")
    assert {m for m in added if m.startswith("pysched")} == CORE_MODULES | TWIN_MODULES
    assert not added & HEAVY_STDLIB


@pytest.mark.parametrize("package", PACKAGES[1:])
def test_import_of_a_subpackage_loads_only_its_init(package):
    added = modules_added_by(f"import {package}")
    core = CORE_MODULES | TWIN_MODULES | {"pysched._core"}
    assert {m for m in added if m.startswith("pysched")} - core == {package}
    assert not added & HEAVY_STDLIB


def test_a_name_loads_only_what_it_needs():
    added = modules_added_by("from pysched import Cron")
    assert "pysched.calendar.cron" in added
    assert not added & {"asyncio", "sqlite3", "pysched.pool", "pysched.aio", "pysched.durable",
                        "pysched.calendar.series"}


def type_checking_imports(package: str) -> dict[str, str]:
    """The names a package's ``if TYPE_CHECKING:`` block imports, each with its module."""
    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__).read_text())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom)
                source = importlib.util.resolve_name("." * stmt.level + (stmt.module or ""),
                                                     package)
                names.update({alias.name: source for alias in stmt.names})
    return names


def resolve(package: str, name: str) -> object:
    try:
        return getattr(importlib.import_module(package), name)
    except ModuleNotFoundError as exc:
        if exc.name == "psycopg":  # PostgresStore needs the optional extra
            pytest.skip("psycopg is not installed")
        raise


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        resolve(package, name)
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("package", PACKAGES)
def test_the_names_type_checkers_see_are_the_names_at_run_time(package):
    module = importlib.import_module(package)
    names = type_checking_imports(package)
    assert set(names) <= set(module.__all__)
    for name, source in names.items():
        assert resolve(package, name) is getattr(importlib.import_module(source), name), name


def test_every_public_name_resolves_in_a_fresh_interpreter():
    # In a fresh process nothing is loaded yet, so each name goes through the hook.
    statement = "\n".join(f"import {p}\nfor n in {p}.__all__:\n    if n != 'PostgresStore': "
                          f"getattr({p}, n)" for p in PACKAGES)
    modules_added_by(statement)


def test_an_unknown_name_is_an_attribute_error():
    import pysched

    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        pysched.no_such_name  # noqa: B018
    assert not hasattr(pysched.durable, "no_such_name")


def test_a_subpackage_is_an_attribute_once_read():
    added = modules_added_by("import pysched\nassert pysched.durable.DurableScheduler")
    assert "pysched.durable.runner" in added
