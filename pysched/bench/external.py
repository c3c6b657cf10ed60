"""Load the per-piece workload modules from a checkout's ``benchmarks/`` folder.

The bounded-queue and thread-pool workloads are written beside the pieces
they measure, as plain functions in ``benchmarks/bench_*.py``. That folder
sits next to the ``pysched`` package in a source checkout (the README's
``pip install -e .``), not in a wheel, so it is found from the package's
location rather than from the current directory, and a missing one is a
reason to skip, not an error.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pysched

BENCHMARKS_DIR = Path(pysched.__file__).resolve().parent.parent / "benchmarks"


class Unavailable(Exception):
    """A workload module is not here; the message says why, for the report."""


def load(name: str, directory: Path = BENCHMARKS_DIR) -> ModuleType:
    """Import ``directory/name.py`` once, or raise Unavailable saying why not."""
    module_name = f"_pysched_benchmarks_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = directory / f"{name}.py"
    if not path.is_file():
        raise Unavailable(f"needs a source checkout (benchmarks/{name}.py)")
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a module that fails to import is skipped, with the reason
        del sys.modules[module_name]
        raise Unavailable(f"benchmarks/{name}.py failed to import: {exc!r}") from exc
    return module
