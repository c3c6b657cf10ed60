"""One suite, two implementations: every test taking ``impl`` runs on both.

``impl`` is the compiled module itself for ``c`` (imported directly, so a
broken build fails loudly instead of testing Python twice) and a namespace of
the pure twins for ``py``. With PYSCHED_NO_EXTENSIONS set, as for a pure
install, the ``c`` cases are skipped.
"""

from __future__ import annotations

import pytest

from support.impl import NO_EXTENSIONS, compiled_module, pure_namespace


@pytest.fixture(params=["c", "py"])
def impl(request: pytest.FixtureRequest) -> object:
    if request.param == "c":
        if NO_EXTENSIONS:
            pytest.skip("PYSCHED_NO_EXTENSIONS is set: pure install")
        return compiled_module()
    return pure_namespace()


class FakeClock:
    """A monotonic clock that moves only when a test says so."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        assert seconds >= 0, "a monotonic clock never goes back"
        self.now += seconds


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()
