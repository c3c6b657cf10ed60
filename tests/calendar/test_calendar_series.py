"""The series logic on fake clocks: catch-up, clock jumps, DST nights, overlap, errors, bounds."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pysched.calendar import ClockWatch, Cron, Event, EventHub, Every, Fire, Reading, Series
from pysched.calendar import series as series_module

from support.calendar_driver import Driver, FakeClocks, ts

HOUR = 3600.0


def _hourly_through_suspend(catch_up: str) -> Driver:
    clocks = FakeClocks(ts("2025-01-01T00:30"))
    series = Series("job", Cron("0 * * * *"), clocks.read(), catch_up=catch_up)
    driver = Driver([series], clocks)
    driver.run_until_wall(ts("2025-01-01T01:10"))
    clocks.suspend(3 * HOUR)  # the laptop sleeps from 01:10 to 04:10
    driver.run_until_wall(ts("2025-01-01T05:30"))
    return driver


def test_suspend_three_hours_catch_up_none_skips_the_missed_hours() -> None:
    d = _hourly_through_suspend("none")
    assert d.fired("job") == [ts("2025-01-01T01:00"), ts("2025-01-01T05:00")]
    [skipped] = d.of_kind("skipped")
    assert (skipped.reason, skipped.count) == ("clock_jump", 3)
    assert (skipped.fire_time, skipped.last_fire_time) == (ts("2025-01-01T02:00"),
                                                            ts("2025-01-01T04:00"))
    assert skipped.lateness == pytest.approx(ts("2025-01-01T04:10") - ts("2025-01-01T02:00"))
    [jump] = d.of_kind("clock_jump")
    assert (jump.reason, jump.lateness) == ("set_forward", 3 * HOUR)
    assert not d.of_kind("late") and not d.of_kind("coalesced")


def test_suspend_three_hours_catch_up_latest_runs_once_for_all() -> None:
    d = _hourly_through_suspend("latest")
    assert d.fired("job") == [ts("2025-01-01T01:00"), ts("2025-01-01T04:00"),
                              ts("2025-01-01T05:00")]
    [coalesced] = d.of_kind("coalesced")
    assert (coalesced.reason, coalesced.count, coalesced.fire_time, coalesced.last_fire_time) == (
        "clock_jump", 2, ts("2025-01-01T02:00"), ts("2025-01-01T03:00"))
    [late] = d.of_kind("late")
    assert (late.reason, late.fire_time, late.count) == ("clock_jump", ts("2025-01-01T04:00"), 3)
    assert late.lateness == pytest.approx(600)
    assert not d.of_kind("skipped")


def test_suspend_three_hours_catch_up_all_runs_each() -> None:
    d = _hourly_through_suspend("all")
    hours = [ts(f"2025-01-01T0{h}:00") for h in range(1, 6)]
    assert d.fired("job") == hours
    late = d.of_kind("late")
    assert [e.fire_time for e in late] == hours[1:4]
    assert {e.reason for e in late} == {"clock_jump"}
    assert not d.of_kind("skipped") and not d.of_kind("coalesced")


def test_suspend_catch_up_all_is_capped() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("s", Cron("* * * * *"), clocks.read(), catch_up="all", max_catch_up=2)
    d = Driver([series], clocks)
    d.run_until_wall(ts("2025-01-01T00:01:10"))
    clocks.suspend(10 * 60)
    d.run_until_wall(ts("2025-01-01T00:11:30"))
    # 00:02 .. 00:11 were jumped over: the newest two run, the eight before are skipped
    assert d.fired("s") == [ts("2025-01-01T00:01"), ts("2025-01-01T00:10"),
                            ts("2025-01-01T00:11")]
    [skipped] = d.of_kind("skipped")
    assert (skipped.reason, skipped.count, skipped.fire_time, skipped.last_fire_time) == (
        "catch_up_cap", 8, ts("2025-01-01T00:02"), ts("2025-01-01T00:09"))


def test_interval_series_sleeps_through_a_suspend_on_the_monotonic_clock() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00"))
    series = Series("tick", Every(600), clocks.read())
    d = Driver([series], clocks)
    d.run_until_wall(ts("2025-01-01T00:25"))
    clocks.suspend(3 * HOUR)
    d.run_until_wall(ts("2025-01-01T03:50"))
    mono = [f - 1000.0 for f in d.fired("tick")]
    assert mono == [600.0 * k for k in range(1, 6)]  # nothing missed, nothing early
    assert not d.of_kind("skipped") and not d.of_kind("late")


def test_wall_clock_set_back_an_hour_never_fires_a_fire_time_twice() -> None:
    clocks = FakeClocks(ts("2025-01-01T09:50"))
    hourly = Series("hourly", Cron("0 * * * *"), clocks.read())
    every = Series("every", Every(1200), clocks.read())
    d = Driver([hourly, every], clocks)
    d.run_until_wall(ts("2025-01-01T10:20"))
    clocks.set_wall(-HOUR)  # 10:20 -> 09:20
    d.run_until_wall(ts("2025-01-01T11:30"))
    assert d.fired("hourly") == [ts("2025-01-01T10:00"), ts("2025-01-01T11:00")]
    # the 11:00 run waited for the wall clock to read 11:00 again
    assert [wall for sid, _, wall in d.runs if sid == "hourly"][1] >= ts("2025-01-01T11:00")
    # the interval series kept its monotonic rhythm: every 1200 s of elapsed time
    fires = d.fired("every")
    assert [b - a for a, b in zip(fires, fires[1:], strict=False)] == [1200.0] * (len(fires) - 1)
    assert len(fires) == 8  # 2 h 40 min of elapsed time: 9,600 s
    [jump] = d.of_kind("clock_jump")
    assert (jump.reason, jump.lateness) == ("set_back", -HOUR)
    assert not d.of_kind("skipped") and not d.of_kind("late")


def test_wall_clock_set_forward_an_hour_catches_up_with_events() -> None:
    clocks = FakeClocks(ts("2025-01-01T09:50"))
    hourly = Series("hourly", Cron("0 * * * *"), clocks.read())
    every = Series("every", Every(1200), clocks.read())
    d = Driver([hourly, every], clocks)
    d.run_until_wall(ts("2025-01-01T10:20"))
    clocks.set_wall(HOUR)  # 10:20 -> 11:20: 11:00 is jumped over
    d.run_until_wall(ts("2025-01-01T12:30"))
    assert d.fired("hourly") == [ts("2025-01-01T10:00"), ts("2025-01-01T11:00"),
                                 ts("2025-01-01T12:00")]
    [late] = d.of_kind("late")
    assert (late.series, late.reason, late.fire_time) == ("hourly", "clock_jump",
                                                          ts("2025-01-01T11:00"))
    fires = d.fired("every")
    assert [b - a for a, b in zip(fires, fires[1:], strict=False)] == [1200.0] * (len(fires) - 1)
    assert [e.reason for e in d.of_kind("clock_jump")] == ["set_forward"]


def test_a_jump_seen_during_a_run_names_the_reason_after_it() -> None:
    clocks = FakeClocks(ts("2025-01-01T01:00"))
    series = Series("job", Cron("*/10 * * * *"), clocks.read(), misfire_grace=60,
                    overlap="queue")
    watch = ClockWatch(clocks.read())
    clocks.advance(600)
    assert series.poll(clocks.read(), watch.observe(clocks.read())).start is not None
    clocks.set_wall(HOUR)  # while 01:10 runs, the clock jumps to 02:10
    jump = watch.observe(clocks.read())
    assert jump is not None and series.poll(clocks.read(), jump).start is None
    clocks.advance(5)
    series.finished(clocks.read())
    decision = series.poll(clocks.read(), watch.observe(clocks.read()))
    # 01:20 .. 02:00 were jumped over; the on-time 02:10 run stands for them
    assert [(e.kind, e.reason, e.count) for e in decision.events] == [
        ("coalesced", "clock_jump", 5)]
    assert decision.start is not None
    assert (decision.start.fire_time, decision.start.count) == (ts("2025-01-01T02:10"), 6)


def test_fall_back_night_hourly_and_half_hourly_follow_elapsed_time() -> None:
    # America/New_York, 2 Nov 2025: 02:00 EDT becomes 01:00 EST (06:00 UTC).
    clocks = FakeClocks(ts("2025-11-02T03:50"))  # 23:50 EDT
    hourly = Series("hourly", Cron("0 * * * *", tz="America/New_York"), clocks.read())
    half = Series("half", Cron("*/30 * * * *", tz="America/New_York"), clocks.read())
    daily = Series("daily", Cron("30 1 * * *", tz="America/New_York"), clocks.read())
    d = Driver([hourly, half, daily], clocks)
    d.run_until_wall(ts("2025-11-02T09:10"))  # 04:10 EST
    utc_hours = [ts(f"2025-11-02T0{h}:00") for h in range(4, 10)]
    assert d.fired("hourly") == utc_hours  # 00:00, 01:00 EDT, 01:00, 02:00, 03:00, 04:00 EST
    assert d.fired("half") == [t + m for t in utc_hours for m in (0, 1800)][:-1]
    assert d.fired("daily") == [ts("2025-11-02T05:30")]  # 01:30 EDT only ("first")
    assert d.events == []


def test_overlap_skip_names_the_fire_times_that_came_due_during_a_run() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("slow", Cron("* * * * *"), clocks.read(), overlap="skip",
                    misfire_grace=600)
    d = Driver([series], clocks, run_time=150)  # each run takes 2.5 minutes
    d.run_until_wall(ts("2025-01-01T00:06:50"))
    assert d.fired("slow") == [ts("2025-01-01T00:01"), ts("2025-01-01T00:04")]
    skipped = d.of_kind("skipped")
    assert [(e.reason, e.fire_time, e.count) for e in skipped] == [
        ("overlap", ts("2025-01-01T00:02"), 2), ("overlap", ts("2025-01-01T00:05"), 2)]


def test_overlap_coalesce_runs_once_for_the_fire_times_during_a_run() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("slow", Cron("* * * * *"), clocks.read(), overlap="coalesce",
                    misfire_grace=600)
    d = Driver([series], clocks, run_time=150)
    d.run_until_wall(ts("2025-01-01T00:06:00"))
    # 00:01 runs until 00:03:30; 00:02 and 00:03 came due: one run for 00:03
    assert d.fired("slow")[:2] == [ts("2025-01-01T00:01"), ts("2025-01-01T00:03")]
    first = d.of_kind("coalesced")[0]
    assert (first.reason, first.fire_time, first.count) == ("overlap", ts("2025-01-01T00:02"), 1)


def test_a_coalesced_run_waits_again_when_the_wall_clock_is_set_back_before_it_starts() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("slow", Cron("* * * * *"), clocks.read(), overlap="coalesce", recheck=600)
    clocks.advance(30)
    assert series.poll(clocks.read()).start is not None  # 00:01 runs until 00:03:30
    clocks.advance(150)
    series.finished(clocks.read())  # 00:02 and 00:03 came due: one run for 00:03, decided
    clocks.set_wall(-120)  # now 00:01:30
    assert series.poll(clocks.read()).start is None
    assert series.next_wake(clocks.read()) == clocks.mono + 90
    clocks.advance(90)
    start = series.poll(clocks.read()).start
    assert start is not None and start.fire_time == ts("2025-01-01T00:03")


@pytest.mark.parametrize("catch_up", ["none", "latest", "all"])
def test_a_run_that_waits_for_a_worker_past_the_grace_follows_catch_up(catch_up: str) -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("busy", Cron("* * * * *"), clocks.read(), catch_up=catch_up)
    clocks.advance(30)
    decision = series.poll(clocks.read())  # 00:01, on time
    assert decision.start is not None and decision.events == []
    clocks.advance(5)  # every worker busy for 5 s
    started, events = series.begin(clocks.read())
    [event] = events
    assert (event.reason, event.fire_time, event.lateness) == ("misfire", ts("2025-01-01T00:01"),
                                                               5.0)
    if catch_up == "none":
        assert not started and event.kind == "skipped" and series.running is None
        clocks.advance(55)
        nxt = series.poll(clocks.read()).start
        assert nxt is not None and nxt.fire_time == ts("2025-01-01T00:02")
    else:
        assert started and event.kind == "late"


def test_a_run_decided_late_is_not_reported_twice_when_it_begins() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("s", Cron("* * * * *"), clocks.read(), catch_up="latest")
    clocks.advance(40)  # 00:01 is 10 s late when decided
    decision = series.poll(clocks.read())
    assert [e.kind for e in decision.events] == ["late"]
    clocks.advance(5)
    assert series.begin(clocks.read()) == (True, [])
    with pytest.raises(RuntimeError):
        Series("t", Every(5), clocks.read()).begin(clocks.read())


def test_on_error_stop_ends_the_series_and_continue_goes_on() -> None:
    for on_error, runs in (("stop", 1), ("continue", 3)):
        clocks = FakeClocks(ts("2025-01-01T00:00:30"))
        series = Series("f", Cron("* * * * *"), clocks.read(), on_error=on_error)
        d = Driver([series], clocks, fail=True)
        d.run_until_wall(ts("2025-01-01T00:03:30"))
        assert len(d.fired("f")) == runs
        assert len(d.of_kind("failed")) == runs
        assert [e.reason for e in d.of_kind("stopped")] == (["error"] if on_error == "stop"
                                                             else [])


def test_a_month_offline_costs_bounded_work() -> None:
    # a durable series restarts from its last fire time after 30 days down:
    # 2.6 million fire times of an every-second cron were missed
    clocks = FakeClocks(ts("2025-01-31T00:00:00.500000"))
    last = ts("2025-01-01T00:00")
    newest = ts("2025-01-31T00:00")  # within the grace: on time
    expected = {"none": [newest], "latest": [newest],
                "all": [newest - 3, newest - 2, newest - 1, newest]}
    for catch_up in ("none", "latest", "all"):
        series = Series("s", Cron("* * * * * *"), clocks.read(), last_fire=last,
                        catch_up=catch_up, max_catch_up=3)
        decision = series.poll(clocks.read())
        started = [] if decision.start is None else [decision.start.fire_time]
        while series.running is not None:
            series.finished(clocks.read())
            nxt = series.poll(clocks.read()).start
            if nxt is not None:
                started.append(nxt.fire_time)
        assert started == expected[catch_up]
        kinds = {e.kind: e for e in decision.events}
        missed = kinds["skipped" if catch_up != "latest" else "coalesced"]
        assert missed.count is None and missed.fire_time == last + 1
        assert series.last_fire == newest


def test_a_month_offline_catch_up_all_runs_the_newest_missed() -> None:
    clocks = FakeClocks(ts("2025-01-31T00:00:10"))
    series = Series("s", Cron("* * * * * *"), clocks.read(), last_fire=ts("2025-01-01T00:00"),
                    catch_up="all", max_catch_up=3, misfire_grace=0)
    decision = series.poll(clocks.read())
    late = [e.fire_time for e in decision.events if e.kind == "late"]
    assert late == [ts("2025-01-31T00:00:07"), ts("2025-01-31T00:00:08"),
                    ts("2025-01-31T00:00:09")]
    assert decision.start is not None and decision.start.fire_time == late[0]


@pytest.mark.parametrize("missed", [9, 10, 12, 14, 15, 16, 40])
def test_catch_up_all_around_the_scan_limit_runs_the_newest(monkeypatch: pytest.MonkeyPatch,
                                                            missed: int) -> None:
    monkeypatch.setattr(series_module, "SCAN_LIMIT", 10)
    clocks = FakeClocks(ts("2025-01-01T00:00"), mono=0.0)
    series = Series("s", Every(1), clocks.read(), catch_up="all", max_catch_up=5,
                    misfire_grace=0.5)
    clocks.advance(missed + 0.75)  # fire times 1 .. missed are missed
    decision = series.poll(clocks.read())
    late = [e.fire_time for e in decision.events if e.kind == "late"]
    assert late == [float(k) for k in range(missed - 4, missed + 1)]
    skipped = [e for e in decision.events if e.kind == "skipped"]
    if missed <= 15:  # the scan plus the five newest: every skipped one counted
        assert [(e.fire_time, e.count) for e in skipped] == [(1.0, missed - 5)]
    else:
        assert [(e.fire_time, e.count) for e in skipped] == [(1.0, None)]


def test_every_is_anchored_so_runs_do_not_drift() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00"), mono=50.0)
    series = Series("e", Every(10), clocks.read(), misfire_grace=100)
    d = Driver([series], clocks, run_time=3.7)
    d.run_until_wall(ts("2025-01-01T00:10"))
    assert d.fired("e") == [50.0 + 10 * k for k in range(1, 61)]


def test_every_start_at_is_a_time_on_the_monotonic_clock() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00"), mono=50.0)
    series = Series("e", Every(0.1, start_at=52.0), clocks.read())
    assert series.next_fire_times(3) == [52.0, 52.1, 52.2]  # exact: no wall reading involved
    with pytest.raises(ValueError, match="start_at"):
        Series("w", Every(1, start_at=52.0), clocks.read(), timeline="wall")


def test_every_fixed_delay_counts_from_the_end_of_each_run() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00"), mono=0.0)
    series = Series("d", Every(1.0, start_at=1.0, fixed_delay=True), clocks.read(),
                    misfire_grace=None, overlap="skip")
    clocks.advance(1.0)
    assert series.poll(clocks.read()).start == Fire(1.0, 0.0)
    clocks.advance(2.5)  # the run ends at 3.5: nothing came due during it, nothing is skipped
    assert series.finished(clocks.read()) == []
    assert series.next_fire_times(2) == [4.5, 5.5]
    clocks.advance(1.0)
    assert series.poll(clocks.read()).start == Fire(4.5, 0.0)


def test_a_run_ending_exactly_on_a_fire_time_does_not_skip_it() -> None:
    """3 * 0.1 is 0.30000000000000004: the run ending then skips 0.1 and 0.2, not it."""
    clocks = FakeClocks(ts("2025-01-01T00:00"), mono=0.0)
    series = Series("t", Every(0.1, start_at=0.0), clocks.read(), misfire_grace=None)
    assert series.poll(clocks.read()).start == Fire(0.0, 0.0)
    clocks.mono = 3 * 0.1
    [skipped] = series.finished(clocks.read())
    assert (skipped.kind, skipped.reason, skipped.count) == ("skipped", "overlap", 2)
    assert series.next_fire_times(1) == [3 * 0.1]


def test_every_with_a_start_in_the_past_catches_up_by_policy() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00"), mono=50.0)
    start = datetime(2024, 12, 31, 23, 50, tzinfo=timezone.utc)
    series = Series("e", Every(60, start=start), clocks.read(), catch_up="none")
    decision = series.poll(clocks.read())
    # fire times 23:50 .. 23:59 (mono 50 - 600 .. 50 - 60) are missed; 00:00 is due now
    [skipped] = decision.events
    assert (skipped.kind, skipped.reason, skipped.count, skipped.timeline) == (
        "skipped", "misfire", 10, "monotonic")
    assert decision.start is not None and decision.start.fire_time == 50.0


def test_no_misfire_grace_runs_each_due_fire_time_up_to_the_cap() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("n", Cron("* * * * *"), clocks.read(), misfire_grace=None, max_catch_up=3)
    clocks.advance(5 * 60)  # 00:01 .. 00:05 are due
    decision = series.poll(clocks.read())
    assert [(e.kind, e.reason, e.count) for e in decision.events] == [
        ("skipped", "catch_up_cap", 2)]
    started = [decision.start]
    while series.running is not None:
        series.finished(clocks.read())
        started.append(series.poll(clocks.read()).start)
    # the newest three, as catch_up="all" keeps the newest missed ones
    assert [f.fire_time for f in started if f is not None] == [
        ts("2025-01-01T00:03"), ts("2025-01-01T00:04"), ts("2025-01-01T00:05")]


def test_an_interval_on_the_wall_timeline_has_the_same_fire_times_in_every_process() -> None:
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    first = FakeClocks(ts("2025-01-01T00:00:05"), mono=10.0)
    second = FakeClocks(ts("2025-01-01T00:07:30"), mono=99_999.0)  # started later, elsewhere
    a = Series("e", Every(60, start=start), first.read(), timeline="wall", misfire_grace=None)
    b = Series("e", Every(60, start=start), second.read(), timeline="wall", last_fire=ts(
        "2025-01-01T00:07"))
    assert a.timeline == b.timeline == "wall"
    assert a.next_fire_times(9)[-2:] == [ts("2025-01-01T00:07"), ts("2025-01-01T00:08")]
    assert b.next_fire_times(1) == [ts("2025-01-01T00:08")]
    with pytest.raises(ValueError, match="timeline"):
        Series("c", Cron("* * * * *"), first.read(), timeline="monotonic")
    with pytest.raises(ValueError, match="timeline"):
        Series("c", Every(5), first.read(), timeline="elsewhere")


def test_runs_decided_but_not_started_are_skipped_when_the_series_stops() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("s", Cron("* * * * *"), clocks.read(), catch_up="all", misfire_grace=0)
    clocks.advance(3 * 60)  # 00:01, 00:02, 00:03 missed: three runs decided, one starts
    assert series.poll(clocks.read()).start is not None
    events = series.cancel("closed")
    assert [(e.kind, e.reason, e.fire_time) for e in events] == [
        ("skipped", "closed", ts("2025-01-01T00:02")),
        ("skipped", "closed", ts("2025-01-01T00:03")), ("stopped", "closed", None)]


@pytest.mark.parametrize("overlap", ["skip", "coalesce", "queue"])
@pytest.mark.parametrize("on_error", ["continue", "stop"])
@pytest.mark.parametrize("failed", [False, True])
def test_a_run_ending_after_its_series_stopped_reports_no_fire_time(
        overlap: str, on_error: str, failed: bool) -> None:
    """Fire times that came due while the last run ran, after the stop: none is reported
    skipped or coalesced, no run is queued, no second "stopped"; only the run's own failure."""
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("s", Cron("* * * * *"), clocks.read(), overlap=overlap, on_error=on_error)
    clocks.advance(30)
    decision = series.poll(clocks.read())
    assert decision.start is not None and series.begin(clocks.read()) == (True, [])
    assert [e.kind for e in series.cancel()] == ["stopped"]
    clocks.advance(5 * 60)  # five fire times come due while the run goes on
    events = series.finished(clocks.read(), failed)
    assert [(e.kind, e.fire_time) for e in events] == (
        [("failed", ts("2025-01-01T00:01"))] if failed else [])
    assert series.poll(clocks.read()).start is None and series.next_wake(clocks.read()) is None


