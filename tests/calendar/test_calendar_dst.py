"""The DST policy at each kind of clock change, one test per policy and change.

Changes (2025 unless said): New York and Berlin (northern, one hour, at 02:00
and 03:00 local), Santiago (southern, one hour, at midnight), Lord Howe
(southern, 30 minutes), Tehran (2021, one hour at midnight). Expected fire
times are written out by hand, as local times with their offsets.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pysched.calendar import Cron

UTC = timezone.utc


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


# (zone, expression, search from, {policy: the next two fire times})
GAPS = {
    "new_york_spring_forward": ("America/New_York", "30 2 * * *", "2025-03-08T12:00-05:00", {
        "shift": ["2025-03-09T03:00-04:00", "2025-03-10T02:30-04:00"],
        "skip": ["2025-03-10T02:30-04:00", "2025-03-11T02:30-04:00"]}),
    "berlin_spring_forward": ("Europe/Berlin", "30 2 * * *", "2025-03-29T12:00+01:00", {
        "shift": ["2025-03-30T03:00+02:00", "2025-03-31T02:30+02:00"],
        "skip": ["2025-03-31T02:30+02:00", "2025-04-01T02:30+02:00"]}),
    "santiago_spring_forward_southern_midnight": (
        "America/Santiago", "30 0 * * *", "2025-09-06T12:00-04:00", {
            "shift": ["2025-09-07T01:00-03:00", "2025-09-08T00:30-03:00"],
            "skip": ["2025-09-08T00:30-03:00", "2025-09-09T00:30-03:00"]}),
    "lord_howe_spring_forward_30_minutes": (
        "Australia/Lord_Howe", "15 2 * * *", "2025-10-04T12:00+10:30", {
            "shift": ["2025-10-05T02:30+11:00", "2025-10-06T02:15+11:00"],
            "skip": ["2025-10-06T02:15+11:00", "2025-10-07T02:15+11:00"]}),
    "tehran_spring_forward_midnight": ("Asia/Tehran", "0 0 * * *", "2021-03-21T12:00+03:30", {
        "shift": ["2021-03-22T01:00+04:30", "2021-03-23T00:00+04:30"],
        "skip": ["2021-03-23T00:00+04:30", "2021-03-24T00:00+04:30"]}),
}

OVERLAPS = {
    "new_york_fall_back": ("America/New_York", "30 1 * * *", "2025-11-01T12:00-04:00", {
        "first": ["2025-11-02T01:30-04:00", "2025-11-03T01:30-05:00"],
        "second": ["2025-11-02T01:30-05:00", "2025-11-03T01:30-05:00"],
        "both": ["2025-11-02T01:30-04:00", "2025-11-02T01:30-05:00"]}),
    "berlin_fall_back": ("Europe/Berlin", "30 2 * * *", "2025-10-25T12:00+02:00", {
        "first": ["2025-10-26T02:30+02:00", "2025-10-27T02:30+01:00"],
        "second": ["2025-10-26T02:30+01:00", "2025-10-27T02:30+01:00"],
        "both": ["2025-10-26T02:30+02:00", "2025-10-26T02:30+01:00"]}),
    "santiago_fall_back_southern_midnight": (
        "America/Santiago", "30 23 * * *", "2025-04-05T12:00-03:00", {
            "first": ["2025-04-05T23:30-03:00", "2025-04-06T23:30-04:00"],
            "second": ["2025-04-05T23:30-04:00", "2025-04-06T23:30-04:00"],
            "both": ["2025-04-05T23:30-03:00", "2025-04-05T23:30-04:00"]}),
    "lord_howe_fall_back_30_minutes": (
        "Australia/Lord_Howe", "45 1 * * *", "2025-04-05T12:00+11:00", {
            "first": ["2025-04-06T01:45+11:00", "2025-04-07T01:45+10:30"],
            "second": ["2025-04-06T01:45+10:30", "2025-04-07T01:45+10:30"],
            "both": ["2025-04-06T01:45+11:00", "2025-04-06T01:45+10:30"]}),
    "tehran_fall_back_midnight": ("Asia/Tehran", "30 23 * * *", "2021-09-21T12:00+04:30", {
        "first": ["2021-09-21T23:30+04:30", "2021-09-22T23:30+03:30"],
        "second": ["2021-09-21T23:30+03:30", "2021-09-22T23:30+03:30"],
        "both": ["2021-09-21T23:30+04:30", "2021-09-21T23:30+03:30"]}),
}


def _cases(table: dict[str, tuple[str, str, str, dict[str, list[str]]]]) -> list[object]:
    return [pytest.param(zone, expr, start, policy, expected, id=f"{name}-{policy}")
            for name, (zone, expr, start, by_policy) in table.items()
            for policy, expected in by_policy.items()]


def _two(cron: Cron, start: str) -> list[datetime]:
    fires = cron.preview(2, after=at(start))
    assert all(f.tzinfo is cron.tz for f in fires)
    return [f.astimezone(UTC) for f in fires]


@pytest.mark.parametrize(("zone", "expr", "start", "policy", "expected"), _cases(GAPS))
def test_nonexistent_time(zone: str, expr: str, start: str, policy: str,
                          expected: list[str]) -> None:
    for ambiguous in ("first", "second", "both"):  # no bearing on a gap
        cron = Cron(expr, tz=zone, nonexistent=policy, ambiguous=ambiguous)
        assert _two(cron, start) == [at(e) for e in expected]


@pytest.mark.parametrize(("zone", "expr", "start", "policy", "expected"), _cases(OVERLAPS))
def test_ambiguous_time(zone: str, expr: str, start: str, policy: str,
                        expected: list[str]) -> None:
    for nonexistent in ("shift", "skip"):  # no bearing on an overlap
        cron = Cron(expr, tz=zone, nonexistent=nonexistent, ambiguous=policy)
        assert _two(cron, start) == [at(e) for e in expected]


def test_shift_fires_once_for_all_the_times_in_one_gap() -> None:
    cron = Cron("0,20,40 2 * * *", tz="America/New_York")
    assert [f.astimezone(UTC) for f in cron.preview(2, after=at("2025-03-09T01:00-05:00"))] == [
        at("2025-03-09T03:00-04:00"), at("2025-03-10T02:00-04:00")]


def test_a_search_from_inside_the_first_pass_finds_the_second_pass() -> None:
    cron = Cron("15,45 1 * * *", tz="America/New_York", ambiguous="both")
    after = at("2025-11-02T01:30-04:00")
    assert [f.astimezone(UTC) for f in cron.preview(4, after=after)] == [
        at("2025-11-02T01:45-04:00"), at("2025-11-02T01:15-05:00"),
        at("2025-11-02T01:45-05:00"), at("2025-11-03T01:15-05:00")]


# -- fixed-interval expressions ------------------------------------------------------------

@pytest.mark.parametrize(("expr", "period"), [
    ("* * * * *", 60), ("*/30 * * * *", 1800), ("5,35 * * * *", 1800), ("0 * * * *", 3600),
    ("@hourly", 3600), ("*/10 * * * * *", 10), ("0 */2 * * *", 7200), ("30 */3 * * *", 10800),
    ("0 0,12 * * *", 43200), ("*/15 */1 * * *", 900),
    ("30 2 * * *", None), ("@daily", None), ("*/7 * * * *", None), ("0,10 * * * *", None),
    ("*/30 9-17 * * *", None), ("*/30 * * * MON", None), ("*/30 * 1 * *", None),
    ("*/30 * * 6 *", None), ("0 */5 * * *", None), ("0,30 */2 * * *", None),
])
def test_which_expressions_are_fixed_interval(expr: str, period: int | None) -> None:
    assert Cron(expr).period == period


@pytest.mark.parametrize("nonexistent", ["shift", "skip"])
@pytest.mark.parametrize("ambiguous", ["first", "second", "both"])
def test_half_hourly_follows_elapsed_time_whatever_the_policy(nonexistent: str,
                                                              ambiguous: str) -> None:
    cron = Cron("*/30 * * * *", tz="America/New_York", nonexistent=nonexistent,
                ambiguous=ambiguous)
    for start in ("2025-03-09T00:00-05:00", "2025-11-02T00:00-04:00"):
        fires = [f.timestamp() for f in cron.preview(12, after=at(start))]
        assert [b - a for a, b in zip(fires, fires[1:], strict=False)] == [1800.0] * 11


def test_half_hourly_follows_elapsed_time_across_lord_howes_30_minute_changes() -> None:
    cron = Cron("*/30 * * * *", tz="Australia/Lord_Howe")
    for start in ("2025-04-05T23:00+11:00", "2025-10-04T23:00+10:30"):
        fires = [f.timestamp() for f in cron.preview(12, after=at(start))]
        assert [b - a for a, b in zip(fires, fires[1:], strict=False)] == [1800.0] * 11


def test_hourly_at_a_30_minute_change_follows_the_policy() -> None:
    # An hour does not divide Lord Howe's 30-minute change: 02:00 on 5 Oct 2025
    # does not exist, 01:00 and 03:00 exist once.
    start = at("2025-10-05T00:30+10:30")
    shift = Cron("0 * * * *", tz="Australia/Lord_Howe")
    skip = Cron("0 * * * *", tz="Australia/Lord_Howe", nonexistent="skip")
    assert [f.astimezone(UTC) for f in shift.preview(3, after=start)] == [
        at("2025-10-05T01:00+10:30"), at("2025-10-05T02:30+11:00"), at("2025-10-05T03:00+11:00")]
    assert [f.astimezone(UTC) for f in skip.preview(2, after=start)] == [
        at("2025-10-05T01:00+10:30"), at("2025-10-05T03:00+11:00")]


def test_two_hourly_at_a_one_hour_change_follows_the_policy() -> None:
    # A period of two hours cannot keep both its even hours and two hours of
    # elapsed time across a one-hour change: the policy decides, so each even
    # hour fires once ("shift", "first").
    cron = Cron("0 */2 * * *", tz="Europe/Berlin")
    assert [f.astimezone(UTC) for f in cron.preview(3, after=at("2025-03-30T00:30+01:00"))] == [
        at("2025-03-30T03:00+02:00"), at("2025-03-30T04:00+02:00"), at("2025-03-30T06:00+02:00")]
    assert [f.astimezone(UTC) for f in cron.preview(3, after=at("2025-10-26T00:30+02:00"))] == [
        at("2025-10-26T02:00+02:00"), at("2025-10-26T04:00+01:00"), at("2025-10-26T06:00+01:00")]
    both = Cron("0 */2 * * *", tz="Europe/Berlin", ambiguous="both")
    assert [f.astimezone(UTC) for f in both.preview(3, after=at("2025-10-26T00:30+02:00"))] == [
        at("2025-10-26T02:00+02:00"), at("2025-10-26T02:00+01:00"), at("2025-10-26T04:00+01:00")]
