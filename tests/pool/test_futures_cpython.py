"""CPython's own concurrent.futures executor tests, run against ThreadPoolScheduler.

The ThreadPoolExecutor test classes of the running interpreter's ``test``
package (``Lib/test/test_concurrent_futures/`` from 3.12 on: executor.py's
ExecutorTest through test_thread_pool.py, test_wait.py, test_as_completed.py
and test_shutdown.py; one ``test_concurrent_futures.py`` module on 3.10) run
with ``executor_type`` set to ThreadPoolScheduler on the ``impl`` core. The
tests that name ``futures.ThreadPoolExecutor`` themselves get pysched's
class through the module's ``futures`` global, and the ones that start a child
interpreter get it installed into that child's ``concurrent.futures`` first.
Each test method is one pytest item and must pass: an error, a failure, a
skip inside it, or threads it leaves running, fail the item. The only tests
skipped here are those about ThreadPoolExecutor's internals by construction,
each with its reason. Where the interpreter ships without these tests (some
builds leave the ``test`` package out) the module is skipped, unless
PYSCHED_REQUIRE_CPYTHON_TESTS is set (CI runs it under an interpreter that has them).
"""

from __future__ import annotations

import concurrent.futures
import importlib
import inspect
import os
import types
import unittest
from typing import Any

import pytest

import pysched

_LAYOUTS = (
    # 3.12 and later: a package, one module per topic
    ["test.test_concurrent_futures.test_thread_pool", "test.test_concurrent_futures.test_wait",
     "test.test_concurrent_futures.test_as_completed", "test.test_concurrent_futures.test_shutdown",
     "test.test_concurrent_futures.executor"],
    # 3.10 and 3.11: one module
    ["test.test_concurrent_futures"],
)
CLASS_NAMES = {"ThreadPoolExecutorTest", "ThreadPoolWaitTests", "ThreadPoolAsCompletedTest",
               "ThreadPoolShutdownTest"}

# Tests of how ThreadPoolExecutor itself is built, not of the Executor contract.
INTERNALS = {
    "test_saturation": "counts ThreadPoolExecutor's workers in its private _threads, where a"
                       " ThreadPoolScheduler also lists its dispatcher (its workers are counted"
                       " in tests/pool/test_pool_thread_start.py)",
    "test_idle_thread_reuse": "counts ThreadPoolExecutor's workers in its private _threads,"
                              " where a ThreadPoolScheduler also lists its dispatcher (its"
                              " workers are counted in tests/pool/test_pool_thread_start.py)",
    "test_threads_terminate": "counts ThreadPoolExecutor's workers in its private _threads,"
                              " where a ThreadPoolScheduler also lists its dispatcher (its"
                              " workers are counted in tests/pool/test_pool_thread_start.py)",
    "test_thread_names_assigned": "checks ThreadPoolExecutor's thread names (prefix_N); pysched"
                                  " names them prefix-worker-N and prefix-dispatcher",
    "test_thread_names_default": "checks ThreadPoolExecutor's default thread names"
                                 " (ThreadPoolExecutor-M_N)",
    "test_hang_global_shutdown_lock": "checks that ThreadPoolExecutor's module-level"
                                      " _global_shutdown_lock is reset in forked children",
}


def _load() -> list[types.ModuleType]:
    for layout in _LAYOUTS:
        try:
            return [importlib.import_module(name) for name in layout]
        except ImportError:
            continue
    if os.environ.get("PYSCHED_REQUIRE_CPYTHON_TESTS"):
        raise ImportError("CPython's concurrent.futures tests are required here, and this"
                          " interpreter ships none (test.test_concurrent_futures)")
    pytest.skip("this interpreter ships without CPython's concurrent.futures tests"
                " (test.test_concurrent_futures)", allow_module_level=True)


MODULES = _load()


def _test_methods() -> list[tuple[type[unittest.TestCase], str]]:
    loader = unittest.TestLoader()
    found = []
    for module in MODULES:
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if name in CLASS_NAMES and cls.__module__ == module.__name__:
                found += [(cls, test) for test in loader.getTestCaseNames(cls)]
    return found


TEST_METHODS = _test_methods()


def test_the_cpython_modules_have_the_thread_pool_tests() -> None:
    # Guards against a future layout where the collection above finds less.
    assert {cls.__name__ for cls, _ in TEST_METHODS} == CLASS_NAMES
    assert len(TEST_METHODS) >= 40
    assert all(cls.executor_type is concurrent.futures.ThreadPoolExecutor  # type: ignore[attr-defined]
               for cls, _ in TEST_METHODS)


def test_every_skip_names_a_collected_test() -> None:
    assert set(INTERNALS) <= {name for _, name in TEST_METHODS}


def _scheduler_class(core: Any) -> type[pysched.ThreadPoolScheduler]:
    class ThreadPoolScheduler(pysched.ThreadPoolScheduler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, _core_factory=core, **kwargs)

    return ThreadPoolScheduler


def _child_preamble(core: Any) -> str:
    """Code run first in a child interpreter: pysched's class in concurrent.futures."""
    return (f"import concurrent.futures, importlib, pysched\n"
            f"_core = importlib.import_module({core.__module__!r}).{core.__qualname__}\n"
            f"class ThreadPoolScheduler(pysched.ThreadPoolScheduler):\n"
            f"    def __init__(self, *args, **kwargs):\n"
            f"        super().__init__(*args, _core_factory=_core, **kwargs)\n"
            f"concurrent.futures.ThreadPoolScheduler = ThreadPoolScheduler\n"
            f"concurrent.futures.ThreadPoolExecutor = ThreadPoolScheduler\n"
            )


@pytest.mark.parametrize(("case", "name"), TEST_METHODS,
                         ids=[f"{cls.__name__}.{name}" for cls, name in TEST_METHODS])
def test_cpython_executor_test(impl: types.SimpleNamespace, monkeypatch: pytest.MonkeyPatch,
                               case: type[unittest.TestCase], name: str) -> None:
    if name in INTERNALS:
        pytest.skip(INTERNALS[name])
    from test import support
    from test.support import script_helper

    scheduler = _scheduler_class(impl.Scheduler)
    futures = types.SimpleNamespace(**vars(concurrent.futures))
    futures.ThreadPoolExecutor = scheduler
    preamble = _child_preamble(impl.Scheduler)

    def assert_python_ok(*args: Any, **env: Any) -> Any:
        assert args[0] == "-c", args
        return script_helper.assert_python_ok("-c", preamble + args[1], *args[2:], **env)

    for module in MODULES:
        if hasattr(module, "futures"):
            monkeypatch.setattr(module, "futures", futures)
        if hasattr(module, "assert_python_ok"):
            monkeypatch.setattr(module, "assert_python_ok", assert_python_ok)
    monkeypatch.setattr(support, "environment_altered", False)
    test_case = type(case.__name__, (case,), {"executor_type": scheduler})
    result = unittest.TestResult()
    test_case(name).run(result)
    problems = [f"{test}: {trace}" for test, trace in result.errors + result.failures]
    problems += [f"{test} skipped: {reason}" for test, reason in result.skipped]
    assert not problems, "\n".join(problems)
    assert result.testsRun == 1
    # threading_cleanup() in the test's tearDown flags threads still running a second later
    assert not support.environment_altered, "the test left pool threads running"
