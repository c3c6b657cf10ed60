"""Series invariants under random clock histories (hypothesis).

Whatever the clocks do (time passing, suspends, the wall clock set back or
forward), under any policy: every fire time up to ``last_fire`` is accounted
for exactly once, as a run or inside a skipped/coalesced event whose count is
right; no run starts before its fire time; runs go in fire-time order; a fire
time never runs twice.
"""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from pysched.calendar import Cron, Every, Series

from support.calendar_driver import Driver, FakeClocks, ts
from support.examples import examples

TRIGGERS = {
    "cron_minutes": lambda: Cron("*/5 * * * *"),
    "cron_seconds": lambda: Cron("0,20,25 * * * * *"),
    "cron_berlin": lambda: Cron("*/30 * * * *", tz="Europe/Berlin"),
    "every": lambda: Every(37),
    "every_started": lambda: Every(90, start=datetime(2025, 10, 26, 0, 3, tzinfo=timezone.utc)),
}

steps = st.lists(st.tuples(st.sampled_from(["advance", "suspend", "set_wall"]),
                           st.integers(min_value=-5400, max_value=5400)),
                 min_size=1, max_size=8)


@settings(max_examples=examples(100), deadline=None)
@given(trigger=st.sampled_from(sorted(TRIGGERS)), history=steps,
       catch_up=st.sampled_from(["none", "latest", "all"]),
       overlap=st.sampled_from(["skip", "coalesce", "queue"]),
       grace=st.sampled_from([0.0, 1.0, 120.0]), run_time=st.sampled_from([0.0, 3.0, 400.0]),
       max_catch_up=st.sampled_from([1, 3, 100]))
def test_every_fire_time_is_accounted_for_once(trigger: str, history: list[tuple[str, int]],
                                                catch_up: str, overlap: str, grace: float,
                                                run_time: float, max_catch_up: int) -> None:
    # 26 Oct 2025, 00:00 UTC: Berlin falls back at 01:00 UTC
    clocks = FakeClocks(ts("2025-10-26T00:00"))
    series = Series("s", TRIGGERS[trigger](), clocks.read(), catch_up=catch_up, overlap=overlap,
                    misfire_grace=grace, max_catch_up=max_catch_up)
    reference = TRIGGERS[trigger]().fires(clocks.read())
    d = Driver([series], clocks, run_time=run_time)
    for op, amount in history:
        if op == "advance":
            d.run_until_wall(clocks.wall + abs(amount))
        elif op == "suspend":
            clocks.suspend(abs(amount))
        else:
            clocks.set_wall(amount)
        d.run_until_wall(clocks.wall + 60)
    ran = d.fired("s")
    assert len(set(ran)) == len(ran), "a fire time ran twice"
    assert ran == sorted(ran)
    accounted = list(ran)
    for event in d.events:
        if event.kind in ("skipped", "coalesced"):
            assert event.count is not None and event.last_fire_time is not None
            stretch = [event.fire_time]
            while stretch[-1] != event.last_fire_time:
                nxt = reference.next_fire(stretch[-1])
                assert nxt is not None and nxt <= event.last_fire_time
                stretch.append(nxt)
            assert len(stretch) == event.count
            accounted += stretch
    assert len(set(accounted)) == len(accounted), "a fire time was both run and dropped"
    expected = []
    fire = reference.first()
    while fire is not None and series.last_fire is not None and fire <= series.last_fire:
        expected.append(fire)
        fire = reference.next_fire(fire)
    pending = series.running is not None or bool(series._ready)
    if not pending:
        assert sorted(accounted) == expected
