"""ThreadPoolScheduler.schedule_recurring on a FakeClock and a wall clock moved by hand.

The wall clock reads W0 + the fake clock + ``offset`` (set to jump it). After
``clock.wait_for_sleeper(t)`` the pool's next wake-up is pending for ``t``.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

import pytest

from pysched import Cron, Every, SchedulerFull, ThreadPoolScheduler
from pysched.calendar import Event, current_fire

from support.pool import WAIT

W0 = datetime(2025, 1, 1, 0, 0, 30, tzinfo=timezone.utc).timestamp()
MINUTE = 60.0


class Wall:
    def __init__(self, clock):
        self.clock = clock
        self.offset = 0.0
        self.broken: object = None  # an exception to raise, or a reading to return

    def __call__(self):
        if isinstance(self.broken, BaseException):
            raise self.broken
        if self.broken is not None:
            return self.broken
        return W0 + self.clock() + self.offset


class Runs:
    def __init__(self, wall, fail=False):
        self.wall = wall
        self.fail = fail
        self.at: list[float] = []
        self.changed = threading.Condition()

    def __call__(self, *args):
        with self.changed:
            self.at.append(self.wall())
            self.changed.notify_all()
        if self.fail:
            raise RuntimeError("run failed")

    def wait_for(self, count):
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.at) >= count, WAIT)


@pytest.fixture
def setup(make_pool, clock):
    wall = Wall(clock)
    pool = make_pool(wall_clock=wall)
    events: list[Event] = []
    pool.add_listener(events.append)
    return pool, wall, events


def test_a_cron_series_fires_on_the_wall_clock(setup, clock):
    pool, wall, events = setup
    runs = Runs(wall)
    handle = pool.schedule_recurring("job", Cron("* * * * *"), 0, runs)
    assert [f.timestamp() for f in handle.next_fire_times(2)] == [W0 + 30, W0 + 90]
    for k in range(3):
        clock.wait_for_sleeper(30.0 + MINUTE * k)
        clock.advance(30.0 if k == 0 else MINUTE)
        runs.wait_for(k + 1)
    assert runs.at == [W0 + 30, W0 + 90, W0 + 150]
    assert events == [] and pool.stats()["series_events"] == {}
    assert handle.cancel() and handle.cancelled and not handle.cancel()
    assert [(e.kind, e.reason) for e in events] == [("stopped", "cancelled")]
    other = pool.schedule_recurring("other", Every(5), 0, runs)
    pool.close()
    assert other.cancelled
    assert [(e.series, e.kind, e.reason) for e in events][-1] == ("other", "stopped", "closed")


def test_a_run_knows_its_fire_time(setup, clock):
    pool, wall, events = setup
    seen = []
    pool.schedule_recurring("job", Cron("* * * * *"), 0, lambda: seen.append(current_fire()))
    clock.wait_for_sleeper(30.0)
    clock.advance(30.0)
    clock.wait_for_sleeper(90.0)
    assert [(f.fire_time, f.lateness, f.count) for f in seen] == [(W0 + 30, 0.0, 1)]
    assert current_fire() is None


def test_wall_clock_set_back_never_fires_a_fire_time_twice(setup, clock):
    pool, wall, events = setup
    runs = Runs(wall)
    pool.schedule_recurring("job", Cron("* * * * *"), 0, runs)
    clock.wait_for_sleeper(30.0)
    clock.advance(30.0)
    runs.wait_for(1)  # 00:01
    clock.wait_for_sleeper(90.0)
    wall.offset = -3600.0  # 00:01:00 -> 23:01:00
    clock.advance(MINUTE)  # the wake-up sees the jump; 00:02 is an hour away again
    for k in range(60):  # it looks every minute of the pool's clock
        clock.wait_for_sleeper(150.0 + MINUTE * k)
        assert len(runs.at) == 1
        clock.advance(MINUTE)
    runs.wait_for(2)
    assert runs.at == [W0 + 30, W0 + 90]  # 00:01, then 00:02 when the wall clock reads it
    assert [(e.kind, e.reason) for e in events] == [("clock_jump", "set_back")]


def test_wall_clock_set_forward_catches_up_with_events(setup, clock):
    pool, wall, events = setup
    runs = Runs(wall)
    pool.schedule_recurring("job", Cron("0 * * * *"), 0, runs, catch_up="latest")
    clock.wait_for_sleeper(60.0)  # asleep for a minute at most: it rechecks the wall clock
    wall.offset = 3 * 3600.0  # a suspend: the wall clock is three hours on
    clock.advance(60.0)
    runs.wait_for(1)
    assert runs.at == [W0 + 3 * 3600 + 60]  # at 03:01:30, one run for 01:00, 02:00, 03:00
    kinds = [(e.kind, e.reason, e.count) for e in events]
    assert kinds == [("clock_jump", "set_forward", 0), ("coalesced", "clock_jump", 2),
                     ("late", "clock_jump", 3)]
    stats = pool.stats()["series_events"]
    assert stats["late.clock_jump"] == 1 and stats["coalesced_fire_times"] == 2


def test_an_interval_series_keeps_to_the_pools_clock(setup, clock):
    pool, wall, events = setup
    runs = Runs(clock)
    handle = pool.schedule_recurring("tick", Every(10), 0, runs)
    for k in range(3):
        clock.wait_for_sleeper(10.0 * (k + 1))
        wall.offset += 5000.0 * (-1) ** k  # the wall clock jumps about: no matter
        clock.advance(10.0)
        runs.wait_for(k + 1)
    assert runs.at == [10.0, 20.0, 30.0]
    assert [e.kind for e in events] == ["clock_jump"] * len(events)
    handle.pause()
    assert handle.paused
    clock.wait_for_sleeper(40.0)
    clock.advance(10.0)  # the wake-up at 40 finds it paused: it looks again a second later
    clock.wait_for_sleeper(41.0)
    clock.advance(14.0)  # 54: the wake-up at 41 ran late, so the next look is at 55
    clock.wait_for_sleeper(55.0)
    handle.resume()  # 40 and 50 came due while paused
    assert (events[-1].kind, events[-1].reason, events[-1].count) == ("skipped", "paused", 2)
    clock.advance(1.0)
    clock.wait_for_sleeper(60.0)
    clock.advance(5.0)
    runs.wait_for(4)
    assert runs.at == [10.0, 20.0, 30.0, 60.0]


def test_replacing_by_id_replaces_the_whole_series(setup, clock):
    pool, wall, events = setup
    first = pool.schedule_recurring("job", Cron("* * * * *"), 0, Runs(wall))
    runs = Runs(wall)
    second = pool.schedule_recurring("job", Every(5), 0, runs, ("arg",))
    assert first.cancelled and first.future.cancelled() and not second.cancelled
    assert not first.cancel()
    assert [(e.series, e.kind, e.reason) for e in events] == [("job", "stopped", "replaced")]
    clock.wait_for_sleeper(5.0)
    clock.advance(5.0)
    runs.wait_for(1)
    assert second.next_fire_times(1) == [datetime.fromtimestamp(W0 + 10, timezone.utc)]


def test_on_error_stop_fails_the_series_future(setup, clock):
    pool, wall, events = setup
    handle = pool.schedule_recurring("job", Every(5), 0, Runs(clock, fail=True),
                                     on_error="stop")
    clock.wait_for_sleeper(5.0)
    clock.advance(5.0)
    with pytest.raises(RuntimeError, match="run failed"):
        handle.future.result(WAIT)
    assert handle.cancelled and [(e.kind, e.reason) for e in events] == [
        ("failed", "error"), ("stopped", "error")]


def test_pause_and_resume_do_nothing_once_the_series_ended(setup, clock):
    pool, wall, events = setup
    handle = pool.schedule_recurring("tick", Every(10), 0, Runs(clock))
    handle.pause()
    assert handle.cancel() and handle.cancelled
    clock.advance(35.0)  # 10, 20 and 30 pass after the series ended
    handle.resume()  # no fire time was skipped for being paused: the series had ended
    assert [(e.kind, e.reason) for e in events] == [("stopped", "cancelled")]
    other = pool.schedule_recurring("other", Every(10), 0, Runs(clock))
    assert other.cancel()
    other.pause()
    assert not other.paused and repr(other) == "<SeriesHandle 'other' cancelled>"


def test_a_series_the_pool_ends_says_so_in_its_event(make_pool, clock):
    pool = make_pool(max_pending=1, wall_clock=Wall(clock))
    events: list[Event] = []
    pool.add_listener(events.append)

    def fill():  # takes the only pending place while the series' wake-up runs
        pool.schedule("other", 1000.0, 0, print)

    handle = pool.schedule_recurring("tick", Every(10), 0, fill)
    clock.wait_for_sleeper(10.0)
    clock.advance(10.0)
    with pytest.raises(SchedulerFull):
        handle.future.result(WAIT)
    assert [(e.kind, e.reason) for e in events] == [("stopped", "error")]


@pytest.mark.parametrize(("kwargs", "error", "name"), [
    ({"trigger": "* * * * *"}, TypeError, "trigger"),
    ({"catch_up": "some"}, ValueError, "catch_up"),
    ({"overlap": "parallel"}, ValueError, "overlap"),
    ({"misfire_grace": -1}, ValueError, "misfire_grace"),
    ({"priority": 1.5}, TypeError, "priority"),
    ({"fn": 3}, TypeError, "fn"),
    ({"args": 5}, TypeError, "args"),
])
def test_bad_arguments_name_the_argument_and_change_nothing(setup, kwargs, error, name):
    pool, wall, events = setup
    call = {"task_id": "job", "trigger": Every(5), "priority": 0, "fn": print, **kwargs}
    with pytest.raises(error, match=name):
        pool.schedule_recurring(**call)
    assert pool.stats()["pending"] == 0


def test_stress_many_fast_series_on_real_clocks(impl):
    """Real threads and clocks: 40 series every 2-7 ms for a fraction of a second, four
    workers. Invariants only: a series never runs twice at once, and its runs plus
    the fire times its events skipped or coalesced are exactly its fire times so far."""
    pool = ThreadPoolScheduler(4, _core_factory=impl.Scheduler)
    events: list[Event] = []
    lock = threading.Lock()
    pool.add_listener(events.append)
    active: dict[int, int] = {}
    runs: dict[int, int] = {}
    overlapped: list[int] = []

    def body(i):
        with lock:
            active[i] = active.get(i, 0) + 1
            if active[i] > 1:
                overlapped.append(i)
            runs[i] = runs.get(i, 0) + 1
        time.sleep(0.001 * (i % 3))
        with lock:
            active[i] -= 1

    handles = [pool.schedule_recurring(i, Every(0.002 + 0.001 * (i % 6)), 0, body, (i,),
                                       catch_up=("none", "latest", "all")[i % 3],
                                       overlap=("skip", "coalesce", "queue")[i % 3],
                                       misfire_grace=0.003)
               for i in range(40)]
    time.sleep(0.4)
    for handle in handles:
        handle.pause()  # nothing starts from here on
    time.sleep(0.05)
    pool.close(wait=True, timeout=WAIT)
    assert not overlapped
    for i, handle in enumerate(handles):
        series = handle._series
        grid = series._seq
        fires = []
        fire = grid.first()
        while fire is not None and series.last_fire is not None and fire <= series.last_fire:
            fires.append(fire)
            fire = grid.next_fire(fire)
        dropped = sum(e.count for e in events if e.series == i
                      and e.kind in ("skipped", "coalesced"))
        assert series.stopped and not series._ready
        assert runs.get(i, 0) + dropped == len(fires), i


def test_wake_ups_that_run_nothing_are_not_completed_tasks(setup, clock):
    """A paused series looks every second whether it was resumed: those wake-ups ran no
    function, so stats() counts them apart from the user's completed tasks."""
    from support.pool import accounted

    pool, wall, events = setup
    runs = Runs(wall)
    handle = pool.schedule_recurring("tick", Every(10), 0, runs)
    clock.wait_for_sleeper(10.0)
    clock.advance(10.0)
    runs.wait_for(1)
    clock.wait_for_sleeper(20.0)  # the run at 10 has ended: its next wake-up is pending
    handle.pause()
    for t in (20.0, 21.0, 22.0):  # the wake-up due at 20 finds it paused; it looks each second
        clock.wait_for_sleeper(t)
        clock.advance(t - clock())
    clock.wait_for_sleeper(23.0)
    stats = pool.stats()
    assert (stats["completed"], stats["idle_wakeups"]) == (1, 3)
    assert stats["scheduled"] == accounted(stats)
    assert runs.at == [W0 + 10.0]


