"""Pools of argument values for the fuzzers, good and bad.

Every value is shared by both implementations in a differential run, so each
must behave the same whichever scheduler sees it: no value's ``__eq__`` or
``__hash__`` has side effects, and an ``__eq__`` only runs between equal
hashes, where it answers by value (the id table and the dict probe in
different orders, so the number of calls may differ, never the answer).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction


class Collide:
    """Distinct ids that all hash alike: every lookup walks a collision chain."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __hash__(self) -> int:
        return 12345

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Collide) and other.n == self.n

    def __repr__(self) -> str:
        return f"Collide({self.n})"


class HashRaises:
    """Hashable by type, but hash() raises: must be refused as task_id."""

    def __hash__(self) -> int:
        raise TypeError("no hash today")


class HashExplodes:
    """hash() raises something other than TypeError: it must propagate untouched."""

    def __hash__(self) -> int:
        raise ZeroDivisionError("hash exploded")


class FloatRaises:
    """Has __float__, but calling it fails."""

    def __float__(self) -> float:
        raise ValueError("no float today")


class FloatExplodes:
    def __float__(self) -> float:
        raise ZeroDivisionError("float exploded")


class Index:
    """An int-like priority through __index__."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __index__(self) -> int:
        return self.n


class IndexExplodes:
    def __index__(self) -> int:
        raise ZeroDivisionError("index exploded")


def noop() -> None:
    pass


class CallableObj:
    def __call__(self) -> None:
        pass


NAN = math.nan  # one object: ids compare by identity first, so this nan is one id

IDS: list[object] = [
    "a", "b", "c", 0, 1, 2, -1, 0.0, -0.0, False, True, None, (1, 2), (0, "a"),
    2**64, -(2**63), NAN, Collide(0), Collide(1), Collide(2), frozenset({1}), b"a",
    # bad ones
    [], {}, ([],), HashRaises(), HashExplodes(), {1},
]
# A fresh nan per use is a new id each time (nan != nan): one more kind of id.
FRESH_NAN = object()

TIMES: list[object] = [
    0.0, 0.5, 1.0, 1.0, 2.0, 3.0, -1.0, -0.0, 1e-300, 5e-324, 1e15, 1e308, -1e308,
    0, 1, 2, 10**18, Fraction(1, 3), Decimal("2.5"), 1e15 + 0.125,
    # bad ones
    math.nan, math.inf, -math.inf, "1.0", None, True, 1j, 10**400, [], FloatRaises(),
    FloatExplodes(), Decimal("NaN"), b"1",
]

PRIORITIES: list[object] = [
    0, 0, 1, -1, 2, 2**63 - 1, -(2**63), Index(3), Index(2**63 - 1),
    # bad ones
    2**63, -(2**63) - 1, True, 1.0, "1", None, Index(2**70), IndexExplodes(), 1j,
]

FNS: list[object] = [noop, CallableObj(), print, len, lambda: None,
                     # bad ones
                     None, 42, "fn"]

EXCEPTIONS: list[object] = [ValueError("boom"), KeyboardInterrupt(), Exception(),
                            # bad ones
                            ValueError, "boom", None]
