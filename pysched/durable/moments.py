"""Times read from a store, as text and as JSON, whatever a row holds.

A stored time is untrusted: a float too large for a datetime (``1e300``), an
infinity, NaN, text or bytes (SQLite keeps any value in any column). Every
function here takes such a value and returns text or JSON data; none raises.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

__all__ = ["as_time", "iso_utc", "jsonable", "lease_text", "relative", "span", "wall_text",
           "when"]


def as_time(value: Any) -> float | None:
    """``value`` as seconds if it is a finite number (not a bool), else None."""
    if type(value) not in (int, float):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond the floats
        return None
    return seconds if math.isfinite(seconds) else None


def iso_utc(value: Any) -> str | None:
    """``value`` (seconds since the epoch) as ISO 8601 in UTC, or None if no date has it."""
    seconds = as_time(value)
    if seconds is None:
        return None
    try:
        at = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    except (OverflowError, ValueError, OSError):
        return None
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def wall_text(value: Any) -> str:
    """``value`` as ``YYYY-MM-DD HH:MM:SS UTC``, or what it is when no date has it."""
    if value is None:
        return "-"
    iso = iso_utc(value)
    if iso is not None:
        return f"{iso[:10]} {iso[11:19]} UTC"
    if type(value) in (int, float):
        return f"{value!r} s (no date)"
    return f"not a time: {_short(value)}"


def relative(value: Any, now: Any) -> str:
    """``value`` against ``now`` ("in 3.0 s", "5 min ago"), or "" when either is not a time."""
    at, ref = as_time(value), as_time(now)
    if at is None or ref is None:
        return ""
    delta = at - ref
    return f"in {span(delta)}" if delta > 0 else f"{span(-delta)} ago"


def when(value: Any, now: Any) -> str:
    """``wall_text(value)``, with ``relative(value, now)`` in brackets where there is one."""
    rel = relative(value, now)
    return f"{wall_text(value)} ({rel})" if rel else wall_text(value)


def lease_text(expires: Any, now: Any) -> str:
    """A lease's expiry against ``now``: "none", "expires in 8.0 s", "expired 1 min ago"."""
    if expires is None:
        return "none"
    at, ref = as_time(expires), as_time(now)
    if at is None or ref is None:
        return f"expires at {wall_text(expires)}"
    left = at - ref
    return f"expires in {span(left)}" if left >= 0 else f"expired {span(-left)} ago"


def span(seconds: Any) -> str:
    """A duration in the largest unit that keeps it short ("1.5 s", "12 min", "3.0 days")."""
    if type(seconds) not in (int, float) or math.isnan(seconds):
        return f"not a duration: {_short(seconds)}"
    if math.isinf(seconds):
        return "for ever" if seconds > 0 else "-for ever"
    if seconds < 0:
        return "-" + span(-seconds)
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    days = seconds / 86400
    return f"{days:.1f} days" if days < 1e6 else f"{days:.3g} days"


def jsonable(value: Any) -> Any:
    """``value`` with what JSON cannot hold made text: NaN and infinities (``"nan"``,
    ``"inf"``), bytes (their ``repr``), and so on inside lists, tuples and dicts."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return repr(bytes(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    return repr(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
