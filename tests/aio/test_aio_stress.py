"""AsyncScheduler under random schedules, replacements and cancels, on virtual time.

Seeded, so each run is the same; the invariants are checked after every step:
the scheduler's own (``_check``), the cap, no version starting twice or after
its Future was cancelled or replaced, versions of an id starting in order,
and, once closed, every Future resolved, each cancelled one with its reason
and none that started with "replaced". Half the versions are coroutines, half
plain callables, which schedule or cancel from inside their call.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from support.aio import LOOPS, run

# Virtual time: every seed; real loops: a few, their times in milliseconds
# (what each step sees then varies with the machine; the invariants may not).
CASES = [("virtual", 1.0, seed) for seed in range(4)] + [
    (loop, 0.001, seed) for loop in ("asyncio", "uvloop") for seed in range(2)]


@pytest.mark.parametrize("cap", [None, 1, 3])
@pytest.mark.parametrize(("loop_name", "unit", "seed"), CASES)
def test_random_operations_keep_every_invariant(make_scheduler, loop_name, unit, seed, cap):
    if loop_name == "uvloop":
        pytest.importorskip("uvloop", reason="uvloop is not installed")

    async def main():
        rng = random.Random(seed)
        loop = asyncio.get_running_loop()
        s = make_scheduler(max_concurrency=cap)
        futures = []
        latest = {}  # the last version scheduled of each id
        started = []
        active = peak = 0

        async def body(box, hold):
            nonlocal active, peak
            fut = box[0]
            assert not fut.done(), "a cancelled or replaced version started"
            assert latest[fut.task_id] is fut, "a version began after a newer one was scheduled"
            started.append(fut)
            active += 1
            peak = max(peak, active)
            try:
                for _ in range(hold):
                    await asyncio.sleep(0.5 * unit)
                if hold == 3:
                    raise ValueError("a failing run")
                return hold
            finally:
                active -= 1

        def plain(box, hold):
            fut = box[0]
            assert not fut.done(), "a cancelled or replaced version started"
            assert latest[fut.task_id] is fut, "a version began after a newer one was scheduled"
            started.append(fut)
            s._check()
            if hold == 1:  # from inside its call: schedule another version, or cancel one
                schedule_one()
            elif hold == 2:
                s.cancel(rng.randrange(6))
            elif hold == 3:
                raise ValueError("a failing call")
            return hold

        def schedule_one():
            box = []
            fut = s.schedule(rng.randrange(6), loop.time() + unit * rng.choice([0, 0.5, 1, 2]),
                             rng.randint(-1, 1), rng.choice([body, plain]),
                             (box, rng.randrange(4)))
            box.append(fut)
            futures.append(fut)
            latest[fut.task_id] = fut

        for _ in range(300):
            op = rng.random()
            if op < 0.5:
                schedule_one()
            elif op < 0.6:
                s.cancel(rng.randrange(6))
            elif op < 0.7 and futures:
                rng.choice(futures).cancel()
            else:
                await asyncio.sleep(unit * rng.choice([0, 0.25, 0.5, 1]))
            s._check()
            assert cap is None or active <= cap
        await s.aclose(cancel_running=rng.random() < 0.5)
        s._check()
        return futures, started, peak, s.stats()

    futures, started, peak, stats = run(main, LOOPS[loop_name])
    assert all(f.done() for f in futures)
    # (task id, version) is not unique over time: the core forgets an id once
    # nothing of it is left, and numbers its next version from 1 again.
    assert len(started) == len(set(map(id, started))), "a version started twice"
    ran = set(map(id, started))
    for f in futures:
        if id(f) not in ran:
            assert f.cancelled() and f.cancel_reason in ("cancelled", "replaced", "closed")
        elif f.cancelled():
            assert f.cancel_reason in ("cancelled", "closed"), "a started version was replaced"
        else:
            f.exception()  # retrieved, so that asyncio does not log it
    # Versions of one id start in the order they were scheduled.
    rank = {id(f): k for k, f in enumerate(futures)}
    for task_id in range(6):
        ranks = [rank[id(f)] for f in started if f.task_id == task_id]
        assert ranks == sorted(ranks), "versions of one id started out of order"
    assert cap is None or peak <= cap
    assert stats["state"] == "closed" and stats["scheduled"] == len(futures)
    assert stats["completed"] + stats["failed"] <= len(started)
