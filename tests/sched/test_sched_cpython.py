"""CPython's own tests for ``sched`` (Lib/test/test_sched.py), run against pysched.sched.

The module is imported from the running interpreter's ``test`` package, its
``sched`` global is pointed at pysched's drop-in (with the core picked by the
``impl`` fixture), and every test method of every TestCase in it runs as one
pytest item. Each must pass: an error, a failure or a skip fails the item.
Where the interpreter ships without its ``test`` package the module is skipped.
"""

from __future__ import annotations

import inspect
import types
import unittest

import pytest

import pysched.sched

cpython_tests = pytest.importorskip(
    "test.test_sched", reason="this interpreter ships without its test package (test.test_sched)")


def _test_methods() -> list[tuple[type[unittest.TestCase], str]]:
    loader = unittest.TestLoader()
    return [
        (cls, name)
        for _, cls in inspect.getmembers(cpython_tests, inspect.isclass)
        if issubclass(cls, unittest.TestCase) and cls.__module__ == cpython_tests.__name__
        for name in loader.getTestCaseNames(cls)
    ]


TEST_METHODS = _test_methods()


def test_the_cpython_module_has_tests() -> None:
    # Guards against a future layout where the collection above finds nothing.
    assert len(TEST_METHODS) >= 10


def test_the_cpython_module_tests_sched_through_its_global() -> None:
    # The swap below works only if the tests reach the scheduler as ``sched.scheduler``.
    import sched

    assert cpython_tests.sched is sched


@pytest.mark.parametrize(("case", "name"), TEST_METHODS,
                         ids=[f"{cls.__name__}.{name}" for cls, name in TEST_METHODS])
def test_cpython_test_sched(impl: types.SimpleNamespace, monkeypatch: pytest.MonkeyPatch,
                            case: type[unittest.TestCase], name: str) -> None:
    made = []

    class scheduler(pysched.sched.scheduler):  # noqa: N801
        _core_factory = impl.Scheduler

        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            made.append(self)

    drop_in = types.SimpleNamespace(**vars(pysched.sched))
    drop_in.scheduler = scheduler
    monkeypatch.setattr(cpython_tests, "sched", drop_in)
    result = unittest.TestResult()
    case(name).run(result)
    problems = [f"{test}: {trace}" for test, trace in result.errors + result.failures]
    problems += [f"{test} skipped: {reason}" for test, reason in result.skipped]
    assert not problems, "\n".join(problems)
    assert result.testsRun == 1
    assert made, "the test never built a pysched scheduler"
