"""Differential fuzzing of the core Scheduler: the compiled core against the pure twin.

Operations with arbitrary values, bad ones included, run on both side by side
(tests/fuzz/differential.py): after every step no crash, ``_check()`` holds on
both and every outcome, exception type and message agree.

- The saved corpus (tests/fuzz/corpus/, from atheris campaigns, plus the
  inputs that once found bugs) replays in every run.
- Random inputs through hypothesis: a few hundred in the default suite, a
  large budget behind ``slow`` (PYSCHED_FUZZ_EXAMPLES sets it).
- The coverage-guided campaign is tests/fuzz/fuzz_core.py (atheris).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import NO_EXTENSIONS, compiled_module, pure_namespace
from fuzz.decode import operations
from fuzz.differential import Divergence, run_differential
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CORPUS = Path(__file__).parent / "fuzz" / "corpus"

pytestmark = pytest.mark.skipif(NO_EXTENSIONS, reason="differential: needs the compiled core")


def run(data: bytes) -> None:
    run_differential(compiled_module(), pure_namespace(), list(operations(data)))


def corpus_files() -> list[Path]:
    return sorted(CORPUS.iterdir()) if CORPUS.is_dir() else []


def test_the_corpus_is_there():
    assert len(corpus_files()) >= 50


def test_the_corpus_replays():
    """Every saved input, bug-finding seeds included, still agrees on both cores."""
    for path in corpus_files():
        try:
            run(path.read_bytes())
        except Divergence as exc:
            raise AssertionError(f"{path.name}: {exc}") from exc


def test_a_divergence_is_caught():
    """The harness can fail: a core that answers differently is reported."""

    class Lying:
        def __init__(self, real):
            self.Task = real.Task
            self.__name__ = "lying"
            self._real = real

        def Scheduler(self, **kwargs):  # noqa: N802  # stands in for the class
            s = self._real.Scheduler(**kwargs)
            return LyingScheduler(s)

    class LyingScheduler:
        def __init__(self, s):
            self._s = s

        def __getattr__(self, name):
            return getattr(self._s, name)

        def __len__(self):
            return len(self._s)

        def schedule(self, *args):
            return self._s.schedule(*args) + 1  # off by one

    with pytest.raises(Divergence, match="schedule"):
        run_differential(Lying(compiled_module()), pure_namespace(),
                         [("schedule", "a", 1.0, 0, print)])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=1, max_size=400))
def test_random_inputs_agree(data):
    run(data)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("PYSCHED_FUZZ_EXAMPLES", "2000")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.binary(min_size=1, max_size=2000))
def test_random_inputs_agree_long(data):
    run(data)
