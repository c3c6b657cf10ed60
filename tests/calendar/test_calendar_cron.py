"""Cron and Every: syntax, bad input, search bounds, preview and describe."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

import pysched
from pysched.calendar import Cron, Every, Reading
from pysched.calendar._cron_fields import CronFields

UTC = timezone.utc
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def nxt(expr: str, after: datetime = T0, **kwargs: object) -> datetime | None:
    return Cron(expr, **kwargs).next_after(after)  # type: ignore[arg-type]


def test_exported_from_the_package() -> None:
    assert pysched.Cron is Cron and pysched.Every is Every


@pytest.mark.parametrize(("expr", "expected"), [
    ("@hourly", datetime(2025, 1, 1, 1, tzinfo=UTC)),
    ("@daily", datetime(2025, 1, 2, tzinfo=UTC)),
    ("@midnight", datetime(2025, 1, 2, tzinfo=UTC)),
    ("@weekly", datetime(2025, 1, 5, tzinfo=UTC)),  # Sunday
    ("@monthly", datetime(2025, 2, 1, tzinfo=UTC)),
    ("@yearly", datetime(2026, 1, 1, tzinfo=UTC)),
    ("@ANNUALLY", datetime(2026, 1, 1, tzinfo=UTC)),
    ("30 5 * * * *", datetime(2025, 1, 1, 0, 5, 30, tzinfo=UTC)),  # leading seconds field
    ("0 0 * * L5", datetime(2025, 1, 31, tzinfo=UTC)),  # last Friday, croniter's spelling
    ("0 0 * * 5L", datetime(2025, 1, 31, tzinfo=UTC)),  # cronsim's
    ("0 0 LW * *", datetime(2025, 1, 31, tzinfo=UTC)),
    ("0 0 L 2 *", datetime(2025, 2, 28, tzinfo=UTC)),
    ("0 0 * * MON#2", datetime(2025, 1, 13, tzinfo=UTC)),
    ("0 0 13 * FRI", datetime(2025, 1, 3, tzinfo=UTC)),  # day-of-month OR day-of-week
    ("0 0 */13 * FRI", datetime(2025, 2, 14, tzinfo=UTC)),  # a starred field: AND
    ("0 12 * JAN-MAR sun", datetime(2025, 1, 5, 12, tzinfo=UTC)),
    ("0 0 29 2 *", datetime(2028, 2, 29, tzinfo=UTC)),
    # W: the weekday nearest the day, within its month
    ("0 0 15W * *", datetime(2025, 1, 15, tzinfo=UTC)),  # a Wednesday: itself
    ("0 0 15W 3 *", datetime(2025, 3, 14, tzinfo=UTC)),  # a Saturday: the Friday before
    ("0 0 15W 6 *", datetime(2025, 6, 16, tzinfo=UTC)),  # a Sunday: the Monday after
    ("0 0 1W 3 *", datetime(2025, 3, 3, tzinfo=UTC)),  # Saturday the 1st: Monday the 3rd
    ("0 0 w1 2 *", datetime(2025, 2, 3, tzinfo=UTC)),  # croniter's spelling, any case
    ("0 0 30W 11 *", datetime(2025, 11, 28, tzinfo=UTC)),  # Sunday the 30th, the last day
    ("0 0 31W 4 *", datetime(2025, 4, 30, tzinfo=UTC)),  # past the end: the last day
    ("0 0 31W 2 *", datetime(2025, 2, 28, tzinfo=UTC)),
    ("0 0 15W * MON", datetime(2025, 1, 6, tzinfo=UTC)),  # OR with the day-of-week
    ("0 0 15W * */2", datetime(2025, 4, 15, tzinfo=UTC)),  # a starred day-of-week: AND
])
def test_syntax(expr: str, expected: datetime) -> None:
    assert nxt(expr) == expected


@pytest.mark.parametrize(("expr", "pointer"), [
    ("61 * * * *", "field 1 (minute) '61'"),
    ("* 24 * * *", "field 2 (hour) '24'"),
    ("* * 0 * *", "field 3 (day-of-month) '0'"),
    ("* * * 13 *", "field 4 (month) '13'"),
    ("* * * * 8", "field 5 (day-of-week) '8'"),
    ("60 * * * * *", "field 1 (second) '60'"),
    ("0 61 * * * *", "field 2 (minute) '61'"),
    ("*/0 * * * *", "field 1 (minute) '*/0'"),
    ("5-2 * * * *", "field 1 (minute) '5-2'"),
    ("* * 15W,16 * *", "field 3 (day-of-month) '15W,16'"),  # W takes one day, as croniter's
    ("* * 1-5W * *", "field 3 (day-of-month) '1-5W'"),
    ("* * 15W/2 * *", "field 3 (day-of-month) '15W/2'"),
    ("* * 32W * *", "field 3 (day-of-month) '32W'"),
    ("* * 0W * *", "field 3 (day-of-month) '0W'"),
    ("* * W * *", "field 3 (day-of-month) 'W'"),
    ("* * WW * *", "field 3 (day-of-month) 'WW'"),
    ("* * * * 1W", "field 5 (day-of-week) '1W'"),
    ("* * * * MON#6", "field 5 (day-of-week) 'MON#6'"),
    ("0 0 30 2 *", "field 3 (day-of-month) '30'"),  # never matches
    ("* * * *", "4 fields"),
    ("* * * * * * *", "7 fields"),
    ("", "0 fields"),
    ("@often", "unknown macro"),
])
def test_malformed_expression_points_at_the_field(expr: str, pointer: str) -> None:
    with pytest.raises(ValueError, match="expr") as info:
        Cron(expr)
    assert pointer in str(info.value)


@pytest.mark.parametrize(("kwargs", "error", "name"), [
    ({"expr": 5}, TypeError, "expr"),
    ({"tz": "Mars/Olympus"}, ValueError, "tz"),
    ({"tz": 3}, TypeError, "tz"),
    ({"nonexistent": "later"}, ValueError, "nonexistent"),
    ({"ambiguous": "last"}, ValueError, "ambiguous"),
    ({"ambiguous": None}, TypeError, "ambiguous"),
])
def test_bad_arguments_name_the_argument(kwargs: dict[str, object], error: type[Exception],
                                         name: str) -> None:
    args = {"expr": "* * * * *", **kwargs}
    with pytest.raises(error, match=name):
        Cron(args.pop("expr"), **args)  # type: ignore[arg-type]


def test_next_after_refuses_naive_and_non_datetimes() -> None:
    cron = Cron("* * * * *")
    with pytest.raises(ValueError, match="dt"):
        cron.next_after(datetime(2025, 1, 1))
    with pytest.raises(TypeError, match="dt"):
        cron.next_after(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="after"):
        cron.preview(1, after=datetime(2025, 1, 1))
    with pytest.raises(ValueError, match="n"):
        cron.preview(-1, after=T0)
    with pytest.raises(TypeError, match="n"):
        cron.preview(1.0, after=T0)  # type: ignore[arg-type]


def test_next_after_is_strictly_after_and_in_the_triggers_zone() -> None:
    cron = Cron("0 9 * * *", tz="Europe/Berlin")
    berlin = ZoneInfo("Europe/Berlin")
    first = cron.next_after(datetime(2025, 1, 1, 8, 59, 59, 999999, tzinfo=berlin))
    assert first is not None and first.tzinfo is cron.tz
    assert (first.hour, first.day) == (9, 1)
    assert cron.next_after(first) == first + timedelta(days=1)
    # any zone in, the same instant out
    assert cron.next_after(first.astimezone(ZoneInfo("Asia/Tokyo"))) == first + timedelta(days=1)
    assert Cron("* * * * *", tz=timezone(timedelta(hours=5))).next_after(T0) == \
        T0 + timedelta(minutes=1)


def test_an_expression_matching_only_nonexistent_times_returns_none_within_the_horizon(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The second Sunday of March at 02:30 never exists in New York (DST starts then).
    cron = Cron("30 2 * 3 SUN#2", tz="America/New_York", nonexistent="skip")
    examined: list[datetime] = []
    matches_after = CronFields.matches_after

    def counting(self: CronFields, local: datetime) -> Iterator[datetime]:
        for m in matches_after(self, local):
            examined.append(m)
            yield m

    monkeypatch.setattr(CronFields, "matches_after", counting)
    assert cron.next_after(T0) is None
    # one match a year for 50 years, not a search to the end of the calendar
    assert len(examined) <= 52 and examined[-1].year <= 2076
    shifted = Cron("30 2 * 3 SUN#2", tz="America/New_York")
    assert shifted.next_after(T0) == datetime(2025, 3, 9, 7, tzinfo=UTC)


def test_the_end_of_the_calendar_is_none() -> None:
    assert Cron("0 0 1 1 *").next_after(datetime(9999, 6, 1, tzinfo=UTC)) is None
    kiritimati = Cron("* * * * *", tz="Pacific/Kiritimati")  # UTC+14
    assert kiritimati.next_after(datetime.max.replace(tzinfo=UTC)) is None
    with pytest.raises(ValueError, match="dt is too close to the start of the calendar"):
        kiritimati.next_after(datetime.min.replace(tzinfo=UTC))
    assert Cron("* * * * *").next_fire(datetime(9999, 12, 31, 23, 59, tzinfo=UTC).timestamp()) \
        is None


def test_next_fire_never_rounds_onto_a_fire_time() -> None:
    cron = Cron("* * * * *")
    fire = datetime(2025, 1, 1, 0, 1, tzinfo=UTC).timestamp()
    assert cron.next_fire(math.nextafter(fire, 0)) == fire
    assert cron.next_fire(fire) == fire + 60


def test_preview_and_describe() -> None:
    cron = Cron("0 9 * * MON-FRI", tz="America/New_York")
    fires = cron.preview(5, after=T0)
    assert [f.day for f in fires] == [1, 2, 3, 6, 7]
    assert all(f.hour == 9 for f in fires)
    assert len(cron.preview(3)) == 3  # from now
    text = cron.describe()
    assert "09:00" in text and "Monday through Friday" in text and "America/New_York" in text
    assert "first occurrence" in text and "runs when the clocks change" in text
    assert "UTC" in Cron("@hourly").describe()
    assert "every 30 min of elapsed time" in Cron("*/30 * * * *", tz="Europe/Berlin").describe()
    nearest = Cron("0 9 15W * *").describe()
    assert "15th day" in nearest and "nearest weekday" in nearest
    assert repr(cron).startswith("Cron('0 9 * * MON-FRI'")


def test_every_validation_names_the_argument() -> None:
    for bad, error in ((0, ValueError), (-1, ValueError), (float("nan"), ValueError),
                       (float("inf"), ValueError), ("5", TypeError), (None, TypeError),
                       (timedelta(0), ValueError)):
        with pytest.raises(error, match="seconds"):
            Every(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="start"):
        Every(5, start=datetime(2025, 1, 1))
    with pytest.raises(TypeError, match="start"):
        Every(5, start=1.0)  # type: ignore[arg-type]
    assert Every(timedelta(minutes=2)).seconds == 120.0
    with pytest.raises(TypeError, match="start_at"):
        Every(5, start_at="soon")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="start_at"):
        Every(5, start=datetime(2025, 1, 1, tzinfo=UTC), start_at=3.0)
    with pytest.raises(TypeError, match="fixed_delay"):
        Every(5, fixed_delay="yes")  # type: ignore[arg-type]
    assert "after the end of the previous run" in Every(5, fixed_delay=True).describe()
    assert repr(Every(5, start_at=2.0)) == "Every(5.0, start_at=2.0)"


def test_every_fire_times_are_multiples_of_the_interval_from_the_anchor() -> None:
    grid = Every(0.1).fires(Reading(wall=0.0, mono=10.0))
    fires = [grid.first()]
    for _ in range(1000):
        nxt_fire = grid.next_fire(fires[-1])
        assert nxt_fire is not None
        fires.append(nxt_fire)
    assert fires == [10.0 + k * 0.1 for k in range(1, 1002)]  # no accumulated rounding
    assert grid.next_fire(10.05) == 10.0 + 0.1
    started = Every(60, start=datetime(2025, 1, 1, 0, 1, tzinfo=UTC)).fires(
        Reading(wall=T0.timestamp(), mono=500.0))
    assert started.first() == 560.0  # the start itself is the first fire time
    assert "Every 60 s" in Every(60).describe()


def test_nearest_weekday_over_every_day_of_28_years() -> None:
    """nW: a weekday of the same month, and none in it nearer to day n (to the last day
    for an n past the end). No two weekdays are ever equally near, so that is the rule."""
    import calendar

    from pysched.calendar._cron_fields import nearest_weekday

    for year in range(2000, 2028):  # every weekday on every date of every month length
        for month in range(1, 13):
            last = calendar.monthrange(year, month)[1]
            weekdays = [d for d in range(1, last + 1) if calendar.weekday(year, month, d) < 5]
            for n in range(1, 32):
                day = nearest_weekday(year, month, n)
                target = min(n, last)
                assert day in weekdays, (year, month, n, day)
                assert abs(day - target) == min(abs(d - target) for d in weekdays)
