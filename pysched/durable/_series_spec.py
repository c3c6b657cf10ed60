"""A durable series' trigger and policies as JSON data, and back: never pickled code.

``Cron``: its expression, zone (a zoneinfo key, or a fixed offset in
seconds) and DST policy. ``Every``: its period and its start, fixed when
the series is stored (an ``Every`` without a start is anchored then), so every
process computes the same fire times. Reading a spec from a row builds the
trigger through the same constructors, which check every field: a hostile
row raises ``BadRow`` naming what is wrong.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

from .._validate import INT64_MAX, check_priority
from ..calendar import Cron, Every
from ._walltime import WALL_MAX, WALL_MIN
from .errors import BadRow
from .series_table import ACTIVE, PAUSED, SeriesRow
from .store import parse_json

__all__ = ["MIN_PERIOD", "Policies", "SeriesSpec", "check_row_fields", "decode_spec",
           "encode_spec"]

# The wall instants a series row may hold are those of a datetime (WALL_MIN to
# WALL_MAX): beyond them a trigger's arithmetic overflows, or an Every counts fire
# times that a float cannot tell apart, without end.

SPEC_FORMAT = 1
# The shortest period of a durable Every, in seconds. Fire times are wall instants
# (about 2e9, kept to some 1e-6 s by a float), and each is a store transaction: a finer
# period names fire times that a float cannot tell apart, which the series would
# count one by one without end.
MIN_PERIOD = 0.001


@dataclasses.dataclass(frozen=True)
class Policies:
    """The ``Series`` keyword arguments a durable series stores."""

    misfire_grace: float | None
    catch_up: str
    overlap: str
    on_error: str
    max_catch_up: int

    def as_dict(self) -> dict[str, Any]:
        """The policies as ``Series`` keyword arguments."""
        return dataclasses.asdict(self)


_POLICY_NAMES = tuple(field.name for field in dataclasses.fields(Policies))


class SeriesSpec(NamedTuple):
    """What a series row's ``spec`` holds, decoded."""

    trigger: Cron | Every
    policies: Policies


def _zone(tz: Any) -> str | float:
    if isinstance(tz, ZoneInfo):
        return tz.key
    offset = tz.utcoffset(None)
    return offset.total_seconds() if offset is not None else 0.0


def encode_spec(trigger: Cron | Every, policies: Policies, created: float) -> str:
    """JSON text for ``trigger`` and ``policies``; an ``Every`` without a start is
    anchored at ``created`` (wall seconds) and first fires one period later."""
    if isinstance(trigger, Cron):
        data: dict[str, Any] = {"kind": "cron", "expr": trigger.expr, "tz": _zone(trigger.tz),
                                "nonexistent": trigger.nonexistent,
                                "ambiguous": trigger.ambiguous}
    elif isinstance(trigger, Every):
        _check_period(trigger)
        if trigger.fixed_delay:
            raise ValueError("trigger: a durable series cannot run with a fixed delay: when a "
                             "run ends is one process's; use a fixed rate")
        if trigger.start_at is not None:
            raise ValueError("trigger: start_at is a time on this process's monotonic clock; "
                             "a durable series needs start, a datetime")
        start = (trigger.start.timestamp() if trigger.start is not None
                 else created + trigger.seconds)
        data = {"kind": "every", "seconds": trigger.seconds, "start": start}
    else:
        raise TypeError(f"trigger must be a Cron or an Every, not {type(trigger).__name__}")
    data.update(policies.as_dict(), fmt=SPEC_FORMAT)
    return json.dumps(data, allow_nan=False, separators=(",", ":"))


def decode_spec(text: Any) -> SeriesSpec:
    """The trigger and policies stored as ``text``, or BadRow saying what is wrong."""
    try:
        data = parse_json(text)
        if not isinstance(data, dict):
            raise BadRow("spec must be a JSON object")
        if data.get("fmt") != SPEC_FORMAT:
            raise BadRow(f"spec format {data.get('fmt')!r} is not one this pysched reads")
        kind = data.get("kind")
        trigger: Cron | Every
        if kind == "cron":
            tz = data["tz"]
            zone = timezone(timedelta(seconds=tz)) if isinstance(tz, (int, float)) else tz
            trigger = Cron(data["expr"], tz=zone, nonexistent=data["nonexistent"],
                           ambiguous=data["ambiguous"])
        elif kind == "every":
            trigger = _check_period(Every(data["seconds"], start=datetime.fromtimestamp(
                data["start"], timezone.utc)))
        else:
            raise BadRow(f"spec kind {kind!r} is neither 'cron' nor 'every'")
        policies = Policies(**{name: data[name] for name in _POLICY_NAMES})
    except BadRow:
        raise
    except (ValueError, TypeError, KeyError, OverflowError, OSError) as exc:
        raise BadRow(f"spec is not a trigger this pysched reads: {exc!r}") from exc
    return SeriesSpec(trigger, policies)


def _check_period(every: Every) -> Every:
    """``every``, or ValueError naming the trigger if its period is below MIN_PERIOD."""
    if every.seconds < MIN_PERIOD:
        raise ValueError(f"trigger: a durable Every's period must be at least {MIN_PERIOD} s,"
                         f" got {every.seconds!r}")
    return every


def check_row_fields(row: SeriesRow) -> None:
    """Raise BadRow unless a series row's state is active or paused, its wall instants
    (``created``, the newest fire time claimed or its floor) are times of a date, and
    its priority and generation are ints ``schedule_recurring`` could have stored."""
    if row.state not in (ACTIVE, PAUSED):
        raise BadRow(f"its state {row.state!r} is neither {ACTIVE!r} nor {PAUSED!r}")
    for name, value in (("created", row.created), ("floor or newest fire time", row.last_fire)):
        if value is not None and (type(value) not in (int, float)
                                  or not WALL_MIN <= value <= WALL_MAX):
            raise BadRow(f"its {name} {value!r} is not a time of a date")
    try:
        check_priority(row.priority)
    except (TypeError, OverflowError):
        raise BadRow(f"its priority {row.priority!r} is not a 64-bit int") from None
    # As a task's version: put() writes 1 and counts up, so no other value is its row's.
    if type(row.generation) is not int or not 0 < row.generation <= INT64_MAX:
        raise BadRow(f"its generation {row.generation!r} is not a positive 64-bit int")
