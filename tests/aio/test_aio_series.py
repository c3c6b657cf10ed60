"""AsyncScheduler.schedule_recurring: calendar and interval series on the event loop.

Most tests run on the virtual-time loop, whose clock (``loop.time()``) is the
monotonic one; the wall clock reads ``W0 + loop.time() + offset`` and a test
moves ``offset`` to set it back, forward, or to suspend the machine (the
monotonic clock stands still while the wall clock goes on). The last tests run
on asyncio's loop and uvloop, in real time, with short periods.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysched import Cron, Every
from pysched.aio.series import FireKey
from pysched.calendar import current_fire

from support.aio import VirtualTimeLoop, destroyed_pending, run, run_as_asyncio_run
from support.series_events import series_only

W0 = datetime(2026, 1, 1, 0, 0, 30, tzinfo=timezone.utc).timestamp()
MINUTE = 60.0
HOUR = 3600.0
request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


class Wall:
    """The fake wall clock: W0 at the loop's start, moved by ``offset``."""

    def __init__(self, start: float = W0) -> None:
        self.offset = 0.0
        self.start = start
        self.loop: asyncio.AbstractEventLoop | None = None
        self.base = 0.0

    def __call__(self) -> float:
        if self.loop is None:  # the scheduler reads it once when it is made
            self.loop = asyncio.get_running_loop()
            self.base = self.loop.time()
        return self.start + self.loop.time() - self.base + self.offset


class Runs:
    """A series' function: records (fire time, wall, loop time, request id) at each start."""

    def __init__(self, wall: Wall, *, coro: bool = True, sleep: float = 0.0) -> None:
        self.wall = wall
        self.coro = coro
        self.sleep = sleep
        self.starts: list[tuple[float, float, float, str]] = []

    def _record(self) -> None:
        fire = current_fire()
        assert fire is not None
        assert self.wall.loop is not None
        self.starts.append((fire.fire_time, self.wall(), self.wall.loop.time(), request_id.get()))

    def __call__(self):
        self._record()
        if not self.coro:
            return None
        return self._body()

    async def _body(self) -> None:
        await asyncio.sleep(self.sleep)

    @property
    def fires(self) -> list[float]:
        return [fire for fire, *_ in self.starts]


def at(hh: int, mm: int, day: int = 1) -> float:
    return datetime(2026, 1, day, hh, mm, tzinfo=timezone.utc).timestamp()


def on_virtual(main):
    return run(main, VirtualTimeLoop)


