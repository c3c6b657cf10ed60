"""Run one sequence of operations on the Cython core and the pure twin side by side.

An operation is a tuple ``(name, *args)`` whose arguments are the values to
pass (good or bad). After every operation both schedulers must give the same
outcome (the same return value, or the same exception type and message),
``_check()`` must hold on both, and their sizes, ``stats()``, the ``state()``
of every id seen so far and the state of every task handed out so far must
agree. Any difference raises ``Divergence``; a crash of the compiled core kills
the process, which the fuzzer reports as a crash.

Used by tests/fuzz/fuzz_core.py (atheris, coverage-guided) and by
tests/core/test_fuzz_core.py (hypothesis, and the saved corpus as regressions).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from .spreads import spread_cancels, spread_items

# One message differs by design: the compiled core types ``task`` in the
# signatures of complete() and fail(), so Cython words that TypeError itself
# (and checks it before ``exception``). Only the type must then agree.
CYTHON_ARGUMENT_TYPE_ERROR = "Argument 'task' has incorrect type"


class Divergence(AssertionError):
    """The two implementations disagreed, or an invariant broke."""


class Clock:
    """A settable clock; a garbage reading tests next()'s check of clock()."""

    def __init__(self) -> None:
        self.now: object = 0.0

    def __call__(self) -> object:
        return self.now


