"""Run the typed user example (tests/package/typing_example.py) on both implementations.

mypy checks that file's types (scripts/check_wheels.sh); this checks that the
code those types describe really behaves, on the Cython core and the twin.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest


def load_example() -> ModuleType:
    # Loaded by path: it is not a test module, and this works in any import mode.
    path = Path(__file__).with_name("typing_example.py")
    spec = importlib.util.spec_from_file_location("pysched_typing_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXPECTED = [
    (("index", 7), 1, "completed", ""),
    ("report", 2, "completed", ""),
    ("vacuum", 1, "failed", "disk full"),
    ("backup", 1, "completed", ""),
]


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return load_example()


def test_nightly_runs_in_order_on_each_implementation(impl, fake_clock, example):
    scheduler = impl.Scheduler(clock=fake_clock)
    assert example.nightly(scheduler) == EXPECTED
    assert len(scheduler) == 0 and scheduler.state("report") is None
    stats = scheduler.stats()
    assert (stats["completed"], stats["failed"], stats["replaced"], stats["cancelled"]) == (
        3, 1, 1, 1)


def test_public_scheduler_runs_the_example(fake_clock, example):
    assert example.run_public(fake_clock) == EXPECTED
