"""Opt-in aging: the longer a task waits, the higher its effective priority.

With ``aging=A`` (seconds per priority level), a waiting task of priority
``p`` that started waiting at time ``a`` has at time ``t`` the effective
priority ``p + (t - a) / A``. It starts waiting when it is both scheduled and
due: ``a = max(time of the schedule() call, run_at)``.

Every waiting task gains priority at the same rate, so the order between two
of them never changes while they wait: comparing ``p1 + (t - a1)/A`` with
``p2 + (t - a2)/A`` is comparing ``p1 - a1/A`` with ``p2 - a2/A``, which does
not depend on ``t``. So no task is ever re-keyed: the key is computed once,
when the version is scheduled, and the core gets it as its integer priority::

    key = p * RESOLUTION - floor((a - epoch) * RESOLUTION / A)

(``epoch``: the clock when the scheduler was made). Keys closer than
1/RESOLUTION of a level tie, and ties stay first-come first-served.

How this changes the order: the core orders by earliest ``run_at`` first,
priority second, so priority (aged or not) only ranks tasks due at the same
``run_at``, such as a batch scheduled for one instant or work scheduled at a
fixed past time to mean "as soon as possible, by priority". Among those, a
task that waited ``A`` seconds longer than another outranks it if its
priority is lower by less than one level: steady high-priority work can
delay low-priority work but no longer starve it.
"""

from __future__ import annotations

import math

RESOLUTION = 1024  # key steps per priority level
# |priority| bound with aging on: the key must stay inside int64 with years of waiting added.
MAX_AGED_PRIORITY = 2**40
_INT64_MAX = 2**63 - 1

__all__ = ["MAX_AGED_PRIORITY", "RESOLUTION", "aged_key"]


def aged_key(priority: int, arrival: float, epoch: float, seconds_per_level: float) -> int:
    """The core priority for ``priority`` waiting since ``arrival``. O(1).

    OverflowError naming ``priority`` when ``|priority| > MAX_AGED_PRIORITY``
    or the key does not fit in a signed 64-bit integer.
    """
    if not -MAX_AGED_PRIORITY <= priority <= MAX_AGED_PRIORITY:
        raise OverflowError(f"priority must be within ±2**40 when aging is on, got {priority}")
    key = priority * RESOLUTION - math.floor((arrival - epoch) * RESOLUTION / seconds_per_level)
    if not -_INT64_MAX - 1 <= key <= _INT64_MAX:
        raise OverflowError(f"priority {priority} aged at {arrival!r} does not fit in 64 bits")
    return key
