"""Calendar schedules: cron and interval triggers, and the clock-independent series logic.

``Cron`` and ``Every`` say when a recurring series fires; ``Series`` decides,
from readings of a wall and a monotonic clock, which fire times to run now and
which were skipped, coalesced or late; ``EventHub`` delivers those decisions
to listeners and counts them. Nothing here knows about threads: the pool,
the asyncio scheduler and the durable scheduler drive it.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._readings import ClockWatch, Jump, Reading, read_clocks
    from .book import SeriesBook
    from .cron import Cron
    from .current import current_fire
    from .events import Event, EventHub, clock_jump_event
    from .every import Every
    from .handle import SeriesHandle
    from .series import Decision, Fire, Series
else:  # each name loads on first use (pysched._lazy)
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(globals(), {
        "ClockWatch": "._readings", "Jump": "._readings", "Reading": "._readings",
        "read_clocks": "._readings",
        "SeriesBook": ".book",
        "Cron": ".cron",
        "current_fire": ".current",
        "Event": ".events", "EventHub": ".events", "clock_jump_event": ".events",
        "Every": ".every",
        "SeriesHandle": ".handle",
        "Decision": ".series", "Fire": ".series", "Series": ".series",
    })

__all__ = ["ClockWatch", "Cron", "Decision", "Event", "EventHub", "Every", "Fire", "Jump",
           "Reading", "Series", "SeriesBook",
           "SeriesHandle",
           "clock_jump_event", "current_fire", "read_clocks"]
