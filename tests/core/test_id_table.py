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
