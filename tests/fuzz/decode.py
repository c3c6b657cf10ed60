"""Turn fuzzer bytes into operations for tests/fuzz/differential.py.

The same bytes always decode to the same operations, so a saved input (the
corpus in tests/fuzz/corpus/) replays exactly. Values come mostly from the
pools in values.py (good and bad ones), sometimes straight from the bytes
(any double, any 64/72-bit integer), so both hand-picked edge cases and
arbitrary values reach the core.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from .spreads import SHAPES
from .values import EXCEPTIONS, FNS, IDS, PRIORITIES, TIMES, HashRaises

HASHLESS = HashRaises()

MAX_OPS = 400  # keeps one input fast; longer histories come from bursts


class Reader:
    """Consume bytes as small integers; past the end every read is 0."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def take(self, n: int) -> bytes:
        chunk = self.data[self.pos:self.pos + n].ljust(n, b"\0")
        self.pos += n
        return chunk

    def pick(self, pool: list) -> object:
        return pool[self.byte() % len(pool)]


def _task_id(r: Reader) -> object:
    b = r.byte()
    if b == 255:
        return float("nan")  # a fresh nan: never equal to any id, itself included
    if b >= 240:
        return ("int", r.byte())  # a wider pool of plain ids
    return IDS[b % len(IDS)]


def _time(r: Reader) -> object:
    b = r.byte()
    if b >= 224:
        return struct.unpack("<d", r.take(8))[0]  # any double, nan and inf included
    return TIMES[b % len(TIMES)]


def _priority(r: Reader) -> object:
    b = r.byte()
    if b >= 224:
        return int.from_bytes(r.take(9), "little", signed=True)  # up to 72 bits: overflows too
    return PRIORITIES[b % len(PRIORITIES)]


def operations(data: bytes) -> Iterator[tuple]:
    """The operations that ``data`` encodes."""
    r = Reader(data)
    count = 0
    while r.left() > 0 and count < MAX_OPS:
        count += 1
        yield from _operation(r)


def _operation(r: Reader) -> Iterator[tuple]:
    """The next operation of ``r``."""
    kind = r.byte() % 16
    if kind <= 4:
        yield ("schedule", _task_id(r), _time(r), _priority(r), r.pick(FNS))
    elif kind <= 6:
        yield ("cancel", _task_id(r))
    elif kind == 7:
        yield ("state", _task_id(r))
    elif kind <= 9:
        yield ("next", None if r.byte() % 4 == 0 else _time(r))
    elif kind == 10:
        yield ("set_clock", _time(r))
    elif kind == 11:
        yield ("complete", r.byte())
    elif kind == 12:
        yield ("fail", r.byte(), r.pick(EXCEPTIONS))
    elif kind == 13:
        bad = r.pick([None, "task", 1, _Fake()])
        yield ("complete_bad", bad) if r.byte() % 2 else ("fail_bad", bad, r.pick(EXCEPTIONS))
    elif kind == 14:
        yield ("burst", r.byte() % 130, r.byte(), _time(r))
    else:
        b = r.byte()
        if b < 192:  # the operations of the first version of this decoding
            which = b % 3
            if which == 0:
                yield ("cancel_burst", r.byte() % 130, r.byte())
            elif which == 1:
                yield ("foreign",)
            else:
                yield ("drain", _time(r))
        else:
            yield from _newer_operation(r, b % 8)


MAX_SPREAD_OPS = 40  # spreads schedule up to 2,040 tasks, and every step checks them all


def spread_operations(data: bytes) -> Iterator[tuple]:
    """Operations rich in big bursts of run times of the shapes in spreads.py.

    About one operation in four is a burst of up to 2,040 tasks (one call each
    or one ``schedule_many``), or cancels half of an earlier one's; the rest
    decode as in ``operations``, so bursts mix with claims, holds and parking.
    """
    r = Reader(data)
    count = 0
    while r.left() > 0 and count < MAX_SPREAD_OPS:
        count += 1
        b = r.byte()
        if b >= 64:
            yield from _operation(r)
            continue
        base = r.byte() * 64
        size = 1 + r.byte() * 8
        seed = r.byte()
        if b < 40:
            yield ("spread", SHAPES[r.byte() % len(SHAPES)], size, base, seed)
        elif b < 48:
            yield ("spread_many", SHAPES[r.byte() % len(SHAPES)], size, base, seed)
        elif b < 56:
            yield ("cancel_spread", size, base, seed)
        else:  # claim part of what is due, so later bursts land between and before buckets
            yield ("pop_due", r.pick([1e308, 0.0, 5.0, 1000.0, -1e5]), size)


def _newer_operation(r: Reader, which: int) -> Iterator[tuple]:
    """peek, cancel_pending, release, pop_due, schedule_many and hold."""
    if which == 0:
        yield ("peek",)
    elif which == 1:
        yield ("cancel_pending", _task_id(r))
    elif which == 2:
        yield ("release", r.byte())
    elif which == 3:
        limit = r.byte()
        yield ("pop_due", None if r.byte() % 4 == 0 else _time(r),
               None if limit >= 200 else r.pick([-1, 1.5, True]) if limit >= 190 else limit % 8)
    elif which == 4:
        items = [(_task_id(r), _time(r), _priority(r), r.pick(FNS)) for _ in range(r.byte() % 5)]
        if r.byte() % 8 == 0:
            items.append(r.pick([None, ("a", 1.0), "abcd", 3]))
        yield ("schedule_many", items)
    else:  # the most common: keep tasks running while their ids are scheduled again
        yield ("hold", r.byte() % 16, _time(r), _time(r))


class _Fake:
    """Looks like a task, but is not one."""

    task_id = "a"
    version = 1
    state = "running"


# -- the bounded queue ------------------------------------------------------------

QUEUE_OPS = ("push", "push", "push", "push_or_evict", "push_or_evict", "pop", "pop_entry",
             "peek", "peek_worst", "remove", "reprioritize", "snapshot", "len", "stats")


def _key(r: Reader) -> object:
    b = r.byte()
    return None if b < 96 else IDS[b % len(IDS)]


def queue_operations(data: bytes) -> tuple[object, object, list[tuple]]:
    """The capacity, the tenant limit and the operations that ``data`` encodes for a queue."""
    r = Reader(data)
    b = r.byte()
    capacity: object = b % 12 if b < 240 else r.pick([-1, 1.5, None, 2**64, True, 300])
    b = r.byte()
    tenant_limit: object = None if b < 128 else b % 4 if b < 250 else r.pick([-1, "2", 1.0])
    ops: list[tuple] = []
    values = 0
    while r.left() > 0 and len(ops) < MAX_OPS:
        name = QUEUE_OPS[r.byte() % len(QUEUE_OPS)]
        if name in ("push", "push_or_evict"):
            values += 1
            tenant = None if r.byte() < 128 else r.pick(["x", "y", 1.0, None, [], HASHLESS])
            ops.append((name, _priority(r), f"v{values}", _key(r), tenant))
        elif name == "remove":
            ops.append((name, _key(r)))
        elif name == "reprioritize":
            ops.append((name, _key(r), _priority(r)))
        else:
            ops.append((name,))
    return capacity, tenant_limit, ops
