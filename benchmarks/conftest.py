"""pytest-benchmark suites: ``pytest benchmarks/`` (needs the ``bench`` extra).

Each benchmark takes ``impl``: ``c`` is the compiled module's classes, ``py``
the pure twins, ``heapq`` the main baselines a user would write instead
("heapq, versioned" and "heapq, two heaps", from pysched.bench), so rows read
``[c]``, ``[py]`` and ``[heapq]`` in one group. ``impl.drain`` claims and runs
every task of an ``impl.Scheduler``. These files stay out of the default test
run: pyproject's ``testpaths`` is ``tests``.
"""

from __future__ import annotations

import importlib
import types

import pytest

from pysched.bench.baselines import HeapqVersioned
from pysched.bench.bounded_baselines import TwoHeapsQueue
from pysched.bench.competitors import drain_scheduler, drain_versioned


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One process, whatever pyproject's ``-n auto`` asks for the tests: pytest-benchmark
    turns itself off under pytest-xdist, and timings are taken in one process."""
    return 0


def pure_twins() -> types.SimpleNamespace:
    from pysched._bounded_queue_py import StableBoundedPriorityQueue
    from pysched._scheduler_py import Scheduler

    return types.SimpleNamespace(Scheduler=Scheduler, drain=drain_scheduler,
                                 StableBoundedPriorityQueue=StableBoundedPriorityQueue)


@pytest.fixture(params=["c", "py", "heapq"])
def impl(request: pytest.FixtureRequest) -> object:
    if request.param == "py":
        return pure_twins()
    if request.param == "heapq":
        return types.SimpleNamespace(Scheduler=HeapqVersioned, drain=drain_versioned,
                                     StableBoundedPriorityQueue=TwoHeapsQueue)
    try:
        core = importlib.import_module("pysched._core")
    except ImportError:
        pytest.skip("the compiled core is not installed")
    return types.SimpleNamespace(Scheduler=core.Scheduler, drain=drain_scheduler,
                                 StableBoundedPriorityQueue=core.StableBoundedPriorityQueue)