def test_the_pool_returns_the_same_handle_class_as_the_asyncio_scheduler(setup):
    from pysched.calendar import SeriesHandle

    pool, wall, events = setup
    handle = pool.schedule_recurring("tick", Every(10), 0, print)
    assert type(handle) is SeriesHandle and handle.task_id == handle.series_id == "tick"
    assert handle.future is not None and not handle.future.done()


def test_a_task_id_is_one_thing_for_one_shots_and_series(setup, clock):
    """A one-shot of a series' id replaces the whole series; a series replaces the id's
    pending one-shot; cancel(task_id) ends a series. As in AsyncScheduler and the durable one."""
    pool, wall, events = setup
    handle = pool.schedule_recurring("job", Every(10), 0, print)
    once = pool.schedule_in("job", 5.0, 0, str.upper, ("once",))
    assert handle.cancelled and handle.future.cancel_reason == "replaced"
    clock.advance(5.0)
    assert once.result(WAIT) == "ONCE"
    pending = pool.schedule_in("other", 50.0, 0, print)
    series = pool.schedule_recurring("other", Every(10), 0, print)
    assert pending.cancelled() and pending.cancel_reason == "replaced" and not series.cancelled
    assert pool.cancel("other") and series.cancelled and not pool.cancel("other")
    assert [(e.series, e.kind, e.reason) for e in events if e.series is not None] == [
        ("job", "stopped", "replaced"), ("other", "stopped", "cancelled")]


def test_fire_times_skipped_while_paused_count_in_the_pool_stats(setup, clock):
    pool, wall, events = setup
    handle = pool.schedule_recurring("tick", Every(10), 0, Runs(wall))
    handle.pause()
    clock.wait_for_sleeper(10.0)
    clock.advance(35.0)  # 10, 20 and 30 come due while paused
    clock.wait_for_sleeper(36.0)  # the wake-up at 35 found it paused: it looks again at 36
    handle.resume()
    assert [(e.kind, e.reason, e.count) for e in events if e.series == "tick"] == [
        ("skipped", "paused", 3)]
    clock.advance(1.0)
    clock.wait_for_sleeper(40.0)  # the wake-up after the resume hands the count to the pool
    assert pool.stats()["skipped"] == 3
