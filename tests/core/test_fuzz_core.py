"""Differential fuzzing of the core Scheduler: the compiled core against the pure twin.

Operations with arbitrary values, bad ones included, run on both side by side
(tests/fuzz/differential.py): after every step no crash, ``_check()`` holds on
both and every outcome, exception type and message agree.

- The saved corpus (tests/fuzz/corpus/, from atheris campaigns, plus the
  inputs that once found bugs) replays in every run.
- Random inputs through hypothesis: a few dozen in the default suite (a few
  hundred with PYSCHED_FULL_EXAMPLES=1: support.examples), a
  large budget behind ``slow`` (PYSCHED_FUZZ_EXAMPLES sets it).
- The coverage-guided campaign is tests/fuzz/fuzz_core.py (atheris).
- The bounded queue has its own: tests/fuzz/differential_queue.py, fed by
  hypothesis here and by tests/fuzz/fuzz_queue.py (atheris).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from fuzz.decode import operations, queue_operations, spread_operations
from fuzz.differential import Divergence, run_differential
from fuzz.differential_queue import run_queue_differential
from fuzz.spreads import SHAPES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.impl import NO_EXTENSIONS, compiled_module, pure_namespace

CORPUS = Path(__file__).resolve().parents[1] / "fuzz" / "corpus"

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


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=1, max_size=400))
def test_random_inputs_agree(data):
    run(data)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("PYSCHED_FUZZ_EXAMPLES", "2000")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.binary(min_size=1, max_size=2000))
def test_random_inputs_agree_long(data):
    run(data)


# Inputs rich in the newer operations (kind 15 with a second byte >= 192):
# peek, cancel_pending, release, pop_due, schedule_many, and hold, which keeps
# tasks running while their ids are scheduled again, so versions park.
NEWER = st.tuples(st.integers(192, 255), st.binary(max_size=24)).map(
    lambda t: bytes([15, t[0]]) + t[1])
MIXED = st.lists(st.one_of(NEWER, st.binary(min_size=1, max_size=12)), min_size=1,
                 max_size=60).map(b"".join)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MIXED)
def test_random_inputs_with_the_newer_operations_agree(data):
    run(data)


def test_holding_tasks_while_rescheduling_parks_versions():
    ops = [("burst", 40, 0, 0.0), ("hold", 10, 0.0, 0.0), ("hold", 10, 0.0, 0.5),
           ("next", 1.0), ("peek",), ("cancel_pending", ("burst", 3)), ("release", 2),
           ("pop_due", 1.0, 3), ("schedule_many", [("a", 0.0, 0, print), ("b", 1.0, 1, len)]),
           ("complete", 0), ("fail", 1, ValueError("x"))]
    diff = run_differential(compiled_module(), pure_namespace(), ops[:3])
    assert diff.c.sched.stats()["parked"] > 0
    diff.run(ops[3:])


# -- adversarial run times: bursts of the shapes in fuzz/spreads.py ---------------------


def run_spread(data: bytes) -> None:
    run_differential(compiled_module(), pure_namespace(), list(spread_operations(data)))


# A burst (first byte < 48) or a cancel or partial claim of one (< 64), then ordinary bytes.
SPREAD = st.tuples(st.integers(0, 63), st.binary(min_size=4, max_size=4)).map(
    lambda t: bytes([t[0]]) + t[1])
SPREAD_MIXED = st.lists(st.one_of(SPREAD, SPREAD, st.binary(min_size=1, max_size=10)),
                        min_size=1, max_size=14).map(b"".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SPREAD_MIXED)
def test_bursts_of_adversarial_times_agree(data):
    run_spread(data)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("PYSCHED_FUZZ_EXAMPLES", "2000")) // 8, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(SPREAD_MIXED)
def test_bursts_of_adversarial_times_agree_long(data):
    run_spread(data)


def test_the_corpus_replays_as_bursts():
    """The saved inputs decoded as the atheris harness's second run decodes them."""
    for path in corpus_files()[::16]:
        try:
            run_spread(path.read_bytes())
        except Divergence as exc:
            raise AssertionError(f"{path.name}: {exc}") from exc


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_mixed_with_claims_parking_and_cancels(shape):
    """Every shape through every path: bursts before and after partial drains, bursts
    into a ladder being drained, past-due floods, parked versions and cancels."""
    ops = [("spread", shape, 1500, 0, 1), ("pop_due", 1e308, 200), ("hold", 15, 1e308, 1e308),
           ("spread", shape, 700, 64, 2), ("spread", "past_due", 300, 128, 3),
           ("pop_due", 1e308, 400), ("cancel_spread", 1500, 0, 1),
           ("spread_many", shape, 600, 192, 4), ("spread", "uniform", 300, 256, 5),
           ("hold", 15, 1e308, -1.0), ("pop_due", 1e308, 900), ("peek",),
           ("spread", shape, 1200, 320, 6), ("cancel_spread", 1200, 320, 6),
           ("pop_due", 1e308, 50), ("spread_many", "past_due", 1100, 384, 7)]
    run_differential(compiled_module(), pure_namespace(), ops)


# -- the bounded queue: the core against the twin ------------------------------------


def run_queue(data: bytes) -> None:
    capacity, tenant_limit, ops = queue_operations(data)
    run_queue_differential(compiled_module(), pure_namespace(), capacity, tenant_limit, ops)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=1, max_size=400))
def test_random_queue_inputs_agree(data):
    run_queue(data)


def test_a_queue_divergence_is_caught():
    class Lying:
        __name__ = "lying"

        def StableBoundedPriorityQueue(self, capacity, tenant_limit=None):  # noqa: N802
            return pure_namespace().StableBoundedPriorityQueue(capacity + 1,
                                                               tenant_limit=tenant_limit)

    with pytest.raises(Divergence):
        run_queue_differential(Lying(), pure_namespace(), 1, None,
                               [("push", 1, "a", None, None), ("push", 0, "b", None, None)])


@pytest.mark.parametrize("seed", range(3))
def test_a_large_queue_with_ties_and_the_int64_limits_agrees(seed):
    # A hundred entries and their dead nodes: sifts choose among full groups
    # of four children, many of equal priority, some at the int64 limits.
    rng = random.Random(seed)
    limits = [-(2**63), -(2**63) + 1, -1, 0, 2**63 - 2, 2**63 - 1]
    ops: list[tuple] = []
    for i in range(1500):
        priority = rng.choice(limits) if rng.random() < 0.4 else rng.randint(-20, 20)
        key = f"k{rng.randrange(i + 1)}"
        ops.append(rng.choices([
            ("push", priority, i, f"k{i}" if rng.random() < 0.3 else None, None),
            ("push_or_evict", priority, i, None, None),
            ("pop",), ("remove", key), ("reprioritize", key, priority),
        ], weights=[60, 15, 12, 7, 6])[0])
    run_queue_differential(compiled_module(), pure_namespace(), 100, None, ops)


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("PYSCHED_FUZZ_EXAMPLES", "2000")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.binary(min_size=1, max_size=2000))
def test_random_queue_inputs_agree_long(data):
    run_queue(data)
