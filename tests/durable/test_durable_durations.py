"""The durations a DurableScheduler takes: a lease or a thread's period too short to be
kept is refused by name before anything is opened; the minimums themselves are accepted.

A lease of 1e-300 was accepted, and its heartbeat (a third of it), like a poll or resync
interval of 1e-300, made a worker thread spin: each round's wait was no wait at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pysched.durable import DurableScheduler, MemoryStore
from pysched.durable.runner import MIN_LEASE, MIN_PERIOD

TOO_SHORT = [
    ("lease", 1e-300), ("lease", MIN_LEASE / 2),
    ("heartbeat", 1e-300), ("heartbeat", MIN_PERIOD / 2),
    ("poll_interval", 1e-300), ("poll_interval", MIN_PERIOD / 2),
    ("resync_interval", 1e-300), ("resync_interval", MIN_PERIOD / 2),
]


@pytest.mark.parametrize(("name", "value"), TOO_SHORT)
def test_a_duration_too_short_to_keep_is_refused_by_name_before_the_store_is_opened(
        tmp_path: Path, name: str, value: float) -> None:
    path = tmp_path / "schedule.db"
    with pytest.raises(ValueError, match=rf"^{name} must be at least "):
        DurableScheduler(path, **{name: value})
    assert not path.exists()


@pytest.mark.parametrize("options", [
    {"lease": MIN_LEASE},  # its default heartbeat, a third of it, is above MIN_PERIOD
    {"lease": 1.0, "heartbeat": MIN_PERIOD},
    {"poll_interval": MIN_PERIOD, "resync_interval": MIN_PERIOD},
    # Not periods of a thread: thresholds, however small.
    {"retention": 1e-300, "stale_after": 1e-300, "max_clock_skew": 1e-300},
], ids=["lease", "heartbeat", "periods", "thresholds"])
def test_the_minimums_are_accepted(options: dict[str, Any]) -> None:
    sched = DurableScheduler(MemoryStore(), max_workers=1, **options)
    assert sched.close(timeout=60)


def test_the_minimums_leave_a_start_window_and_a_heartbeat_above_a_threads_floor() -> None:
    """The reasoning behind MIN_LEASE, kept true: at the default heartbeat, a lease of
    MIN_LEASE renews every MIN_LEASE / 3 (far above MIN_PERIOD) and trusts a claim for
    two thirds of it, the window a claim's round trip must fit in."""
    sched = DurableScheduler(MemoryStore(), max_workers=0, lease=MIN_LEASE)
    try:
        assert sched._s.beat == pytest.approx(MIN_LEASE / 3) and sched._s.beat > 10 * MIN_PERIOD
        assert sched._s.live_until(0.0) == pytest.approx(2 * MIN_LEASE / 3)
    finally:
        sched.close()
