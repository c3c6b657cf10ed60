"""Rows and messages written from outside, bypassing every check: each one gets a logged
refusal and nothing else. Nothing it names runs, the other rows keep being claimed and
run, no thread of the worker dies or spins, and the hostile row is not retried forever.

Rows are written with SQL (``support.durable.put_raw``) on each store; PostgreSQL where
``PYSCHED_TEST_POSTGRES_URL`` names a server.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pysched import Cron, Every
from pysched.durable import DurableScheduler, PostgresStore, Retry, TaskRegistry
from pysched.durable._series_spec import Policies, encode_spec

import support.durable as h
import support.durable_series as series

DEEP = "[" * 100_000  # JSON nested far beyond the interpreter's recursion limit
ARGS = '{"args":[],"kwargs":{}}'
INT32_MAX = 2**31 - 1  # PostgreSQL's integer: the attempts column
INT64_MAX = 2**63 - 1

TRIED: list[str] = []


def always_fails(tag: str) -> None:
    TRIED.append(tag)
    raise RuntimeError("fails on purpose")


def registry() -> TaskRegistry:
    found = TaskRegistry()
    found.register(h.note, "note")
    found.register(always_fails, "always-fails", retry=Retry(3, backoff=0.0, jitter=False))
    return found


@pytest.fixture
def make(store_spec: dict[str, Any]) -> Iterator[Any]:
    TRIED.clear()
    yield from h.schedulers(store_spec)


def refusals(caplog: pytest.LogCaptureFixture, task_id: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.ERROR and repr(task_id) in r.getMessage()]


def run_good_rows(s: Any, n: int = 5) -> None:
    """Schedule ``n`` good rows and wait for each to run: the fleet goes on."""
    for future in [s.schedule(f"good{i}", s.clock(), 0, h.note, [i]) for i in range(n)]:
        future.result(30)


@pytest.mark.parametrize("args", [DEEP, '{"args":' + DEEP, '{"args":[' + "[" * 50_000 + "1"
                                  + "]" * 50_000 + '],"kwargs":{}}'])
def test_args_nested_too_deeply_are_a_logged_refusal_in_error(
        make: Any, store_spec: dict[str, Any], args: str,
        caplog: pytest.LogCaptureFixture) -> None:
    """json.loads raises RecursionError, not ValueError, on deep nesting: such a row
    ended 'failed' with "interrupted by a BaseException", unlogged, as if the task had
    run and raised."""
    s = make(registry=registry())
    with caplog.at_level(logging.ERROR, logger="pysched.durable"):
        h.put_raw(s.store, store_spec, task_id="deep", args=args)
        run_good_rows(s)
        h.wait_for(lambda: s.row("deep")["state"] not in ("pending", "running"),
                   what="the deep row refused")
    row = s.row("deep")
    assert row["state"] == "error"
    assert "nested too deeply" in row["error"]
    assert h.CALLS and all(c[0] != "deep" for c in h.CALLS)
    assert len(refusals(caplog, "deep")) == 1


@pytest.mark.parametrize("attempts", [-10**9, -1, INT32_MAX],
                         ids=["negative", "minus-one", "int32-max"])
@pytest.mark.parametrize("ref", ["note", "always-fails"])
def test_a_row_whose_attempts_are_out_of_range_is_refused_and_the_rest_run(
        make: Any, store_spec: dict[str, Any], attempts: int, ref: str,
        caplog: pytest.LogCaptureFixture) -> None:
    """On PostgreSQL (an integer column) a due row at INT32_MAX attempts made every claim
    fail ("integer out of range"), so no worker claimed anything; a negative count
    defeated the retry limit, and with no backoff left retried at once, about forever."""
    s = make(registry=registry())
    with caplog.at_level(logging.ERROR, logger="pysched.durable"):
        h.put_raw(s.store, store_spec, task_id="counted", ref=ref, attempts=attempts,
                  args='{"args":["counted"],"kwargs":{}}')
        run_good_rows(s)
        h.wait_for(lambda: s.row("counted")["state"] not in ("pending", "running"),
                   what="the row refused")
    row = s.row("counted")
    assert row["state"] == "error" and "attempts" in row["error"]
    assert TRIED == [] and all(c[0] != "counted" for c in h.CALLS)
    assert len(refusals(caplog, "counted")) == 1


@pytest.mark.parametrize(("attempts", "state", "tries"), [(INT64_MAX, "error", 0),
                                                      ("many", "failed", 3)])
def test_sqlite_attempts_that_are_not_a_count_are_refused_or_counted_afresh(
        make: Any, store_spec: dict[str, Any], attempts: Any, state: str,
        tries: int) -> None:
    """SQLite keeps any value in an integer column: INT64_MAX + 1 became a float count,
    which ran (its retry policy ignored); text plus one is 1, a first try, so the policy's
    limit holds."""
    if store_spec["kind"] != "sqlite":
        pytest.skip("only SQLite keeps these values in an integer column")
    s = make(registry=registry())
    h.put_raw(s.store, store_spec, task_id="counted", ref="always-fails", attempts=attempts,
              args='{"args":["counted"],"kwargs":{}}')
    run_good_rows(s)
    h.wait_for(lambda: s.row("counted")["state"] not in ("pending", "running"),
               what="the row ended")
    assert s.row("counted")["state"] == state
    assert ["counted"] * tries == TRIED


def test_sqlite_rows_no_id_can_name_are_refused_once_not_at_every_re_read(
        make: Any, store_spec: dict[str, Any],
        caplog: pytest.LogCaptureFixture) -> None:
    """A row that no claim takes (its run_at is not a time) and whose task_id names no
    row (NULL, or bytes that are not UTF-8) cannot be marked error by its id: its refusal
    was logged and counted again at every re-read, for ever."""
    if store_spec["kind"] != "sqlite":
        pytest.skip("only SQLite keeps a task_id that names no row")
    s = make(registry=registry(), resync_interval=0.01)
    h.put_raw(s.store, store_spec, task_id="x", run_at="soon")
    s.store._conns.get().execute("UPDATE pysched_tasks SET task_id = CAST(x'ff61' AS TEXT)"
                                 " WHERE task_id = 'x'")
    h.put_raw(s.store, store_spec, task_id=None, run_at="later")
    with caplog.at_level(logging.ERROR, logger="pysched.durable"):
        h.wait_for(lambda: s.stats()["resyncs"] >= 2, what="a first re-read")
        first = s.stats()["resyncs"]
        run_good_rows(s)
        h.wait_for(lambda: s.stats()["resyncs"] >= first + 5, what="five more re-reads")
    logged = [r.getMessage() for r in caplog.records if "is not a finite time" in r.getMessage()]
    assert len(logged) == 2 and s.stats()["bad_rows"] == 2


def _absurd_leases(kind: str) -> list[Any]:
    leases: list[Any] = [1e300, float("inf")]
    if kind == "postgres":
        leases.append(float("nan"))  # SQLite keeps NaN as NULL: no lease
    if kind == "sqlite":
        leases.append("forever")  # PostgreSQL's double precision column refuses text
    return leases


def test_a_pending_row_under_an_absurd_lease_is_repaired_not_blocked_forever(
        make: Any, store_spec: dict[str, Any],
        caplog: pytest.LogCaptureFixture) -> None:
    """A pending row whose lease expires absurdly far ahead (or never, or is not a time)
    waited for it forever: it was never claimed, and repair looked only at running rows.
    No live worker sets such a lease, so it is released like a running row's."""
    s = make(registry=registry(), resync_interval=0.05)
    absurd = {f"leased{i}": lease for i, lease in enumerate(_absurd_leases(store_spec["kind"]))}
    with caplog.at_level(logging.WARNING, logger="pysched.durable"):
        for task_id, lease in absurd.items():
            h.put_raw(s.store, store_spec, task_id=task_id, lease_owner="x",
                      lease_token=f"x:1:1:{task_id}", lease_expires=lease,
                      args=f'{{"args":["{task_id}"],"kwargs":{{}}}}')
        run_good_rows(s)
        h.wait_for(lambda: all(s.row(i)["state"] == "completed" for i in absurd),
                   what="the rows under absurd leases to run")
    assert sorted(c[0] for c in h.CALLS if c[0] in absurd) == sorted(absurd)  # once each
    assert any("lease" in r.getMessage() and all(i in r.getMessage() for i in absurd)
               for r in caplog.records)


