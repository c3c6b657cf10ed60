"""Durable recurring series on each store, on fake clocks: the claim rule (one fire time, one
run, whatever the number of schedulers), leases taken over, replacement, hostile rows, bad input.

Two ``SeriesDriver``s over one store stand for two processes: each has its own
book and clocks, and runs its starts inline, so each step is deterministic.
"""

from __future__ import annotations

import datetime
import logging
from concurrent.futures import Future
from functools import partial
from typing import Any

import pytest

from pysched import Cron, Every
from pysched.calendar import Reading
from pysched.durable import DurableScheduler, NotDurable, TaskRegistry
from pysched.durable._clocks import Clocks as CheckedClocks
from pysched.durable._series import SeriesDriver
from pysched.durable._series_spec import Policies, encode_spec
from pysched.durable.series_table import (
    ACTIVE,
    CANCELLED,
    PAUSED,
    FireClaim,
    SeriesRow,
    SeriesTable,
)

import support.durable as h
from support.durable_series import (
    RAN,
    REGISTRY,
    STALLED,
    T0,
    TRUSTED,
    Clocks,
    driver,
    lease_expired,
    put,
    step,
    tick,
)
from support.series_events import series_only


def test_two_schedulers_on_one_store_run_each_fire_time_once(store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    put(table, Every(1, start=datetime.datetime.fromtimestamp(T0 + 1, datetime.timezone.utc)))
    drivers = [driver(table, clocks, "one"), driver(table, clocks, "two")]
    events: list[Any] = []
    for d in drivers:
        d.hub.add_listener(events.append)
    for i in range(10):
        # Take turns at being first, so each scheduler wins some claims.
        step(drivers if i % 2 else drivers[::-1], clocks)
    assert [fire for _, fire, _ in RAN] == [T0 + k for k in range(1, 11)]
    assert events == []
    wins = [d.counts["series_fires"] for d in drivers]
    assert sorted(wins) == [5, 5] and [d.counts["series_fires_elsewhere"] for d in drivers] \
        == wins[::-1]
    assert table.fire("s", 1, T0 + 3)["state"] == "done"  # type: ignore[index]


def test_a_fire_time_is_claimed_once_whatever_asks(store: Any) -> None:
    table = store.series_table()
    generation = put(table, Cron("* * * * * *"))
    first = table.claim("s", generation, T0 + 1, "one", 30.0)
    assert first is not None and first.attempts == 1
    assert table.claim("s", generation, T0 + 1, "two", 30.0) is None
    assert table.claim("s", generation, T0 + 1, "one", 30.0) is None  # not even its owner
    assert table.finish(first, failed=False)
    assert table.claim("s", generation, T0 + 1, "two", 30.0) is None  # done stays claimed
    assert table.claim("s", generation, T0 + 2, "two", 30.0) is not None


def test_no_claim_on_a_paused_cancelled_or_replaced_series(store: Any) -> None:
    table = store.series_table()
    old = put(table, Cron("* * * * * *"))
    assert table.set_state("s", old, PAUSED)
    assert table.claim("s", old, T0 + 1, "one", 30.0) is None
    assert table.set_state("s", old, ACTIVE)
    new = put(table, Cron("* * * * * *"))  # a replacement by id: the whole series
    assert new == old + 1
    assert table.claim("s", old, T0 + 2, "one", 30.0) is None
    assert not table.set_state("s", old, PAUSED)
    assert table.claim("s", new, T0 + 2, "one", 30.0) is not None
    assert table.set_state("s", new, CANCELLED)
    assert table.claim("s", new, T0 + 3, "one", 30.0) is None
    assert not table.set_state("s", new, ACTIVE)  # cancelled stays cancelled
    assert table.rows() == []


def test_an_expired_lease_hands_the_fire_time_to_one_other_process(store: Any) -> None:
    table = store.series_table()
    generation = put(table, Cron("* * * * * *"))
    lost = table.claim("s", generation, T0 + 1, "dead", 0.001)
    assert lost is not None
    assert table.reclaim("live", 30.0, ["other-series"]) == []  # not served: left alone
    h.wait_for(lambda: lease_expired(store, generation), what="the lease to expire")
    [again] = table.reclaim("live", 30.0, ["s"])
    assert (again.fire_time, again.attempts) == (T0 + 1, 2)
    assert table.reclaim("third", 30.0, ["s"]) == []  # a live lease: never two at once
    assert not table.finish(lost, failed=False)  # the dead run's late end is not recorded
    assert table.finish(again, failed=False)
    assert table.reclaim("third", 0.001, ["s"]) == []


def test_a_heartbeat_keeps_a_running_fire_time_from_being_taken(store: Any) -> None:
    table = store.series_table()
    generation = put(table, Cron("* * * * * *"))
    claim = table.claim("s", generation, T0 + 1, "one", 30.0)
    assert claim is not None
    assert table.heartbeat("one", 30.0, [claim.token]) == [claim.token]
    assert table.heartbeat("two", 30.0, [claim.token]) == []
    assert table.reclaim("two", 30.0, ["s"]) == []


def died_holding(store: Any, *fires: float) -> int:
    """Store a series every second from T0 + 1, claimed at ``fires`` by a process that
    died: wait until those leases expired. Its generation."""
    table = store.series_table()
    put(table, Every(1, start=datetime.datetime.fromtimestamp(T0 + 1, datetime.timezone.utc)))
    generation: int = table.rows()[0].generation
    for fire in fires:
        assert table.claim("s", generation, fire, "dead", 0.001) is not None
    h.wait_for(lambda: all(lease_expired(store, generation, f) for f in fires),
               what="the leases to expire")
    return generation


def waiting_driver(table: SeriesTable, clocks: Clocks, waiting: list[Any]) -> SeriesDriver:
    """A driver whose jobs wait in ``waiting`` (every worker busy, a starved process)."""
    return SeriesDriver(table, owner="here", registry=REGISTRY, served=lambda r, q: True,
                        read=clocks.read, **clocks.lease_rule(), lease=30.0,
                        start=lambda job, priority: waiting.append(job))


def test_a_driver_reruns_a_fire_time_whose_process_died(store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    died_holding(store, T0 + 1)
    live = driver(table, clocks, "live")
    live.sync()
    live.rerun_expired()
    assert RAN == [("a", T0 + 1, 2)]
    assert live.counts["series_reruns"] == 1
    step([live], clocks)  # T0 + 1 is already claimed: never run again as new
    assert RAN == [("a", T0 + 1, 2)]
    step([live], clocks)
    assert RAN[-1] == ("a", T0 + 2, 1)


def test_a_taken_over_fire_time_that_waited_past_its_deadline_never_starts(store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    generation = died_holding(store, T0 + 1)
    waiting: list[Any] = []
    here = waiting_driver(table, clocks, waiting)
    here.sync()
    here.rerun_expired()
    [job] = waiting
    clocks.advance(TRUSTED)  # no renewal meanwhile: the claim's deadline has come
    job()
    assert RAN == [] and here.counts["series_lease_lapsed"] == 1
    assert here.inflight == {}  # no longer renewed: its lease expires for another run
    row = table.fire("s", generation, T0 + 1)
    assert row is not None and (row["state"], row["lease_owner"]) == ("running", "here")


def test_a_waiting_fire_time_starts_while_renewals_keep_it_live_and_never_once_lost(
        store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    generation = died_holding(store, T0 + 1, T0 + 2)
    waiting: list[Any] = []
    here = waiting_driver(table, clocks, waiting)
    here.sync()
    here.rerun_expired()
    assert len(waiting) == 2
    clocks.advance(TRUSTED - 1)
    # One lease is lost meanwhile (its row ended elsewhere); the other is renewed.
    lost = next(run for run in here.inflight.values() if run.run_at == T0 + 2)
    assert table.finish(FireClaim("s", generation, T0 + 2, 2, lost.token), failed=False)
    here.heartbeat()
    assert lost.lease_lost and here.counts["series_leases_lost"] == 1
    clocks.advance(2)  # past the claim's deadline, not the renewal's
    for job in waiting:
        job()
    assert RAN == [("a", T0 + 1, 2)] and here.counts["series_lease_lapsed"] == 1
    assert here.inflight == {}


class SlowClaims:
    """A series table whose claim statement takes ``seconds`` on the driver's clocks."""

    def __init__(self, table: SeriesTable, clocks: Clocks, seconds: float) -> None:
        self.table, self.clocks, self.seconds = table, clocks, seconds

    def claim(self, *args: Any) -> Any:
        found = self.table.claim(*args)
        self.clocks.advance(self.seconds)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)


def test_a_fire_time_whose_claim_came_back_after_its_deadline_never_starts(store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    put(table, Every(1, start=datetime.datetime.fromtimestamp(T0 + 1, datetime.timezone.utc)))
    slow = driver(SlowClaims(table, clocks, TRUSTED), clocks, "slow")  # type: ignore[arg-type]
    step([slow], clocks)
    assert RAN == [] and slow.counts["series_lease_lapsed"] == 1
    quick = driver(SlowClaims(table, clocks, TRUSTED - 1), clocks,  # type: ignore[arg-type]
                   "quick")
    step([quick], clocks)
    assert len(RAN) == 1 and quick.counts["series_lease_lapsed"] == 0


def test_a_replacement_elsewhere_replaces_the_whole_series_here(store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    put(table, Cron("* * * * * *"), label="old")
    here = driver(table, clocks, "here")
    events: list[Any] = []
    here.hub.add_listener(events.append)
    step([here], clocks)
    put(table, Cron("* * * * * *"), label="new")  # another process replaces it
    step([here], clocks)
    step([here], clocks)
    assert [label for label, _, _ in RAN] == ["old", "new", "new"]
    assert [(e.kind, e.reason) for e in events] == [("stopped", "replaced")]


def test_missed_fire_times_follow_catch_up_with_events(store: Any) -> None:
    """All processes were down for a minute: the first one back follows the policy."""
    table = store.series_table()
    clocks = Clocks()
    put(table, Cron("* * * * * *"), catch_up="none")
    first = driver(table, clocks, "one")
    step([first], clocks)
    clocks.advance(60)  # everyone down
    back = driver(table, clocks, "two")
    events: list[Any] = []
    back.hub.add_listener(events.append)
    step([back], clocks)
    # Within misfire_grace (1 s) of now, T0 + 61 is on time; the older ones were missed.
    assert [fire for _, fire, _ in RAN] == [T0 + 1, T0 + 61]
    [event] = events
    assert (event.kind, event.reason, event.fire_time, event.last_fire_time, event.count) == \
        ("skipped", "misfire", T0 + 2, T0 + 60, 59)
    # The stalled process wakes: it runs T0 + 62 (the other loses that claim), never T0 + 61.
    step([first, back], clocks)
    assert [fire for _, fire, _ in RAN] == [T0 + 1, T0 + 61, T0 + 62]
    assert back.counts["series_fires_elsewhere"] == 1


@pytest.mark.parametrize("spec, ref, why", [
    ("not json", "series-tick", "spec is not a trigger"),
    ('{"kind":"cron","expr":"61 * * * *","tz":"UTC","nonexistent":"shift",'
     '"ambiguous":"first","misfire_grace":1,"catch_up":"latest","overlap":"skip",'
     '"on_error":"continue","max_catch_up":100,"fmt":1}', "series-tick", "minute"),
    ('{"kind":"pickle","fmt":1}', "series-tick", "neither"),
    ('{"kind":"every","seconds":-1,"start":0,"misfire_grace":1,"catch_up":"latest",'
     '"overlap":"skip","on_error":"continue","max_catch_up":100,"fmt":1}', "series-tick",
     "seconds"),
    ('{"kind":"cron","expr":"* * * * *","tz":"Mars/Olympus","nonexistent":"shift",'
     '"ambiguous":"first","misfire_grace":1,"catch_up":"latest","overlap":"skip",'
     '"on_error":"continue","max_catch_up":100,"fmt":1}', "series-tick", "Mars/Olympus"),
    (None, "os:system", "unknown task"),
    ("bad args", "series-tick", "args"),
])
def test_a_hostile_series_row_is_a_logged_refusal(store: Any, spec: str | None, ref: str,
                                                  why: str,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    table = store.series_table()
    clocks = Clocks()
    good = encode_spec(Cron("* * * * * *"), Policies(1.0, "latest", "skip", "continue", 100), T0)
    text = good if spec in (None, "bad args") else spec
    args = "[1, 2" if spec == "bad args" else '{"args":["x"],"kwargs":{}}'
    table.put("s", text, ref, args, 0, "default", T0)
    here = driver(table, clocks, "here")
    with caplog.at_level(logging.ERROR, logger="pysched.durable"):
        for _ in range(3):
            step([here], clocks)
    assert RAN == []
    assert here.counts["series_refused"] == 1  # logged once, not at every re-read
    [record] = [r for r in caplog.records if "refused" in r.getMessage()]
    assert why in record.getMessage()
    assert table.fire("s", 1, T0 + 1) is None  # nothing claimed


def test_a_failing_run_under_on_error_stop_ends_the_series_everywhere(store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    put(table, Cron("* * * * * *"), ref="series-boom", on_error="stop")
    one, two = driver(table, clocks, "one"), driver(table, clocks, "two")
    step([one, two], clocks)
    assert table.rows() == []
    step([one, two], clocks)
    assert one.counts["series_failed"] + two.counts["series_failed"] == 1
    assert table.fire("s", 1, T0 + 1)["state"] == "failed"  # type: ignore[index]
    assert table.fire("s", 1, T0 + 2) is None


def test_schedule_recurring_checks_its_arguments_and_stores_nothing_on_error(
        store: Any) -> None:
    with DurableScheduler(store, registry=REGISTRY, max_workers=0) as sched:
        every = Every(1)
        with pytest.raises(TypeError, match="trigger"):
            sched.schedule_recurring("s", "* * * * *", 0, tick)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="catch_up"):
            sched.schedule_recurring("s", every, 0, tick, catch_up="some")
        with pytest.raises(ValueError, match="misfire_grace"):
            sched.schedule_recurring("s", every, 0, tick, misfire_grace=-1)
        with pytest.raises(NotDurable):
            sched.schedule_recurring("s", every, 0, lambda: None)
        with pytest.raises(NotDurable):
            sched.schedule_recurring("s", every, 0, tick, args=[object()])
        with pytest.raises(ValueError, match="task_id"):
            sched.schedule_recurring("s\x00", every, 0, tick)
        assert store.series_table().rows() == []


def test_the_handle_pauses_resumes_and_cancels_in_the_store(store: Any) -> None:
    with DurableScheduler(store, registry=REGISTRY, max_workers=0) as sched:
        cron = Cron("0 3 * * *", tz="Europe/Berlin")
        handle = sched.schedule_recurring("nightly", cron, 0, tick, args=["x"])
        fires = handle.next_fire_times(2)
        assert fires == cron.preview(2, after=fires[0] - datetime.timedelta(days=1))
        handle.pause()
        assert handle.paused and [r.state for r in store.series_table().rows()] == [PAUSED]
        handle.resume()
        assert not handle.paused and [r.state for r in store.series_table().rows()] == [ACTIVE]
        again = sched.schedule_recurring("nightly", cron, 0, tick, args=["y"])
        assert handle.cancelled and not handle.cancel()  # replaced: it reaches nothing
        assert [(r.generation, r.args) for r in store.series_table().rows()] == \
            [(2, '{"args":["y"],"kwargs":{}}')]
        assert again.cancel() and again.cancelled and store.series_table().rows() == []
        assert again.next_fire_times(1) == []


def test_series_rows_are_data(store: Any) -> None:
    """The trigger and policies are stored as JSON, and read back to the same trigger."""
    table = store.series_table()
    put(table, Cron("*/5 9-17 * * MON-FRI", tz="America/New_York", ambiguous="both"))
    [row] = table.rows()
    assert isinstance(row, SeriesRow)
    assert '"expr":"*/5 9-17 * * MON-FRI"' in row.spec and '"tz":"America/New_York"' in row.spec
    assert '"ambiguous":"both"' in row.spec and row.last_fire is None


def test_a_fire_time_decided_but_not_started_when_its_series_ends_is_an_event(
        store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    put(table, Cron("* * * * * *"))
    waiting: list[Any] = []  # every worker busy: the jobs wait here
    here = SeriesDriver(table, owner="here", registry=REGISTRY, served=lambda r, q: True,
                        read=clocks.read, **clocks.lease_rule(), lease=30.0,
                        start=lambda job, priority: waiting.append(job))
    events: list[Any] = []
    here.hub.add_listener(events.append)
    step([here], clocks)
    put(table, Cron("* * * * * *"))  # replaced elsewhere before a worker took it
    here.sync()
    [job] = waiting
    job()
    assert RAN == [] and table.fire("s", 1, T0 + 1) is None
    assert [(e.kind, e.reason, e.fire_time) for e in events] == \
        [("stopped", "replaced", None), ("skipped", "replaced", T0 + 1)]


def test_a_fire_time_whose_job_the_closing_pool_cancels_is_an_event(store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    put(table, Cron("* * * * * *"))
    futures: list[Future[Any]] = []

    def start(job: Any, priority: int) -> Future[Any]:
        futures.append(Future())
        return futures[-1]

    here = SeriesDriver(table, owner="here", registry=REGISTRY, served=lambda r, q: True,
                        read=clocks.read, **clocks.lease_rule(), lease=30.0, start=start)
    events: list[Any] = []
    here.hub.add_listener(events.append)
    step([here], clocks)
    here.close()
    futures[0].cancel()
    assert [(e.kind, e.reason, e.fire_time) for e in events] == \
        [("stopped", "closed", None), ("skipped", "closed", T0 + 1)]


def test_pruned_claims_are_never_made_again(store: Any) -> None:
    table = store.series_table()
    base = float(int(store.now())) - 100
    # Stored before the claims it makes (a prune floors only a series stored by then).
    spec = encode_spec(Cron("* * * * * *"), Policies(1.0, "latest", "skip", "continue", 100), base)
    generation = table.put("s", spec, "series-tick", '{"args":["a"],"kwargs":{}}', 0, "default",
                           base)
    done = [table.claim("s", generation, base + k, "one", 30.0) for k in (1, 2)]
    for claim in done:
        assert claim is not None and table.finish(claim, failed=False)
    running = table.claim("s", generation, base + 3, "one", 30.0)
    assert running is not None
    assert table.prune(50.0) == 2
    assert table.fire("s", generation, base + 1) is None
    assert table.fire("s", generation, base + 3) is not None  # a running claim stays
    assert table.claim("s", generation, base + 1, "two", 30.0) is None  # below the floor
    [row] = table.rows()
    assert row.last_fire is not None and row.last_fire >= base + 50  # restarts from the floor
    assert table.claim("s", generation, base + 200, "two", 30.0) is not None
    assert table.prune(50.0) == 0


def test_a_series_whose_task_is_registered_later_runs_from_then_on(store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    put(table, Cron("* * * * * *"), ref="series-later")
    registry = TaskRegistry()
    here = SeriesDriver(table, owner="here", registry=registry,
                        served=lambda ref, queue: registry.serves().matcher()(ref, queue),
                        read=clocks.read, **clocks.lease_rule(), lease=30.0,
                        start=lambda job, priority: job())
    step([here], clocks)
    assert RAN == [] and table.fire("s", 1, T0 + 1) is None  # left for a worker that has it
    registry.register(tick, "series-later")
    step([here], clocks)  # T0 + 1 is 1 s late: within misfire_grace, it runs
    step([here], clocks)
    assert [fire for _, fire, _ in RAN] == [T0 + 1, T0 + 2]


def test_a_durable_scheduler_runs_its_series_on_its_workers(store: Any) -> None:
    """End to end, on real clocks: the series thread, the pool, the stats and the events."""
    events: list[Any] = []
    with DurableScheduler(store, registry=REGISTRY, poll_interval=0.05) as sched:
        sched.add_listener(series_only(events.append))
        handle = sched.schedule_recurring("fast", Every(0.05), 3, tick, args=["e2e"])
        h.wait_for(lambda: len(RAN) >= 3, what="three runs")
        assert handle.cancel() and not handle.cancel()
        stats = sched.stats()
    fires = [fire for _, fire, _ in RAN]
    assert fires == sorted(set(fires))  # each once, in order
    assert stats["series_fires"] >= 3 and stats["series_events"]["stopped.cancelled"] == 1
    assert [e.reason for e in events if e.kind == "stopped"] == ["cancelled"]



class BrokenClocks(Clocks):
    """Clocks read through the scheduler's boundary (``_clocks.Clocks``), whose wall clock,
    once ``broken`` is set, raises it (an exception) or gives it as its reading."""

    broken: Any = None

    def __init__(self) -> None:
        super().__init__()
        self.boundary = CheckedClocks(lambda: self.mono, self.wall_clock)

    def wall_clock(self) -> Any:
        if isinstance(self.broken, BaseException):
            raise self.broken
        return self.wall if self.broken is None else self.broken

    def read(self) -> Reading:
        return self.boundary.read()

    def clock(self) -> float:
        return self.boundary.mono()


BREAKING: list[tuple[BrokenClocks, Any]] = []  # the clocks the task below breaks, and how


def break_clocks(label: str) -> None:
    clocks, broken = BREAKING[0]
    clocks.broken = broken


REGISTRY.register(break_clocks, "series-break-clocks")


@pytest.mark.parametrize("when", ["start", "end"])
def test_a_clock_failing_as_a_run_starts_or_ends_fails_that_run_only(
        store: Any, when: str) -> None:
    table = store.series_table()
    clocks = BrokenClocks()
    BREAKING[:] = [(clocks, OSError("clock unavailable"))]
    start = datetime.datetime.fromtimestamp(T0 + 1, datetime.timezone.utc)
    if when == "end":  # the task breaks the clocks: the end's reading fails
        put(table, Every(1, start=start), ref="series-break-clocks")
        here = driver(table, clocks, "here")
    else:  # broken between the decision (tick) and the run's start
        put(table, Every(1, start=start))
        here = SeriesDriver(table, owner="here", registry=REGISTRY,
                            served=lambda ref, queue: True, read=clocks.read,
                            **clocks.lease_rule(), lease=30.0,
                            start=lambda job, priority: (break_clocks("a"), job()))
    events: list[Any] = []
    here.hub.add_listener(events.append)
    step([here], clocks)  # fire time T0 + 1: no exception escapes the worker
    assert here.counts["series_failed"] == 1
    assert [(e.kind, e.fire_time) for e in events] == [("failed", T0 + 1)]
    assert here.counts["series_fires"] == (1 if when == "end" else 0)
    if when == "end":
        assert table.fire("s", 1, T0 + 1)["state"] == "done"  # type: ignore[index]

    # The series was freed: with working clocks the next fire time runs.
    BREAKING[:] = [(clocks, None)]
    clocks.broken = None
    here.start = lambda job, priority: job()
    step([here], clocks)
    assert here.counts["series_fires"] == (2 if when == "end" else 1)
    assert here.counts["series_failed"] == 1


@pytest.mark.parametrize("when", ["start", "end"])
def test_a_clock_failing_in_a_series_that_stops_on_error_stops_it_in_the_store(
        store: Any, when: str) -> None:
    table = store.series_table()
    clocks = BrokenClocks()
    BREAKING[:] = [(clocks, OSError("clock unavailable"))]
    start = datetime.datetime.fromtimestamp(T0 + 1, datetime.timezone.utc)
    put(table, Every(1, start=start), on_error="stop",
        ref="series-break-clocks" if when == "end" else "series-tick")
    here = SeriesDriver(table, owner="here", registry=REGISTRY, served=lambda ref, queue: True,
                        read=clocks.read, **clocks.lease_rule(), lease=30.0,
                        start=lambda job, priority: (when == "start" and break_clocks("a"),
                                                     job()))
    events: list[Any] = []
    here.hub.add_listener(events.append)
    step([here], clocks)
    assert [e.kind for e in events][:1] == ["failed"] and events[-1].kind == "stopped"
    assert table.rows() == []  # cancelled in the store: every process stops it


def test_a_clock_reading_that_is_no_time_as_the_series_are_re_read_refuses_none_of_them(
        store: Any) -> None:
    """The boundary turns a reading that is no time into an error, so the re-read fails
    (logged, tried again at the next chores) before any row is looked at."""
    clocks = BrokenClocks()
    table = store.series_table()
    put(table, Every(1, start=datetime.datetime.fromtimestamp(T0 + 1, datetime.timezone.utc)))
    here = driver(table, clocks, "here")
    clocks.broken = "noon"
    here.chores()  # the re-read fails (logged); the row is not refused for good
    assert here.counts["series_refused"] == 0 and here.counts["series_store_errors"] == 1
    clocks.broken = None
    step([here], clocks)
    assert [fire for _, fire, _ in RAN] == [T0 + 1]


def test_a_failing_clock_stores_no_series(store: Any) -> None:
    clocks = BrokenClocks()
    with DurableScheduler(store, registry=REGISTRY, max_workers=0,
                          wall_clock=lambda: clocks.read().wall) as sched:
        clocks.broken = float("nan")
        with pytest.raises(ValueError, match="wall_clock"):
            sched.schedule_recurring("s", Every(1), 0, tick, args=["a"])
        assert store.series_table().rows() == []


@pytest.mark.parametrize("trigger, why", [
    (Every(5, fixed_delay=True), "fixed delay"),
    (Every(5, start_at=3.0), "start_at"),
])
def test_an_every_bound_to_one_process_is_refused_naming_it(trigger: Every, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        encode_spec(trigger, Policies(1.0, "latest", "skip", "continue", 100), T0)


def test_a_task_id_is_one_thing_for_one_shots_and_series(store: Any) -> None:
    """A one-shot of a series' id replaces the whole series, in the store; a series replaces
    the id's pending one-shot; cancel(task_id) ends a series. As in the pool and asyncio."""
    events: list[Any] = []
    with DurableScheduler(store, registry=REGISTRY, max_workers=1) as sched:  # runs series here
        sched.add_listener(series_only(events.append))
        table = store.series_table()
        handle = sched.schedule_recurring("job", Every(60), 0, tick, args=["a"])
        once = sched.schedule_in("job", 3600.0, 0, tick, ("b",))
        assert handle.cancelled and table.rows() == []
        assert sched.row("job")["state"] == "pending"  # type: ignore[index]
        series = sched.schedule_recurring("job", Every(60), 0, tick, args=["c"])
        assert once.cancelled() and sched.row("job")["state"] == "cancelled"  # type: ignore[index]
        assert [row.series_id for row in table.rows()] == ["job"] and not series.cancelled
        assert sched.cancel("job") and series.cancelled and table.rows() == []
        assert not sched.cancel("job")
    assert [(e.series, e.kind, e.reason) for e in events] == [
        ("job", "stopped", "replaced"), ("job", "stopped", "cancelled")]


def test_series_table_end_cancels_whatever_generation(store: Any) -> None:
    table = store.series_table()
    spec = encode_spec(Every(5), Policies(1.0, "latest", "skip", "continue", 100), T0)
    assert table.end("s") is None
    table.put("s", spec, "series-tick", '{"args":[],"kwargs":{}}', 0, "default", T0)
    generation = table.put("s", spec, "series-tick", '{"args":[],"kwargs":{}}', 0, "default", T0)
    assert table.end("s") == generation == 2 and table.rows() == []
    assert table.end("s") is None and not table.set_state("s", 2, ACTIVE)


class ReadThenAct:
    """A series table whose ``rows()`` runs ``act`` once after reading: another thread
    storing or ending a series while the series thread re-reads."""

    def __init__(self, table: SeriesTable) -> None:
        self.table = table
        self.act: Any = None

    def rows(self) -> list[SeriesRow]:
        found = self.table.rows()
        act, self.act = self.act, None
        if act is not None:
            act()
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)


def test_a_series_stored_or_ended_during_a_re_read_is_not_undone_by_it(store: Any) -> None:
    table = ReadThenAct(store.series_table())
    clocks = Clocks()
    here = driver(table, clocks, "here")  # type: ignore[arg-type]

    def store_it(label: str) -> None:
        generation = put(table, Cron("* * * * * *"), label=label)  # type: ignore[arg-type]
        here.adopt(table.rows()[0]._replace(generation=generation))

    table.act = partial(store_it, "a")
    here.sync()  # read before "a" was stored: must not drop it
    assert here.holds("s") and here.entries["s"].generation == 1
    table.act = partial(store_it, "b")
    here.sync()  # read generation 1: must not roll generation 2 back
    assert here.entries["s"].generation == 2
    table.act = lambda: here.end("s")
    here.sync()  # read it active: must not bring it back
    assert not here.holds("s")
    step([here], clocks)
    assert RAN == []


def test_a_process_stalled_past_a_lease_never_takes_over_its_own_running_fire_time(
        store: Any) -> None:
    table = store.series_table()
    clocks = Clocks()
    put(table, Every(1, start=datetime.datetime.fromtimestamp(T0 + 1, datetime.timezone.utc)),
        ref="series-stall")
    here = driver(table, clocks, "here", lease=0.001)
    STALLED[:] = [store, here]
    step([here], clocks)
    assert RAN == [("a", T0 + 1, 1)] and here.counts["series_reruns"] == 0


def test_sqlite_series_rows_of_invalid_utf8_are_logged_refusals_not_a_stall(
        tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    """SQLite keeps whatever bytes a writer puts in a text column: one series row whose
    series_id or spec is not UTF-8 made every re-read raise, so no series ran. Each is
    now refused, with a log line, and the good one runs."""
    from pysched.durable import SQLiteStore

    RAN.clear()
    store = SQLiteStore(tmp_path / "s.db")
    try:
        table = store.series_table()
        clocks = Clocks()
        put(table, Every(1.0), label="good", series_id="good")
        put(table, Every(1.0), label="bad-id", series_id="bad-id")
        put(table, Every(1.0), label="bad-spec", series_id="bad-spec")
        db = store._conns.get()  # type: ignore[attr-defined]
        db.execute("UPDATE pysched_tasks_series SET series_id = CAST(x'ff61' AS TEXT)"
                   " WHERE series_id = 'bad-id'")
        db.execute("UPDATE pysched_tasks_series SET spec = CAST(x'7bff' AS TEXT)"
                   " WHERE series_id = 'bad-spec'")
        here = driver(table, clocks, "here")
        with caplog.at_level(logging.ERROR, logger="pysched.durable"):
            for _ in range(3):
                step([here], clocks)
        assert {label for label, _, _ in RAN} == {"good"}
        assert here.counts["series_refused"] == 2  # logged once each, not at every re-read
        refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
        assert len(refusals) == 2
        assert any("series_id is not valid UTF-8" in m for m in refusals)
        assert any("spec is not a trigger" in m for m in refusals)
    finally:
        store.close()