def test_a_run_decided_before_the_stop_does_not_begin_and_reports_nothing() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("s", Cron("* * * * *"), clocks.read(), catch_up="none", misfire_grace=0)
    clocks.advance(30)
    assert series.poll(clocks.read()).start is not None
    series.cancel()
    clocks.advance(90)  # it would be a misfire now: nothing says so once stopped
    assert series.begin(clocks.read()) == (False, [])
    assert series.running is None


def test_resuming_a_stopped_series_reports_nothing() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("s", Cron("* * * * *"), clocks.read())
    series.pause()
    series.cancel()
    clocks.advance(10 * 60)
    assert series.resume(clocks.read()) == [] and not series.paused


def test_pause_resume_skips_with_events() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    series = Series("p", Cron("* * * * *"), clocks.read())
    series.pause()
    assert series.poll(clocks.read()).start is None and series.next_wake(clocks.read()) is None
    clocks.advance(300)
    [event] = series.resume(clocks.read())
    assert (event.kind, event.reason, event.count) == ("skipped", "paused", 5)
    assert series.next_fire_times(2) == [ts("2025-01-01T00:06"), ts("2025-01-01T00:07")]
    assert series.cancel()[0].reason == "cancelled" and series.stopped
    assert series.poll(clocks.read()).start is None