# -- recurring series rows --------------------------------------------------------------


def _every_spec(**fields: Any) -> str:
    data = json.loads(encode_spec(Every(1.0), Policies(1.0, "latest", "skip", "continue", 100),
                                  series.T0))
    return json.dumps({**data, **fields})


def _drive_in_a_thread(drivers: list[Any], clocks: Any, steps: int = 3) -> None:
    """Step the drivers, failing (not hanging) if a step does not return: a spin."""
    done = threading.Event()
    failure: list[BaseException] = []

    def steps_then_done() -> None:
        try:
            for _ in range(steps):
                series.step(drivers, clocks)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failure.append(exc)
        done.set()

    threading.Thread(target=steps_then_done, daemon=True).start()
    assert done.wait(30), "a series re-read or tick never returned"
    if failure:
        raise failure[0]


def _only_the_good_series_runs(table: Any, clocks: Any, caplog: pytest.LogCaptureFixture,
                               why: str) -> None:
    """Drive one worker over the series "good" and "bad": "good" runs, "bad" is refused
    once, with a log line naming it and ``why``."""
    here = series.driver(table, clocks, "here")
    with caplog.at_level(logging.ERROR, logger="pysched.durable"):
        _drive_in_a_thread([here], clocks)
    assert {label for label, _, _ in series.RAN} == {"good"}
    assert here.counts["series_refused"] == 1
    [refusal] = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert "'bad'" in refusal and why in refusal


