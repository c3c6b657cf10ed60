"""``series_info``: the ``SeriesInfo`` snapshot of an in-process series, shared by the pool
and the asyncio scheduler. The caller holds whatever lock guards the series."""

from __future__ import annotations

from ..jobs import NEXT_FIRES, RECENT_RUNS, SeriesInfo, wall_datetime
from ._readings import Reading
from .ledger import RunLedger
from .series import Series

__all__ = ["series_info", "wall_of"]


def wall_of(series: Series, fire_time: float, now: Reading) -> float:
    """A fire time of ``series`` in POSIX seconds: itself on the wall timeline, else
    estimated from ``now`` on the monotonic clock."""
    return fire_time if series.timeline == "wall" else fire_time - now.mono + now.wall


def series_info(series: Series, now: Reading, ledger: RunLedger, priority: int,
                running: bool) -> SeriesInfo:
    """What ``describe`` says of ``series`` at ``now`` (its runs and counts from ``ledger``)."""
    fires = tuple(series.next_fire_times(NEXT_FIRES))
    describe = getattr(series.trigger, "describe", None)
    counts = ledger.counts(series.series_id)
    return SeriesInfo(
        series.series_id, "paused" if series.paused else "active", running, series.paused,
        ledger.note(series.series_id) if series.paused else None,
        describe() if describe is not None else None, series.timeline, priority, fires,
        tuple(wall_datetime(wall_of(series, f, now)) for f in fires),
        ledger.last_runs(series.series_id, RECENT_RUNS), counts.skipped, counts.coalesced,
        counts.late, counts.overlapped)
