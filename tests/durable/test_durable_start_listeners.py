"""``DurableScheduler(listeners=...)``: the events of the series a worker adopts as it
starts (a downtime's missed fire times) reach a listener given to the constructor.

``add_listener`` can only be called once the constructor has returned, and by then the
series thread may have adopted the stored series and reported what it missed, to no one.
"""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import Any

import durable_helpers as h
import pytest
from durable_helpers import store_spec  # noqa: F401 - a fixture

from pysched import Every
from pysched.durable import DurableScheduler


@pytest.fixture
def make(store_spec: dict[str, Any]) -> Any:  # noqa: F811 - the fixture above
    yield from h.schedulers(store_spec)


def test_a_workers_first_events_reach_the_listeners_it_was_built_with(make: Any) -> None:
    """A series stored while no worker ran, due every second from ten seconds ago: the first
    worker reports the missed fire times as one coalesced run, to its listener."""
    start = datetime.datetime.fromtimestamp(int(time.time()) - 10, datetime.timezone.utc)
    make(max_workers=0).schedule_recurring("s", Every(1, start=start), 0, h.note)
    events: list[Any] = []
    worker = make(max_workers=1, listeners=[events.append])
    h.wait_for(lambda: any(e.kind == "coalesced" for e in events), what="the catch-up event")
    [missed] = [e for e in events if e.kind == "coalesced"]
    assert (missed.reason, missed.fire_time) == ("misfire", start.timestamp())
    assert worker.stats()["series_events"]["coalesced"] >= 1


def test_listeners_must_be_callables_and_nothing_is_opened_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "schedule.db"
    with pytest.raises(TypeError, match="listeners must be callables"):
        DurableScheduler(path, listeners=[print, "not a function"])
    assert not path.exists()