@pytest.mark.parametrize(("spec", "args", "why"), [
    (DEEP, ARGS, "nested too deeply"),
    (None, DEEP, "nested too deeply"),
    (_every_spec(seconds=1e-300), ARGS, "period"),
    (_every_spec(seconds=1e-7), ARGS, "period"),
], ids=["deep-spec", "deep-args", "every-1e-300", "every-1e-7"])
def test_a_hostile_series_row_is_refused_and_the_other_series_run(
        store: Any, spec: str | None, args: str, why: str,
        caplog: pytest.LogCaptureFixture) -> None:
    """A spec or args nested too deeply raised RecursionError out of the re-read, so no
    series after it was adopted; an Every whose period is below the resolution of wall
    time made the series thread spin forever counting fire times that do not move."""
    table = store.series_table()
    clocks = series.Clocks()
    series.put(table, Every(1.0), label="good", series_id="good")
    good = _every_spec()
    table.put("bad", good if spec is None else spec, "series-tick", args, 0, "default",
              series.T0)
    _only_the_good_series_runs(table, clocks, caplog, why)


def test_schedule_recurring_refuses_an_every_finer_than_a_store_can_keep(
        store: Any) -> None:
    with DurableScheduler(store, registry=series.REGISTRY, max_workers=0) as sched:
        with pytest.raises(ValueError, match="trigger"):
            sched.schedule_recurring("s", Every(1e-7), 0, series.tick, args=["x"])
        assert store.series_table().rows() == []
        sched.schedule_recurring("s", Every(0.001), 0, series.tick, args=["x"])


@pytest.mark.parametrize(("column", "value", "trigger"), [
    ("created", 1e300, Cron("* * * * * *")),
    ("created", -1e300, Cron("* * * * * *")),
    ("floor", 1e300, Every(1.0)),
    ("floor", -1e300, Cron("* * * * * *")),
    ("state", "'zombie'", Every(1.0)),
], ids=["created-1e300", "created-minus-1e300", "floor-1e300", "floor-minus-1e300", "state"])
def test_a_series_row_with_impossible_fields_is_refused_and_the_other_series_run(
        store: Any, store_spec: dict[str, Any], column: str, value: Any,
        trigger: Any, caplog: pytest.LogCaptureFixture) -> None:
    """A wall instant beyond any date (created, or the floor that pruning raises) made the
    re-read raise OverflowError, so no series after it was adopted, or made an Every count
    fire times that do not move, for ever; a state that is neither active nor paused made
    every fire time a claim that fails, silently."""
    if store_spec["kind"] == "memory":
        pytest.skip("rows written with SQL")
    table = store.series_table()
    series.put(table, Every(1.0), label="good", series_id="good")
    series.put(table, trigger, label="bad", series_id="bad")
    store._conns.get().execute(f"UPDATE {store_spec['table']}_series SET {column} = {value}"
                               " WHERE series_id = 'bad'")
    _only_the_good_series_runs(table, series.Clocks(), caplog, column)


