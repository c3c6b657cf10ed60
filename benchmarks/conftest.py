"""pytest-benchmark suites: ``pytest benchmarks/`` (needs the ``bench`` extra).

Each benchmark takes ``impl``, parametrised like the tests' fixture: ``c`` is
the compiled module itself and ``py`` the pure twins of the classes measured
here, so rows read ``[c]`` beside ``[py]`` in one group. These files stay
out of the default test run: pyproject's ``testpaths`` is ``tests``.
"""

from __future__ import annotations

import importlib
import types

import pytest


def pure_twins() -> types.SimpleNamespace:
    from pysched._bounded_queue_py import StableBoundedPriorityQueue
    from pysched._scheduler_py import Scheduler

    return types.SimpleNamespace(Scheduler=Scheduler,
                                 StableBoundedPriorityQueue=StableBoundedPriorityQueue)


@pytest.fixture(params=["c", "py"])
def impl(request: pytest.FixtureRequest) -> object:
    if request.param == "py":
        return pure_twins()
    try:
        return importlib.import_module("pysched._core")
    except ImportError:
        pytest.skip("the compiled core is not installed")
