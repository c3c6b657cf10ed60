"""Label values stay bounded; bucket bounds are checked; importing metrics stays light."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysched.metrics.labels import OTHER, UNNAMED, BoundedValues
from pysched.metrics.tally import Tally, check_buckets

from support.examples import examples


@settings(max_examples=examples(400))
@given(st.lists(st.text(max_size=5), max_size=200), st.integers(1, 20))
def test_at_most_limit_values_pass_and_a_kept_value_stays_kept(values, limit):
    bounded = BoundedValues(limit)
    first_seen: dict[str, str] = {}
    for value in values:
        label = bounded.get(value)
        first_seen.setdefault(value, label)
        assert label == first_seen[value]  # a series never changes its label
        assert label in (value, OTHER)
    distinct = list(dict.fromkeys(values))
    assert bounded.folded == sum(1 for v in values if v not in distinct[:limit])
    assert set(first_seen.values()) <= set(distinct[:limit]) | {OTHER}
    assert len(bounded) == min(limit, len(distinct))


def test_none_is_the_unnamed_label_and_other_values_are_text():
    bounded = BoundedValues(2)
    assert bounded.get(None) == UNNAMED
    assert bounded.get(7) == "7"
    assert len(bounded) == 1


def test_threads_racing_never_keep_more_than_the_limit():
    bounded = BoundedValues(50)
    barrier = threading.Barrier(4)

    def feed(offset: int) -> None:
        barrier.wait()
        for i in range(5_000):
            bounded.get(f"v{offset}-{i}")

    threads = [threading.Thread(target=feed, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(bounded) == 50
    assert bounded.folded == 4 * 5_000 - 50


@pytest.mark.parametrize("limit, error", [(0, ValueError), (-1, ValueError), (1.5, TypeError),
                                          (True, TypeError), ("3", TypeError)])
def test_a_bad_limit_is_refused_by_name(limit, error):
    with pytest.raises(error, match="max_names"):
        BoundedValues(limit, "max_names")


@pytest.mark.parametrize("buckets, error", [
    ((), ValueError), ((math.inf,), ValueError), ((1.0, 1.0), ValueError),
    ((2.0, 1.0), ValueError), ((1.0, math.nan), ValueError), (("a",), TypeError),
    (None, TypeError)])
def test_bad_buckets_are_refused(buckets, error):
    with pytest.raises(error, match="buckets"):
        check_buckets(buckets)


def test_bucket_bounds_are_inclusive_and_the_last_is_above_every_bound():
    tally = Tally((0.1, 1.0, math.inf))
    recorder = tally.recorder(("pool", "", "job"))
    assert tally.recorder(("pool", "", "job")) is recorder
    for value in (0.0, 0.1, 0.5, 1.0, 1.5, 99.0):
        recorder.ran(value)
    [counts] = tally.snapshot()
    histogram = counts.duration
    assert histogram.counts == [2, 2, 2]
    assert histogram.sum == pytest.approx(102.1)


def test_importing_metrics_loads_no_backend():
    code = ("import json, sys\nbefore = set(sys.modules)\nimport pysched, pysched.metrics\n"
            "print(json.dumps(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    added = set(json.loads(out))
    assert not {m for m in added if m.split(".")[0] in ("prometheus_client", "opentelemetry")}
    assert not {m for m in added if m.startswith(("pysched.pool", "pysched.aio",
                                                  "pysched.durable"))}
