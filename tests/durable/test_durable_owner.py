"""A stable ``owner=``: a restart under it releases at once what a dead process held,
never what a live process using the same name still renews (that would run it twice)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import support.durable as h

HANG_GUARD = 30.0
# A heartbeat of 10 s: the first scheduler's claim counts as renewed for the whole test.
LEASE, BEAT = 30.0, 10.0


@pytest.fixture
def make(store_spec: dict[str, Any]) -> Any:
    yield from h.schedulers(store_spec)


def starts_of(task_id: str) -> int:
    return sum(1 for call in h.CALLS if call[:2] == (task_id, "start"))


def test_a_second_live_process_with_the_same_owner_does_not_take_over_its_running_rows(
        make: Any, caplog: pytest.LogCaptureFixture) -> None:
    first = make(owner="replica", lease=LEASE, heartbeat=BEAT)
    future = first.schedule("a", first.clock(), 0, h.hold, args=["own-started", "own-release"])
    assert h.event("own-started").wait(HANG_GUARD)
    held = first.row("a")
    assert (held["state"], held["lease_owner"]) == ("running", "replica")

    with caplog.at_level(logging.WARNING, logger="pysched.durable"):
        second = make(owner="replica", lease=LEASE, heartbeat=BEAT)
    row = second.row("a")
    # Still the first one's claim: not handed back to pending, not claimed again.
    assert (row["state"], row["lease_token"], row["attempts"]) == (
        "running", held["lease_token"], 1)
    assert "another live process is using this owner" in caplog.text

    h.event("own-release").set()
    assert future.result(HANG_GUARD) is False
    h.wait_for(lambda: second.row("a")["state"] == "completed", HANG_GUARD, "the outcome")
    assert starts_of("a") == 1
    assert second.row("a")["attempts"] == 1


def test_a_restart_under_the_same_owner_releases_what_the_dead_one_held_at_once(
        make: Any, caplog: pytest.LogCaptureFixture) -> None:
    producer = make(max_workers=0)
    producer.schedule("dead", producer.clock(), 0, h.note, args=["ran"])
    # Held by "replica", last renewed (a lease of 5 s left of 30) long before it died.
    (claim,) = producer.store.claim(1e12, 1, "replica", 5.0)
    assert claim.task_id == "dead"

    with caplog.at_level(logging.WARNING, logger="pysched.durable"):
        restarted = make(owner="replica", lease=LEASE, heartbeat=BEAT)
    assert restarted.row("dead")["lease_token"] != claim.token  # released at once
    h.wait_for(lambda: restarted.row("dead")["state"] == "completed", HANG_GUARD, "the re-run")
    assert restarted.row("dead")["attempts"] == 2
    assert "another live process" not in caplog.text
