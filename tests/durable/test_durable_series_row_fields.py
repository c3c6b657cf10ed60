"""A series row whose priority or generation no ``schedule_recurring`` could have stored
is refused (logged once, counted, never claimed or run) where its other fields are
checked, and the other series run; on each store whose columns can hold such a value.

A priority of 'x' or 1e300 ran: the driver handed it to the worker pool as it was.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pysched import Every

import support.durable_series as series

INT64_MAX = 2**63 - 1

# (column, SQL value, the stores whose column can hold it: PostgreSQL's are bigint)
HOSTILE = [
    ("priority", "'x'", {"sqlite"}),
    ("priority", "1e300", {"sqlite"}),
    ("priority", "1.5", {"sqlite"}),
    ("priority", "x'00'", {"sqlite"}),  # a blob
    ("priority", str(INT64_MAX + 1), {"sqlite"}),  # kept as a REAL there
    ("generation", "'x'", {"sqlite"}),
    ("generation", "1e300", {"sqlite"}),
    ("generation", "0", {"sqlite", "postgres"}),
    ("generation", "-5", {"sqlite", "postgres"}),
]


CASES = [(kind, column, value) for column, value, kinds in HOSTILE for kind in sorted(kinds)]


@pytest.mark.parametrize(("store_spec", "column", "value"), CASES, indirect=["store_spec"],
                         ids=[f"{k}-{c}={v}" for k, c, v in CASES])
def test_a_series_row_with_an_impossible_priority_or_generation_is_refused(
        store: Any, store_spec: dict[str, Any], column: str, value: str,  # noqa: F811
        caplog: pytest.LogCaptureFixture) -> None:
    table = store.series_table()
    series.put(table, Every(1.0), label="good", series_id="good")
    series.put(table, Every(1.0), label="bad", series_id="bad")
    store._conns.get().execute(f"UPDATE {store_spec['table']}_series SET {column} = {value}"
                               " WHERE series_id = 'bad'")
    assert_only_the_good_series_runs(table, caplog, column)


@pytest.mark.parametrize("store_spec", ["memory"], indirect=True)
@pytest.mark.parametrize("priority", ["x", 1e300, 2**64, True])
def test_a_memory_series_row_with_an_impossible_priority_is_refused(
        store: Any, priority: Any, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    """The memory table keeps what it is given: the same check applies to it."""
    table = store.series_table()
    series.put(table, Every(1.0), label="good", series_id="good")
    spec = table.rows()[0].spec
    table.put("bad", spec, "series-tick", '{"args":["bad"],"kwargs":{}}', priority, "default",
              series.T0)
    assert_only_the_good_series_runs(table, caplog, "priority")


def assert_only_the_good_series_runs(table: Any, caplog: pytest.LogCaptureFixture,
                                     why: str) -> None:
    """Three steps of one worker over "good" and "bad": "good" runs, "bad" is refused once,
    with a log line naming it and ``why``, and nothing of it is claimed."""
    clocks = series.Clocks()
    here = series.driver(table, clocks, "here")
    with caplog.at_level(logging.ERROR, logger="pysched.durable"):
        for _ in range(3):
            series.step([here], clocks)
    assert {label for label, _, _ in series.RAN} == {"good"}
    assert here.counts["series_refused"] == 1
    [refusal] = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert "'bad'" in refusal and why in refusal
    assert not any(table.fire("bad", generation, series.T0 + 1)
                   for generation in (1, 0, -5))
