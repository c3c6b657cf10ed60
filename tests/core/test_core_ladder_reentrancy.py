"""User code calling back in while the ladder is big enough to move buckets.

tests/test_core_reentrancy.py runs every call with a finaliser calling back in
at each of its allocations, on a scheduler of a few tasks. Here the scheduler
holds a few hundred, spread over every part of the core's ladder (a rung being
drained, the far tasks above it, past-due ones before it, a parked version),
and the finalisers' actions move buckets down (peek), land before, inside and
past the buckets, claim and cancel; or it holds them all still unsorted, so that
an action's peek moves every one while the call is under way. The outcome must be
that of the action run before the call, after it, or (for the batch calls) between two of its items,
as the plain model computes them.
"""

from __future__ import annotations

import random

import pytest

from support.core_reentrancy import runs_with_user_code_inside
from support.impl import NO_EXTENSIONS, compiled_module, pure_namespace
from support.reentrancy_schedulers import ModelScheduler, RealScheduler, norm


def fn_named(name):
    def fn():
        return name
    return fn


def base_ladder(s):
    """150 tasks claimed into, 60 far ones above them, 20 past-due ones, a parked
    version behind a run, a few cancelled."""
    rng = random.Random(5)
    for k in range(150):
        s.schedule(f"t{k}", 1.0 + rng.random() * 99.0, k % 3, fn_named(f"t{k}"))
    s.schedule("r", 0.5, 0, fn_named("r"))
    s.next(0.5)  # r runs
    s.peek()  # the ladder's first rung
    for _ in range(20):
        task = s.next(1e300)
        s.complete(task)
    s.schedule("r", 30.0, 0, fn_named("r2"))  # parked once it reaches the head
    for k in range(60):
        s.schedule(f"f{k}", 200.0 + rng.random() * 100.0, 0, fn_named(f"f{k}"))
    for k in range(20):
        s.schedule(f"p{k}", rng.random(), 1, fn_named(f"p{k}"))
    for k in range(0, 150, 17):
        s.cancel(f"t{k}")


def base_unsettled(s):
    """300 tasks all still in the core's top: the first peek moves them all."""
    rng = random.Random(6)
    s.schedule("r", 0.5, 0, fn_named("r"))
    s.next(0.5)  # r runs: the only claim, which moved only r
    for k in range(200):
        s.schedule(f"t{k}", 1.0 + rng.random() * 99.0, k % 3, fn_named(f"t{k}"))
    for k in range(100):
        s.schedule(f"f{k}", 200.0 + rng.random() * 100.0, 0, fn_named(f"f{k}"))


BASES = {"drained": base_ladder, "unsettled": base_unsettled}


def drain_order(s):
    """Finish the run, then claim and complete everything: the (id, version) order."""
    task = s.running("r")
    if task is not None:
        s.complete(task)
    order = []
    while True:
        task = s.next(1e300)
        if task is None or isinstance(task, float):
            return order
        order.append((task.task_id, task.version))
        s.complete(task)


MANY = [("n1", 250.0, 0, fn_named("n1")), ("n2", 0.25, 2, fn_named("n2")),
        ("t40", 60.0, 0, fn_named("t40b")), ("n3", 45.5, 1, fn_named("n3"))]

CALLS = {
    "schedule_far": lambda s: s.schedule("n", 500.0, 0, fn_named("n")),
    "schedule_inside": lambda s: s.schedule("n", 55.5, 0, fn_named("n")),
    "schedule_past": lambda s: s.schedule("n", 0.0, 0, fn_named("n")),
    "schedule_replace": lambda s: s.schedule("t41", 70.0, 1, fn_named("t41b")),
    "schedule_many": lambda s: s.schedule_many(MANY),
    "cancel": lambda s: s.cancel("t42"),
    "peek": lambda s: s.peek(),
    "next": lambda s: s.next(1e300),
    "pop_due": lambda s: s.pop_due(1e300, 20),
    "complete": lambda s: s.complete(s.running("r")),
}

# Between two items of a batch call: the part before ``split`` items, then the rest.
BATCHES = {
    "schedule_many": (lambda s, split: s.schedule_many(MANY[:split]),
                      lambda s, split: s.schedule_many(MANY[split:]), len(MANY)),
    "pop_due": (lambda s, split: s.pop_due(1e300, split),
                lambda s, split: s.pop_due(1e300, 20 - split), 20),
}


def claim_one(s):
    task = s.next(1e300)
    if task is not None and not isinstance(task, float):
        s.complete(task)


ACTIONS = {
    "peek": lambda s: s.peek(),
    "schedule_past": lambda s: s.schedule("z", 0.125, 5, fn_named("z")),
    "schedule_inside": lambda s: s.schedule("z", 50.25, 0, fn_named("z")),
    "claim": claim_one,
    "cancel": lambda s: s.cancel("t43"),
}


def outcomes(base, call, action):
    """Every outcome the model allows: the action before, after or inside the call."""
    call_fn, action_fn = CALLS[call], ACTIONS[action]

    def action_first(m):
        action_fn(m)
        return norm(call_fn(m))

    def action_last(m):
        result = norm(call_fn(m))
        action_fn(m)
        return result

    orders = [action_first, action_last]
    if call in BATCHES:
        before, rest, items = BATCHES[call]

        def action_inside(m, split):
            result = norm(before(m, split))
            action_fn(m)
            return result + norm(rest(m, split))

        orders += [lambda m, split=split: action_inside(m, split) for split in range(1, items)]
    found = []
    for order in orders:
        m = ModelScheduler()
        BASES[base](m)
        result = order(m)
        found.append((result, drain_order(m)))
    return found


# The default run: the core, with the actions that move its buckets. The twin
# (it has no ladder) and the other actions run with -m slow.
SLOW = pytest.mark.slow
IMPLS = [pytest.param("c", marks=pytest.mark.skipif(NO_EXTENSIONS, reason="pure install")),
         pytest.param("py", marks=SLOW)]
QUICK_ACTIONS = ("peek", "claim")


@pytest.mark.parametrize("action", [name if name in QUICK_ACTIONS
                                    else pytest.param(name, marks=SLOW)
                                    for name in sorted(ACTIONS)])
@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("which", IMPLS)
def test_calls_on_a_ladder_survive_a_finaliser_at_each_allocation(which, base, call, action):
    impl = compiled_module() if which == "c" else pure_namespace()
    expected = outcomes(base, call, action)

    def make():
        s = RealScheduler(impl)
        BASES[base](s)
        return s

    for s, result, where in runs_with_user_code_inside(impl, make, CALLS[call], ACTIONS[action]):
        s._check()
        outcome = (norm(result), drain_order(s))
        assert outcome in expected, f"{where}: {outcome[0]} not among the model's outcomes"
        s._check()