def test_an_every_series_fires_at_start_plus_k_periods_without_drift(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        runs = Runs(wall, sleep=3.3)  # each run takes a while: the next must not move
        t0 = asyncio.get_running_loop().time()
        s.schedule_recurring("tick", Every(7.1), 0, runs)
        await asyncio.sleep(7.1 * 40 + 1)
        await s.aclose()
        return t0, runs

    t0, runs = on_virtual(main)
    assert runs.fires == [t0 + k * 7.1 for k in range(1, 41)]
    assert [mono for _, _, mono, _ in runs.starts] == runs.fires  # started at its instant


def test_a_cron_series_fires_on_the_wall_clock_never_before_its_instant(make_scheduler):
    async def main():
        wall = Wall(start=at(0, 59) + 59.5)
        s = make_scheduler(wall_clock=wall)
        runs = Runs(wall, coro=False)
        handle = s.schedule_recurring("hourly", Cron("0 * * * *"), 0, runs)
        upcoming = handle.next_fire_times(3)
        await asyncio.sleep(3 * HOUR)
        await s.aclose()
        return runs, upcoming

    runs, upcoming = on_virtual(main)
    assert upcoming == [datetime(2026, 1, 1, h, tzinfo=timezone.utc) for h in (1, 2, 3)]
    assert runs.fires == [at(1, 0), at(2, 0), at(3, 0)]
    for fire, wall_then, _, _ in runs.starts:
        assert fire <= wall_then < fire + 1.0


def test_a_wall_clock_set_back_never_fires_a_fire_time_twice(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        events = []
        s.add_listener(series_only(events.append))
        runs = Runs(wall)
        s.schedule_recurring("ten", Cron("*/10 * * * *"), 0, runs)
        await asyncio.sleep(10 * MINUTE)  # runs 00:10
        wall.offset -= HOUR  # now 23:10 the day before
        await asyncio.sleep(2 * HOUR)
        await s.aclose()
        return runs, events, s.stats()["series_events"]

    runs, events, stats = on_virtual(main)
    assert len(set(runs.fires)) == len(runs.fires) == 7  # 00:10, then 00:20 .. 01:10
    assert runs.fires == sorted(runs.fires) and runs.fires[0] == at(0, 10)
    assert runs.fires[-1] == at(1, 10)
    assert all(fire <= wall_then for fire, wall_then, _, _ in runs.starts)
    jumps = [e for e in events if e.kind == "clock_jump"]
    assert [(e.reason, e.lateness) for e in jumps] == [("set_back", -HOUR)]
    assert stats["clock_jump.set_back"] == 1


def test_a_wall_clock_set_back_while_a_run_waits_for_a_slot_delays_it_to_its_instant(
        make_scheduler):
    async def main():
        wall = Wall(start=at(0, 9) + 30)
        s = make_scheduler(max_concurrency=1, wall_clock=wall)
        runs = Runs(wall)
        s.schedule_in("hog", 0, 0, asyncio.sleep, (60,))  # the only slot, until 00:10:30
        s.schedule_recurring("ten", Cron("*/10 * * * *"), 0, runs)
        await asyncio.sleep(45)  # 00:10:15: the fire time of 00:10 is decided and waits
        assert runs.starts == []
        wall.offset -= 30 * MINUTE  # 23:40:15 the day before
        await asyncio.sleep(31 * MINUTE)
        await s.aclose()
        return runs

    runs = on_virtual(main)
    assert runs.fires == [at(0, 10)]
    fire, wall_then, _, _ = runs.starts[0]
    assert fire <= wall_then < fire + 1.0  # it waited for its instant again


def suspended(make_scheduler, catch_up):
    """A series every 10 minutes that ran at 00:10, then a 3-hour suspend at 00:10:05."""
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        events = []
        s.add_listener(series_only(events.append))
        runs = Runs(wall)
        s.schedule_recurring("ten", Cron("*/10 * * * *"), 0, runs, catch_up=catch_up)
        await asyncio.sleep(10 * MINUTE - 25)
        assert runs.fires == [at(0, 10)]
        wall.offset += 3 * HOUR  # the monotonic clock stands still while suspended
        await asyncio.sleep(2 * MINUTE)  # woken by the book's next look at the clocks
        await s.aclose()
        return runs, [e for e in events if e.series == "ten" and e.kind != "stopped"], \
            [e for e in events if e.kind == "clock_jump"], s.stats()["series_events"]

    return on_virtual(main)


JUMPED = [at(0, 20) + k * 10 * MINUTE for k in range(18)]  # 00:20 .. 03:10


@pytest.mark.parametrize("catch_up", ["none", "latest", "all"])
def test_a_three_hour_suspend_follows_the_catch_up_policy_with_events(make_scheduler, catch_up):
    runs, events, jumps, stats = suspended(make_scheduler, catch_up)
    assert [(e.reason, e.lateness) for e in jumps] == [("set_forward", 3 * HOUR)]
    assert all(e.reason == "clock_jump" for e in events)
    if catch_up == "none":
        assert runs.fires == [at(0, 10)]
        assert [(e.kind, e.fire_time, e.count, e.last_fire_time) for e in events] == [
            ("skipped", JUMPED[0], 18, JUMPED[-1])]
        assert stats["skipped_fire_times"] == 18
    elif catch_up == "latest":
        assert runs.fires == [at(0, 10), JUMPED[-1]]
        assert [(e.kind, e.fire_time, e.count) for e in events] == [
            ("coalesced", JUMPED[0], 17), ("late", JUMPED[-1], 18)]
        assert stats["coalesced_fire_times"] == 17 and stats["late"] == 1
    else:
        assert runs.fires == [at(0, 10)] + JUMPED
        assert [(e.kind, e.fire_time) for e in events] == [("late", f) for f in JUMPED]
        assert stats["late.clock_jump"] == 18
    # every run after the wake-up started at or after its wall instant
    assert all(fire <= wall_then for fire, wall_then, _, _ in runs.starts)


def test_cancel_ends_the_series_and_says_so(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        events = []
        s.add_listener(series_only(events.append))
        runs = Runs(wall)
        handle = s.schedule_recurring("tick", Every(10), 0, runs)
        await asyncio.sleep(25)
        first = handle.cancel()
        again = handle.cancel()
        await asyncio.sleep(100)
        state = (first, again, handle.cancelled, handle.next_fire_times(2), s.stats())
        await s.aclose()
        return runs, events, state

    runs, events, (first, again, cancelled, upcoming, stats) = on_virtual(main)
    assert len(runs.fires) == 2 and first and not again and cancelled and upcoming == []
    assert [(e.kind, e.reason) for e in events] == [("stopped", "cancelled")]
    assert stats["pending"] == stats["running"] == 0


def test_a_replacement_by_task_id_replaces_the_whole_series(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        events = []
        s.add_listener(series_only(events.append))
        old, new = Runs(wall), Runs(wall)
        old_handle = s.schedule_recurring("job", Every(10), 0, old)
        await asyncio.sleep(15)
        new_handle = s.schedule_recurring("job", Cron("* * * * *"), 0, new)
        await asyncio.sleep(3 * MINUTE)
        state = (old_handle.cancelled, new_handle.cancelled, old_handle.cancel())
        await s.aclose()
        return old, new, events, state

    old, new, events, (old_gone, new_gone, cancelled_again) = on_virtual(main)
    assert len(old.fires) == 1 and old_gone and not cancelled_again
    assert new.fires == [at(0, 1), at(0, 2), at(0, 3)] and not new_gone
    assert [(e.kind, e.reason) for e in events] == [("stopped", "replaced"),
                                                     ("stopped", "closed")]


def test_pause_skips_what_comes_due_and_resume_goes_on_from_now(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        events = []
        s.add_listener(series_only(events.append))
        runs = Runs(wall)
        t0 = asyncio.get_running_loop().time()
        handle = s.schedule_recurring("tick", Every(10), 0, runs)
        await asyncio.sleep(15)
        handle.pause()
        paused = handle.paused
        await asyncio.sleep(30)  # 20, 30, 40 come due while paused
        handle.resume()
        await asyncio.sleep(20)
        await s.aclose()
        return t0, runs, events, paused

    t0, runs, events, paused = on_virtual(main)
    assert paused
    assert runs.fires == [t0 + 10, t0 + 50, t0 + 60]
    skipped = [(e.kind, e.reason, e.fire_time, e.count) for e in events if e.kind == "skipped"]
    assert skipped == [("skipped", "paused", t0 + 20, 3)]


def test_overlap_skip_with_a_slow_coroutine(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        events = []
        s.add_listener(series_only(events.append))
        runs = Runs(wall, sleep=25)  # longer than two periods
        t0 = asyncio.get_running_loop().time()
        s.schedule_recurring("slow", Every(10), 0, runs, overlap="skip")
        await asyncio.sleep(75)
        seen, stats = list(events), s.stats()["series_events"]
        await s.aclose()
        return t0, runs, seen, stats

    t0, runs, events, stats = on_virtual(main)
    assert runs.fires == [t0 + 10, t0 + 40, t0 + 70]
    skipped = [(e.reason, e.fire_time, e.count) for e in events if e.kind == "skipped"]
    assert skipped == [("overlap", t0 + 20, 2), ("overlap", t0 + 50, 2)]
    assert stats["skipped.overlap"] == 2 and stats["skipped_fire_times"] == 4


def test_a_failing_run_is_an_event_and_on_error_stop_ends_the_series(make_scheduler):
    def boom():
        raise ValueError("boom")

    async def main():
        s = make_scheduler(wall_clock=Wall())
        events = []
        s.add_listener(series_only(events.append))
        goes_on = s.schedule_recurring("goes-on", Every(10), 0, boom)
        stops = s.schedule_recurring("stops", Every(10), 0, boom, on_error="stop")
        await asyncio.sleep(35)
        state = (goes_on.cancelled, stops.cancelled)
        await s.aclose()
        return events, state

    events, (goes_on_ended, stops_ended) = on_virtual(main)
    assert not goes_on_ended and stops_ended
    failed = [(e.series, e.reason) for e in events if e.kind == "failed"]
    assert failed.count(("goes-on", "error")) == 3 and failed.count(("stops", "error")) == 1
    assert ("stops", "stopped", "error") in [(e.series, e.kind, e.reason) for e in events]


def test_a_run_waiting_for_a_slot_when_its_series_ends_is_reported(make_scheduler):
    async def main():
        s = make_scheduler(max_concurrency=1, wall_clock=Wall())
        events = []
        s.add_listener(series_only(events.append))
        runs = Runs(Wall())
        s.schedule_in("hog", 0, 0, asyncio.sleep, (60,))
        handle = s.schedule_recurring("tick", Every(10), 0, runs)
        await asyncio.sleep(15)  # its fire time of 10 waits for the slot
        handle.cancel()
        await asyncio.sleep(60)
        await s.aclose()
        return runs, events

    runs, events = on_virtual(main)
    assert runs.starts == []
    assert [(e.kind, e.reason, e.count) for e in events] == [
        ("stopped", "cancelled", 0), ("skipped", "cancelled", 1)]


def test_close_skips_a_run_not_started_and_stops_every_series(make_scheduler):
    async def main():
        s = make_scheduler(max_concurrency=1, wall_clock=Wall())
        events = []
        s.add_listener(series_only(events.append))
        s.schedule_in("hog", 0, 0, asyncio.sleep, (60,))
        s.schedule_recurring("a", Every(10), 0, Runs(Wall()))
        s.schedule_recurring("b", Cron("* * * * *"), 0, Runs(Wall()))
        await asyncio.sleep(15)
        await s.aclose()
        return events

    events = on_virtual(main)
    assert sorted((e.series, e.kind, e.reason) for e in events) == [
        ("a", "skipped", "closed"), ("a", "stopped", "closed"), ("b", "stopped", "closed")]


def test_bad_input_names_the_argument_and_adds_nothing(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        kept = Runs(wall)
        s.schedule_recurring(1, Every(10), 0, kept)  # a refused replacement leaves it be
        cases = [((1, "every 10", 0, print), TypeError, "trigger"),
                 ((1, Every(10), "high", print), TypeError, "priority"),
                 ((1, Every(10), 0, "print"), TypeError, "fn"),
                 (([], Every(10), 0, print), TypeError, "task_id")]
        for args, error, name in cases:
            with pytest.raises(error, match=name):
                s.schedule_recurring(*args)
        for option, value in [("catch_up", "some"), ("overlap", "never"), ("on_error", "x"),
                              ("misfire_grace", -1)]:
            with pytest.raises(ValueError, match=option):
                s.schedule_recurring(1, Every(10), 0, print, **{option: value})
        await asyncio.sleep(105)
        stats = s.stats()
        await s.aclose()
        return stats, kept

    stats, kept = on_virtual(main)
    assert len(kept.fires) == 10
    assert stats["scheduled"] == 10 and stats["series_events"] == {}
    with pytest.raises(TypeError, match="wall_clock"):
        make_scheduler(wall_clock="time")


def test_a_one_shot_of_a_series_id_replaces_the_whole_series(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        events = []
        s.add_listener(series_only(events.append))
        runs = Runs(wall)
        handle = s.schedule_recurring("job", Every(10), 0, runs)
        await asyncio.sleep(15)
        once = s.schedule_in("job", 15, 0, str.upper, ("once",))
        await asyncio.sleep(25)
        result = await once
        state = handle.cancelled, s.stats()
        await s.aclose()
        return runs, result, events, state

    runs, result, events, (cancelled, stats) = on_virtual(main)
    assert result == "ONCE" and len(runs.fires) == 1 and cancelled
    assert [(e.kind, e.reason) for e in events] == [("stopped", "replaced")]
    assert FireKey("job") != "job"


def test_a_series_replaces_the_one_shot_of_its_id_that_has_not_started(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        once = s.schedule_in("job", 15, 0, str.upper, ("once",))
        runs = Runs(wall)
        s.schedule_recurring("job", Every(10), 0, runs)
        await asyncio.sleep(25)
        stats = s.stats()
        await s.aclose()
        return runs, once, stats

    runs, once, stats = on_virtual(main)
    assert once.cancelled() and once.cancel_reason == "replaced"
    assert len(runs.fires) == 2 and stats["replaced"] == 1


def test_cancel_by_task_id_ends_the_series(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        events = []
        s.add_listener(series_only(events.append))
        runs = Runs(wall)
        handle = s.schedule_recurring("job", Every(10), 0, runs)
        await asyncio.sleep(15)
        found = s.cancel("job"), s.cancel("job")
        await asyncio.sleep(30)
        state = handle.cancelled
        await s.aclose()
        return runs, events, found, state

    runs, events, found, cancelled = on_virtual(main)
    assert found == (True, False) and cancelled and len(runs.fires) == 1
    assert [(e.kind, e.reason) for e in events] == [("stopped", "cancelled")]


# -- real loops: asyncio's and uvloop ---------------------------------------------------------

@pytest.mark.parametrize("coro", [True, False], ids=["coroutine", "callable"])
def test_runs_see_the_callers_context_and_their_fire_on_each_loop(make_scheduler, loop_factory,
                                                                  coro):
    async def main():
        wall = Wall(start=at(0, 0) + 59.97)  # the cron's next second is 30 ms away
        s = make_scheduler(wall_clock=wall)
        every, cron = Runs(wall, coro=coro), Runs(wall, coro=coro)
        done = asyncio.Event()
        s.add_listener(lambda event: None)
        request_id.set("caller")
        s.schedule_recurring("every", Every(0.01), 0, every)
        s.schedule_recurring("cron", Cron("* * * * * *"), 0, cron)  # every second
        request_id.set("changed later")

        async def until_enough():
            while len(every.starts) < 3 or not cron.starts:
                await asyncio.sleep(0.005)
            done.set()

        await until_enough()
        await s.aclose()
        return every, cron

    every, cron = run(main, loop_factory)
    assert {rid for *_, rid in every.starts + cron.starts} == {"caller"}
    fires = every.fires[:3]
    assert fires == sorted(set(fires))
    assert all(fire <= mono for fire, _, mono, _ in every.starts)  # never early
    fire, wall_then, _, _ = cron.starts[0]
    assert fire == at(0, 1) or fire > at(0, 1) and fire % 1 == 0  # later: the machine stalled
    assert fire <= wall_then


def test_a_coroutine_run_released_before_its_first_step_runs_nothing(make_scheduler):
    async def main():
        s = make_scheduler(wall_clock=Wall())
        events = []
        s.add_listener(series_only(events.append))
        ran = []

        async def tick():
            ran.append(current_fire())

        t0 = asyncio.get_running_loop().time()
        s.schedule_recurring("tick", Every(10), 1, tick)
        # due with the fire time, after it (a lower priority): its Task exists, unstarted
        s.schedule("closer", t0 + 10, 0, s.close)
        await asyncio.sleep(30)
        await s.aclose()
        return ran, events

    ran, events = on_virtual(main)
    assert ran == []
    assert sorted((e.kind, e.reason) for e in events) == [("skipped", "closed"),
                                                          ("stopped", "closed")]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager tasks came in Python 3.12")
def test_an_eager_task_factory_runs_each_fire_once_in_the_callers_context(make_scheduler):
    def new_loop():
        loop = VirtualTimeLoop()
        loop.set_task_factory(asyncio.eager_task_factory)
        return loop

    async def main():
        wall = Wall(start=at(0, 0) + 30)
        s = make_scheduler(wall_clock=wall)
        seen = []

        async def tick():
            seen.append((current_fire().fire_time, wall(), request_id.get()))
            await asyncio.sleep(1)

        request_id.set("caller")
        s.schedule_recurring("cron", Cron("* * * * *"), 0, tick)
        await asyncio.sleep(3 * MINUTE)
        await s.aclose()
        return seen

    seen = run(main, new_loop)
    assert [fire for fire, _, _ in seen] == [at(0, 1), at(0, 2), at(0, 3)]
    assert all(fire <= wall_then and rid == "caller" for fire, wall_then, rid in seen)


@pytest.mark.parametrize("action", ["cancel", "replace"])
def test_a_listener_may_cancel_or_replace_the_series_whose_run_was_just_decided(make_scheduler,
                                                                               action):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        events = []
        old, new = Runs(wall), Runs(wall)
        handles = []

        def listener(event):
            events.append(event)
            if event.kind == "late" and event.series == "ten" and len(handles) == 1:
                if action == "cancel":
                    handles[0].cancel()
                else:
                    handles.append(s.schedule_recurring("ten", Cron("0 * * * *"), 0, new))

        s.add_listener(series_only(listener))
        handles.append(s.schedule_recurring("ten", Cron("*/10 * * * *"), 0, old))
        await asyncio.sleep(10 * MINUTE - 25)
        wall.offset += HOUR  # set forward: the late run and its event come in one wake-up
        await asyncio.sleep(2 * MINUTE)
        await s.aclose()
        return old, new, events

    old, new, events = on_virtual(main)
    assert old.fires == [at(0, 10)] and new.fires == []
    reason = "cancelled" if action == "cancel" else "replaced"
    late = [e for e in events if e.kind == "late"]
    assert [(e.reason, e.fire_time, e.count) for e in late] == [("clock_jump", at(1, 10), 6)]
    assert ("skipped", reason, at(1, 10)) in [(e.kind, e.reason, e.fire_time) for e in events]


def test_a_run_whose_series_a_listener_cancels_as_it_begins_does_not_start(make_scheduler):
    async def main():
        wall = Wall()
        s = make_scheduler(max_concurrency=1, wall_clock=wall)
        events = []
        runs = Runs(wall)
        handles = []

        def listener(event):
            events.append(event)
            if event.kind == "late":  # said by begin(): the run waited for a slot too long
                handles[0].cancel()

        s.add_listener(series_only(listener))
        s.schedule_in("hog", 0, 0, asyncio.sleep, (15,))
        handles.append(s.schedule_recurring("tick", Every(10), 0, runs))
        await asyncio.sleep(30)
        await s.aclose()
        return runs, events

    runs, events = on_virtual(main)
    assert runs.starts == []
    assert [(e.kind, e.reason) for e in events] == [
        ("late", "misfire"), ("stopped", "cancelled"), ("skipped", "cancelled")]


STEPS = st.lists(st.tuples(st.sampled_from(["sleep", "suspend", "set_wall", "pause"]),
                           st.integers(-5400, 5400)), min_size=1, max_size=6)
GRIDS = {"cron": (W0 - 30, 300.0), "every": (None, 420.0)}  # (anchor, period) of each series


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS, catch_up=st.sampled_from(["none", "latest", "all"]),
       overlap=st.sampled_from(["skip", "coalesce", "queue"]),
       run_time=st.sampled_from([0.0, 200.0, 700.0]))
def test_any_clock_history_runs_each_fire_time_at_most_once_never_early_and_names_the_rest(
        make_scheduler, steps, catch_up, overlap, run_time):
    async def main():
        wall = Wall()
        s = make_scheduler(wall_clock=wall)
        events = []
        s.add_listener(series_only(events.append))
        runs = {"cron": Runs(wall, sleep=run_time), "every": Runs(wall, sleep=run_time)}
        t0 = asyncio.get_running_loop().time()
        options = {"catch_up": catch_up, "overlap": overlap}
        handles = [s.schedule_recurring("cron", Cron("*/5 * * * *"), 0, runs["cron"], **options),
                   s.schedule_recurring("every", Every(420), 0, runs["every"], **options)]
        for op, n in steps:
            if op == "sleep":
                await asyncio.sleep(abs(n))
            elif op == "suspend":  # the monotonic clock stands still
                wall.offset += abs(n)
            elif op == "set_wall":
                wall.offset += n
            else:
                for handle in handles:
                    handle.pause()
                await asyncio.sleep(abs(n))
                for handle in handles:
                    handle.resume()
            await asyncio.sleep(61)  # the book looks at the clocks at least every minute
        await s.aclose()
        return t0, runs, events

    t0, runs, events = on_virtual(main)
    for name, (anchor, period) in GRIDS.items():
        anchor = t0 if anchor is None else anchor
        starts = runs[name].starts
        fires = [fire for fire, *_ in starts]
        assert fires == sorted(set(fires)), "a fire time ran twice, or out of order"
        clock = 1 if name == "cron" else 2  # the wall reading, or the loop's
        assert all(start[0] <= start[clock] for start in starts), "a run started early"
        named: set[float] = set()  # fire times an event names
        not_run: set[float] = set()  # ... as skipped or coalesced
        for e in events:
            if e.series == name and e.kind in ("skipped", "coalesced", "late"):
                assert e.count is not None and e.last_fire_time is not None
                k = round((e.fire_time - anchor) / period)
                while anchor + k * period <= e.last_fire_time:
                    named.add(anchor + k * period)
                    if e.kind != "late":
                        not_run.add(anchor + k * period)
                    k += 1
        assert not not_run & set(fires), "a skipped or coalesced fire time ran"
        late = {e.fire_time for e in events if e.series == name and e.kind == "late"}
        assert late <= set(fires) | not_run, "a late run neither ran nor was skipped"
        handled = named | set(fires)
        if handled:
            last = round((max(handled) - anchor) / period)
            every_one = {anchor + k * period for k in range(1, last + 1)}
            assert every_one <= handled, f"{name}: fire times dropped silently"


def test_a_scheduler_left_open_when_its_loop_shuts_down_ends_its_series(make_scheduler,
                                                                        loop_factory):
    events = []

    async def main():
        s = make_scheduler(wall_clock=Wall())
        s.add_listener(series_only(events.append))
        started = asyncio.Event()

        async def slow():
            started.set()
            await asyncio.sleep(3600)

        s.schedule_recurring("idle", Every(3600), 0, print)
        s.schedule_recurring("busy", Every(0.01), 0, slow)
        await started.wait()
        return s  # left open, a run in progress: the loop's shutdown closes it

    s = run_as_asyncio_run(main, loop_factory)
    assert s.state == "closed"
    seen = {(e.series, e.kind, e.reason) for e in events}
    assert {("busy", "stopped", "closed"), ("idle", "stopped", "closed")} <= seen
    # on a slow machine fire times may come due in the teardown: skipped, never failed
    assert {kind for _, kind, _ in seen} <= {"stopped", "skipped"}


def test_a_series_timer_due_during_the_loops_teardown_starts_nothing(make_scheduler,
                                                                     asyncio_log):
    """Another Task's slow clean-up lets the series' timer fire while the loop shuts down."""
    started = []
    events = []

    async def slow_cleanup():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)  # the series' fire time comes meanwhile
            raise

    async def main():
        asyncio.get_running_loop().create_task(slow_cleanup())
        s = make_scheduler(wall_clock=Wall())
        s.add_listener(series_only(events.append))
        s.schedule_recurring("soon", Every(0.01), 0, started.append, ("soon",))
        await asyncio.sleep(0)

    run_as_asyncio_run(main, VirtualTimeLoop)
    assert started == []
    assert destroyed_pending(asyncio_log) == []
    assert [(e.kind, e.reason) for e in events] == [("stopped", "closed")]
