"""SeriesBook: the same decisions as polling every series at every wake-up, at the cost of the
due ones only; replacement by id, pause, resume, cancel."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysched.calendar import Cron, Every, Series, SeriesHandle
from pysched.calendar import series as series_module

from support.calendar_driver import BookDriver, Driver, FakeClocks, ts
from support.examples import examples

SPECS = [
    lambda: Cron("*/5 * * * *"),
    lambda: Cron("0,20,25 * * * * *"),
    lambda: Cron("*/30 * * * *", tz="Europe/Berlin"),
    lambda: Cron("30 2 * * *", tz="Europe/Berlin", ambiguous="both"),
    lambda: Every(37),
    lambda: Every(300),
]

series_specs = st.lists(st.tuples(st.integers(0, len(SPECS) - 1),
                                  st.sampled_from(["none", "latest", "all"]),
                                  st.sampled_from(["skip", "coalesce", "queue"]),
                                  st.sampled_from([0.0, 30.0])),
                        min_size=1, max_size=6)
# Clock moves below ClockWatch's 1 s tolerance are not jumps: a book, which
# estimates a calendar series' wake-up once, may then wake up to a second late,
# where polling everything at every wake-up would not.
history = st.lists(st.tuples(st.sampled_from(["advance", "suspend", "set_wall"]),
                             st.one_of(st.just(0), st.integers(2, 5400),
                                       st.integers(-5400, -2))),
                   min_size=1, max_size=6)


def _build(specs: list[tuple[int, str, str, float]], clocks: FakeClocks) -> list[Series]:
    return [Series(i, SPECS[kind](), clocks.read(), catch_up=catch_up, overlap=overlap,
                   misfire_grace=grace)
            for i, (kind, catch_up, overlap, grace) in enumerate(specs)]


def _play(driver: Driver | BookDriver, clocks: FakeClocks,
          steps: list[tuple[str, int]]) -> None:
    for op, amount in steps:
        if op == "advance":
            driver.run_until_wall(clocks.wall + abs(amount))
        elif op == "suspend":
            clocks.suspend(abs(amount))
        else:
            clocks.set_wall(amount)
        driver.run_until_wall(clocks.wall + 60)


@settings(max_examples=examples(60), deadline=None)
@given(specs=series_specs, steps=history)
def test_the_book_decides_as_polling_every_series_does(
        specs: list[tuple[int, str, str, float]], steps: list[tuple[str, int]]) -> None:
    # 26 Oct 2025, 00:00 UTC: Berlin falls back at 01:00 UTC
    plain_clocks = FakeClocks(ts("2025-10-26T00:00"))
    plain = Driver(_build(specs, plain_clocks), plain_clocks)
    _play(plain, plain_clocks, steps)
    book_clocks = FakeClocks(ts("2025-10-26T00:00"))
    booked = BookDriver(book_clocks)
    for series in _build(specs, book_clocks):
        booked.book.add(series, book_clocks.read())
    _play(booked, book_clocks, steps)
    assert sorted(booked.runs, key=repr) == sorted(plain.runs, key=repr)
    assert Counter(map(repr, booked.events)) == Counter(map(repr, plain.events))


def test_a_wake_up_polls_only_the_due_series(monkeypatch: pytest.MonkeyPatch) -> None:
    polls = Counter[object]()
    poll = Series.poll

    def counting(self: Series, *args: object, **kwargs: object) -> object:
        polls[self.series_id] += 1
        return poll(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(series_module.Series, "poll", counting)
    clocks = FakeClocks(ts("2025-01-01T00:00"), mono=0.0)
    d = BookDriver(clocks)
    for i in range(600):
        d.book.add(Series(i, Every(60 * (1 + i % 60)), clocks.read()), clocks.read())
    for i in range(600, 900):  # calendar series: the book, not each of them, rechecks the clocks
        d.book.add(Series(i, Cron(f"{i % 60} * * * *"), clocks.read()), clocks.read())
    d.run_until_wall(ts("2025-01-01T02:00"))
    runs = Counter(sid for sid, _, _ in d.runs)
    assert all(runs[i] == 120 // (1 + i % 60) for i in range(600))
    assert all(runs[i] == 2 for i in range(600, 900))
    assert polls == runs  # one poll per run: nothing polled for nothing


@pytest.mark.slow
def test_a_hundred_thousand_interval_series_fire_on_time() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00"), mono=0.0)
    d = BookDriver(clocks)  # asserts that no run starts before its fire time
    for i in range(100_000):
        d.book.add(Series(i, Every(1 + i % 60), clocks.read()), clocks.read())
    d.run_until_wall(ts("2025-01-01T00:01"))
    runs = Counter(sid for sid, _, _ in d.runs)
    assert all(runs[i] == 60 // (1 + i % 60) for i in range(100_000))
    assert all(wall - ts("2025-01-01T00:00") == fire for _, fire, wall in d.runs)  # none late
    assert d.events == []


def test_replacing_pausing_resuming_cancelling() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"))
    d = BookDriver(clocks)
    d.book.add(Series("a", Cron("* * * * *"), clocks.read()), clocks.read())
    d.run_until_wall(ts("2025-01-01T00:01:30"))
    d.book.add(Series("a", Cron("*/2 * * * *"), clocks.read()), clocks.read())  # replaces
    d.book.flush()
    assert [(e.series, e.kind, e.reason) for e in d.events] == [("a", "stopped", "replaced")]
    d.run_until_wall(ts("2025-01-01T00:04:30"))
    assert [f for sid, f, _ in d.runs] == [ts("2025-01-01T00:01"), ts("2025-01-01T00:02"),
                                           ts("2025-01-01T00:04")]
    d.book.pause("a")
    d.run_until_wall(ts("2025-01-01T00:08:30"))
    assert d.runs[-1][1] == ts("2025-01-01T00:04")  # nothing while paused
    d.book.resume("a", clocks.read())
    d.book.flush()
    assert (d.events[-1].kind, d.events[-1].reason, d.events[-1].count) == ("skipped", "paused", 2)
    d.run_until_wall(ts("2025-01-01T00:10:30"))
    assert d.runs[-1][1] == ts("2025-01-01T00:10")
    assert d.book.cancel("a") and not d.book.cancel("a") and "a" not in d.book
    assert d.book.next_wake() is None
    with pytest.raises(KeyError):
        d.book.pause("a")


def test_handles_act_on_their_own_series_only() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"), mono=0.0)
    d = BookDriver(clocks)
    notified: list[int] = []
    lock = threading.Lock()

    def handle_for(series: Series) -> SeriesHandle:
        d.book.add(series, clocks.read())
        return SeriesHandle(d.book, series, read=clocks.read, lock=lock,
                            notify=lambda: notified.append(1))

    berlin = handle_for(Series("c", Cron("0 9 * * *", tz="Europe/Berlin"), clocks.read()))
    fires = berlin.next_fire_times(2)
    assert [str(f) for f in fires] == ["2025-01-01 09:00:00+01:00", "2025-01-02 09:00:00+01:00"]
    interval = handle_for(Series("e", Every(90), clocks.read()))
    assert interval.next_fire_times(2) == [datetime(2025, 1, 1, 0, 2, tzinfo=timezone.utc),
                                           datetime(2025, 1, 1, 0, 3, 30, tzinfo=timezone.utc)]
    interval.pause()
    assert interval.paused and repr(interval) == "<SeriesHandle 'e' paused>"
    d.run_until_wall(ts("2025-01-01T00:05"))
    assert not any(sid == "e" for sid, _, _ in d.runs)
    interval.resume()
    assert not interval.paused and notified == [1]
    assert (d.events[-1].kind, d.events[-1].reason, d.events[-1].count) == ("skipped", "paused", 3)
    d.run_until_wall(ts("2025-01-01T00:06:30"))  # monotonic 360
    assert [f for sid, f, _ in d.runs if sid == "e"] == [360.0]
    # replaced by id: the old handle no longer reaches the new series
    replacement = handle_for(Series("e", Every(10), clocks.read()))
    assert interval.cancelled and interval.next_fire_times(3) == []
    assert not interval.cancel()
    interval.pause()
    assert not replacement.paused and not replacement.cancelled
    assert replacement.cancel() and replacement.cancelled and not replacement.cancel()
    with pytest.raises(ValueError, match="n"):
        berlin.next_fire_times(-1)
    with pytest.raises(TypeError, match="n"):
        berlin.next_fire_times(None)  # type: ignore[arg-type]


class CheckedLock:
    """A lock that fails, rather than deadlocks, when its holder takes it again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None

    def __enter__(self) -> None:
        assert self._owner != threading.get_ident(), "the scheduler lock was taken twice"
        self._lock.acquire()
        self._owner = threading.get_ident()

    def __exit__(self, *exc: object) -> None:
        self._owner = None
        self._lock.release()


def test_a_listener_may_call_back_into_the_scheduler() -> None:
    clocks = FakeClocks(ts("2025-01-01T00:00:30"), mono=0.0)
    lock = CheckedLock()
    d = BookDriver(clocks)
    series = Series("p", Cron("* * * * *"), clocks.read())
    d.book.add(series, clocks.read())
    handle = SeriesHandle(d.book, series, read=clocks.read, lock=lock)  # type: ignore[arg-type]
    d.book.hub.add_listener(lambda event: handle.cancel() if event.reason == "paused" else None)
    handle.pause()
    clocks.advance(180)
    handle.resume()  # its "paused" event reaches the listener after the lock is released
    assert handle.cancelled
    assert [(e.kind, e.reason) for e in d.events] == [("skipped", "paused"),
                                                      ("stopped", "cancelled")]