@pytest.mark.parametrize(("kwargs", "error", "name"), [
    ({"misfire_grace": -1}, ValueError, "misfire_grace"),
    ({"misfire_grace": "1"}, TypeError, "misfire_grace"),
    ({"catch_up": "some"}, ValueError, "catch_up"),
    ({"overlap": 3}, TypeError, "overlap"),
    ({"on_error": "ignore"}, ValueError, "on_error"),
    ({"max_catch_up": 0}, ValueError, "max_catch_up"),
    ({"max_catch_up": 1.5}, TypeError, "max_catch_up"),
    ({"recheck": 0}, ValueError, "recheck"),
    ({"last_fire": float("nan")}, ValueError, "last_fire"),
])
def test_bad_series_arguments_name_the_argument(kwargs: dict[str, object],
                                                error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        Series("x", Cron("* * * * *"), Reading(0.0, 0.0), **kwargs)  # type: ignore[arg-type]


def test_listeners_are_isolated_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    hub = EventHub()
    seen: list[Event] = []

    def broken(event: Event) -> None:
        raise RuntimeError("listener bug")

    hub.add_listener(broken)
    hub.add_listener(seen.append)
    event = Event("s", "skipped", "overlap", 1.0, 2.0, 3, 5.0)
    hub.emit([event, Event("s", "late", "misfire", 6.0, 9.0)])
    assert seen[0] is event and len(seen) == 2
    assert "listener bug" in caplog.text
    assert hub.stats() == {"skipped": 1, "skipped.overlap": 1, "skipped_fire_times": 3,
                           "late": 1, "late.misfire": 1}
    hub.remove_listener(broken)
    with pytest.raises(KeyError, match="fn"):
        hub.remove_listener(broken)
    with pytest.raises(TypeError, match="fn"):
        hub.add_listener(42)  # type: ignore[arg-type]