@pytest.mark.parametrize("attempts", [INT32_MAX, -(2**31), 0, "many", INT64_MAX])
def test_an_expired_fire_time_whose_attempts_are_not_a_count_is_refused_not_a_stall(
        store: Any, store_spec: dict[str, Any], attempts: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    """Taking over expired fire times counts attempts + 1: at PostgreSQL's integer limit
    that overflowed, and SQLite text made it raise in Python, failing the takeover of
    every other series' expired fire time, again at every poll."""
    if store_spec["kind"] == "memory":
        pytest.skip("rows written with SQL")
    if store_spec["kind"] == "postgres" and attempts in ("many", INT64_MAX):
        pytest.skip("PostgreSQL's integer column refuses it at write")
    table = store.series_table()
    for series_id in ("a-bad", "b-good", "c-good"):
        series.put(table, Every(1.0), label=series_id, series_id=series_id)
        assert table.claim(series_id, 1, series.T0 + 1, "dead", 0.001)  # its process died
    mark = "?" if store_spec["kind"] == "sqlite" else "%s"
    store._conns.get().execute(f"UPDATE {store_spec['table']}_fires SET attempts = {mark}"
                               " WHERE series_id = 'a-bad'", (attempts,))
    h.wait_for(lambda: store.now() > table.fire("c-good", 1, series.T0 + 1)["lease_expires"],
               what="the leases to expire")
    here = series.driver(table, series.Clocks(), "here")
    here.sync()
    with caplog.at_level(logging.ERROR, logger="pysched.durable"):
        here.rerun_expired()
        here.rerun_expired()
    assert sorted(label for label, _, _ in series.RAN) == ["b-good", "c-good"]
    assert table.fire("a-bad", 1, series.T0 + 1)["state"] == "failed"
    [refusal] = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert "'a-bad'" in refusal and "attempts" in refusal


# -- notifications ----------------------------------------------------------------------


@pytest.mark.parametrize("payload", ["[" * 7900, '["x",' + "[" * 7900, "," * 7900,
                                     "\\u0000\x01\x7f" * 700, '["x",' * 1500 + '"y"',
                                     '["\\u0000x"]', '["\\ud800"]', '["a", 1]',
                                     json.dumps(["x" * 2000])])
def test_a_hostile_notification_asks_at_most_for_a_re_read_and_loses_no_ids(
        payload: str) -> None:
    """Any role may NOTIFY the channel. A payload nested too deeply made the decoder raise
    RecursionError out of wait_changes; an id PostgreSQL cannot hold (a NUL, a lone
    surrogate) made the re-read of the ids raise. Either way the listener backed off as
    if the database were gone, and the ids of real writes announced beside it were
    dropped."""
    url = h.postgres_url()
    import psycopg

    table = h.unique_table()
    listening = PostgresStore(url, table=table)
    try:
        assert listening.wait_changes(1.0) is not None  # subscribes: a full re-read first
        with psycopg.connect(url, autocommit=True) as other, other.transaction():
            other.execute("SELECT pg_notify(%s, %s)", (table, payload))
            other.execute("SELECT pg_notify(%s, %s)", (table, '["real-write"]'))
        changes = listening.wait_changes(30.0)
        assert changes is not None and "real-write" in changes
        assert changes.everything  # the hostile one is at most a (debounced) re-read
        assert listening.rows(sorted(changes)) == []  # what the listener reads next
    finally:
        listening.close()
        h.drop_postgres_table(url, table)