class Side:
    """One implementation's scheduler plus what the run handed out."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.clock = Clock()
        self.sched = module.Scheduler(clock=self.clock)
        self.other = module.Scheduler()  # source of foreign tasks
        self.tasks: list[Any] = []

    def apply(self, op: tuple) -> Any:
        name, *args = op
        s = self.sched
        if name == "schedule":
            return s.schedule(*args)
        if name == "cancel":
            return s.cancel(args[0])
        if name == "state":
            return s.state(args[0])
        if name == "next":
            result = s.next() if args[0] is None else s.next(now=args[0])
            if isinstance(result, self.module.Task):
                self.tasks.append(result)
            return result
        if name == "set_clock":
            self.clock.now = args[0]
            return None
        if name == "complete":
            return s.complete(self._task(args[0]))
        if name == "fail":
            return s.fail(self._task(args[0]), args[1])
        if name == "complete_bad":
            return s.complete(args[0])
        if name == "fail_bad":
            return s.fail(args[0], args[1])
        if name == "foreign":
            self.other.schedule("x", 0.0, 0, print)
            task = self.other.next(now=0.0)
            try:
                return s.complete(task)
            finally:
                self.other.complete(task)
        if name == "burst":
            count, base, run_at = args
            return [s.schedule(("burst", base + i), run_at, i % 3, print) for i in range(count)]
        if name == "cancel_burst":
            count, base = args
            return [s.cancel(("burst", base + i)) for i in range(count)]
        if name == "drain":
            return self._drain(args[0])
        if name == "peek":
            return s.peek()
        if name == "cancel_pending":
            return s.cancel_pending(args[0])
        if name == "release":
            return s.release(self._task(args[0]))
        if name == "pop_due":
            result = s.pop_due(args[0], args[1])
            self.tasks.extend(result)
            return result
        if name == "schedule_many":
            return s.schedule_many(args[0])
        if name == "hold":
            return self._hold(*args)
        if name == "spread":
            shape, count, base, seed = args
            return [s.schedule(task_id, run_at, priority, print)
                    for task_id, run_at, priority in spread_items(shape, count, base, seed)]
        if name == "spread_many":
            shape, count, base, seed = args
            return s.schedule_many([(task_id, run_at, priority, len) for task_id, run_at, priority
                                    in spread_items(shape, count, base, seed)])
        if name == "cancel_spread":
            count, base, seed = args
            return [s.cancel(task_id) for task_id in spread_cancels(count, base, seed)]
        raise ValueError(f"unknown operation {name!r}")

    def _hold(self, count: int, now: float, later: float) -> list[Any]:
        """Claim up to ``count`` due tasks, keep them running and schedule each id again.

        The new versions come due while the old ones run, so they park.
        """
        claimed = self.sched.pop_due(now, count)
        self.tasks.extend(claimed)
        return [self.sched.schedule(task.task_id, later, task.priority, task.fn)
                for task in claimed]

    def _task(self, k: int) -> Any:
        return self.tasks[k % len(self.tasks)] if self.tasks else None

    def _drain(self, now: float) -> list[Any]:
        """Claim and complete everything due at ``now``."""
        out = []
        while True:
            result = self.sched.next(now=now)
            if not isinstance(result, self.module.Task):
                return out
            self.tasks.append(result)
            self.sched.complete(result)
            out.append(result)


def _outcome(side: Side, op: tuple) -> tuple:
    try:
        return ("ok", side.apply(op))
    except Divergence:
        raise
    except Exception as exc:  # every error is an outcome to compare
        return ("raise", type(exc), str(exc))


def _same_value(a: Any, b: Any, a_side: Side, b_side: Side) -> bool:
    if isinstance(a, a_side.module.Task) and isinstance(b, b_side.module.Task):
        return (_task_view(a) == _task_view(b) and a.fn is b.fn
                and type(a.task_id) is type(b.task_id)
                and (a.task_id is b.task_id or a.task_id == b.task_id))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(
            _same_value(x, y, a_side, b_side) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def _task_view(task: Any) -> tuple:
    exc = task.exception
    return (task.version, task.run_at, task.priority, task.state, task.cancel_requested,
            None if exc is None else id(exc))


class Differential:
    """Both implementations, stepped together; ``step()`` raises Divergence on any difference."""

    def __init__(self, compiled: Any, pure: Any) -> None:
        self.c = Side(compiled)
        self.py = Side(pure)
        self.ids: list[object] = []  # every hashable id passed so far, to compare state()
        self.steps = 0

    def run(self, ops: Iterable[tuple]) -> None:
        for op in ops:
            self.step(op)

    def step(self, op: tuple) -> None:
        self.steps += 1
        got_c = _outcome(self.c, op)
        got_py = _outcome(self.py, op)
        where = f"step {self.steps}: {op!r}"
        if got_c[0] != got_py[0]:
            raise Divergence(f"{where}: c {got_c!r} but py {got_py!r}")
        if got_c[0] == "raise":
            loose = got_c[1] is TypeError and got_c[2].startswith(CYTHON_ARGUMENT_TYPE_ERROR)
            if got_c[1] is not got_py[1] or (not loose and got_c[2] != got_py[2]):
                raise Divergence(f"{where}: c raised {got_c[1:]!r} but py {got_py[1:]!r}")
        elif not _same_value(got_c[1], got_py[1], self.c, self.py):
            raise Divergence(f"{where}: c returned {got_c[1]!r} but py {got_py[1]!r}")
        self._remember_ids(op)
        self.compare_state(where)

    def _remember_ids(self, op: tuple) -> None:
        if op[0] in ("schedule", "cancel", "cancel_pending", "state") and len(self.ids) < 64:
            try:
                hash(op[1])
            except Exception:
                return
            if not any(op[1] is known for known in self.ids):
                self.ids.append(op[1])

    def compare_state(self, where: str) -> None:
        for side in (self.c, self.py):
            try:
                side.sched._check()
            except AssertionError as exc:
                raise Divergence(f"{where}: {side.module.__name__} _check failed: {exc}") from exc
        c, py = self.c.sched, self.py.sched
        if len(c) != len(py) or c.stats() != py.stats():
            raise Divergence(f"{where}: c {len(c)} {c.stats()} but py {len(py)} {py.stats()}")
        for task_id in self.ids:
            if c.state(task_id) != py.state(task_id):
                raise Divergence(f"{where}: state({task_id!r}) c {c.state(task_id)!r} "
                                 f"py {py.state(task_id)!r}")
        if [_task_view(t) for t in self.c.tasks] != [_task_view(t) for t in self.py.tasks]:
            raise Divergence(f"{where}: handed-out tasks differ")


def run_differential(compiled: Any, pure: Any, ops: Sequence[tuple]) -> Differential:
    """Run ``ops`` on both implementations; raise Divergence on the first difference."""
    diff = Differential(compiled, pure)
    diff.run(ops)
    # Finish with everything due and finished: the end state must agree too.
    diff.step(("drain", 1e308))
    return diff
