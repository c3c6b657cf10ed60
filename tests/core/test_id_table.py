"""The core's id table under hash collisions and churn, through the public API.

The table probes linearly from a home bucket (the top bits of the key's hash
times a Fibonacci constant) and deletes by shifting entries back; these keys
are built so that hashes collide fully, share a home bucket without being
equal, or differ only in their high bits, and the operations add and remove
them in any order. ``_check()`` asserts the
table's invariants after every step on the core.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.examples import examples

# The inverse of the table's Fibonacci multiplier modulo 2**64: hashes
# ``base + c * _PHI_INVERSE`` mix to ``base * phi + c``, so for small c they
# share their home bucket at every table size but are not equal.
_PHI = 0x9E3779B97F4A7C15
_PHI_INVERSE = pow(_PHI, -1, 2**64)


def _signed(value: int) -> int:
    value %= 2**64
    return value - 2**64 if value >= 2**63 else value


HASHES = sorted({_signed(h) for h in (
    [7, 7 + 2**40, 7 + 2**62]  # differ only in high bits
    + [_signed(12345 + c * _PHI_INVERSE) for c in range(4)]  # one home bucket
    + [-2]  # hash(-1) == hash(-2) in CPython
)})


class Key:
    """Equal by ``value``; its hash is one of HASHES, chosen by the value."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __hash__(self) -> int:
        return HASHES[self.value % len(HASHES)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Key) and other.value == self.value

    def __repr__(self) -> str:
        return f"Key({self.value})"


def noop() -> None:
    pass


operations = st.lists(st.tuples(st.sampled_from(["schedule", "cancel", "run"]),
                                st.integers(0, 40)), max_size=300)


# impl is a module, the same for every example.
@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_colliding_ids_keep_their_states(impl, ops):
    s = impl.Scheduler()
    pending: set[int] = set()
    for op, value in ops:
        if op == "schedule":
            s.schedule(Key(value), float(value), 0, noop)
            pending.add(value)
        elif op == "cancel":
            assert s.cancel(Key(value)) == (value in pending)
            pending.discard(value)
        else:  # run the head to the end, which forgets its id
            task = s.next(1e9)
            if task is not None:
                pending.remove(task.task_id.value)
                s.complete(task)
        s._check()
        for probe in range(41):
            assert s.state(Key(probe)) == ("pending" if probe in pending else None)
    assert len(s) == len(pending)


def test_many_ids_come_and_go(impl):
    # Enough keys to grow the bucket array many times, then removals in an
    # order unrelated to insertion: the table must end empty and consistent.
    s = impl.Scheduler()
    n = 200_000
    for i in range(n):
        s.schedule(i, float((i * 7919) % n), 0, noop)
    for i in range(0, n, 3):
        assert s.cancel(i)
    s._check()
    while (task := s.next(1e9)) is not None:
        s.complete(task)
    assert len(s) == 0
    assert all(s.state(i) is None for i in range(0, n, 997))
    s._check()


class SubInt(int):
    """An int subclass: equal to the int of its value, but not an exact int."""


_P = 2**61 - 1  # CPython hashes ints modulo this prime
# Ids equal across types (5, 5.0, SubInt(5); 1 and True) and ints whose
# hashes collide without being equal (5 and _P + 5; -1 and -2), around the
# range where an int's hash is its value.
MIXED_IDS = [0, 1, True, 5, 5.0, SubInt(5), _P + 5, -1, -2, _P - 1, _P, 2**63, -(2**61) + 1,
             -(2**61), 7, 7 + _P * 3, Key(7)]


def _same_id(a: object, b: object) -> bool:
    return hash(a) == hash(b) and a == b


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from(["schedule", "cancel", "run"]),
                              st.integers(0, len(MIXED_IDS) - 1)), max_size=200))
def test_int_ids_equal_only_to_equal_ids(impl, ops):
    # The core's table skips loading an id that is an int equal to its hash
    # when the probe is one too: ids equal across types, and ints whose
    # hashes collide, must still be told apart or found.
    s = impl.Scheduler()
    pending: list[object] = []  # one representative per pending id
    for op, index in ops:
        probe = MIXED_IDS[index]
        found = next((held for held in pending if _same_id(held, probe)), None)
        if op == "schedule":
            s.schedule(probe, float(index), 0, noop)
            if found is None:
                pending.append(probe)
        elif op == "cancel":
            assert s.cancel(probe) == (found is not None)
            if found is not None:
                pending.remove(found)
        else:
            task = s.next(1e9)
            if task is not None:
                pending.remove(next(held for held in pending if _same_id(held, task.task_id)))
                s.complete(task)
        s._check()
        for other in MIXED_IDS:
            held = any(_same_id(h, other) for h in pending)
            assert s.state(other) == ("pending" if held else None)
    assert len(s) == len(pending)
