"""The scheduler halves of the re-entrancy tests: a model and a real scheduler driven by the
same calls, and what both are compared by."""

from __future__ import annotations

from support.scheduler_model import Model as SchedulerModel

IDS = ["a", "b", "c", "d", "n", "r", "z"]


def fn_named(name):
    def fn():
        return name

    return fn


# -- Scheduler ------------------------------------------------------------------


class Claimed:
    """The model's stand-in for a running Task."""

    def __init__(self, task_id, version):
        self.task_id = task_id
        self.version = version


class ModelScheduler:
    """The plain model behind the Scheduler API (ids, versions, order; no heap)."""

    def __init__(self):
        self.m = SchedulerModel()

    def schedule(self, task_id, run_at, priority, fn):
        return self.m.schedule(task_id, run_at, priority, fn)

    def schedule_many(self, items):
        return [self.schedule(*item) for item in items]

    def cancel(self, task_id):
        return self.m.cancel(task_id)

    def cancel_pending(self, task_id):
        return self.m.cancel_pending(task_id)

    def peek(self):
        entry = self.m.head()
        return None if entry is None else (entry.run_at, entry.task_id)

    def next(self, now):
        got = self.m.next(now)
        if got is None or isinstance(got, float):
            return got
        task = self.m.running[got.task_id] = Claimed(got.task_id, got.version)
        return task

    def pop_due(self, now, limit=None):
        out = []
        while limit is None or len(out) < limit:
            task = self.next(now)
            if not isinstance(task, Claimed):
                break
            out.append(task)
        return out

    def finish(self, task):
        assert self.m.running[task.task_id] is task
        self.m.finish(task.task_id)

    complete = release = finish

    def complete_many(self, tasks):
        for task in tasks:
            self.finish(task)

    def fail(self, task, exception):
        self.finish(task)

    def running(self, task_id):
        return self.m.running.get(task_id)


class RealScheduler:
    """The implementation under test, with the model's finishing names."""

    def __init__(self, impl):
        self.s = impl.Scheduler(clock=lambda: 0.0)
        self.tasks = {}

    def __getattr__(self, name):
        return getattr(self.s, name)

    def next(self, now):
        got = self.s.next(now)
        if got is not None and not isinstance(got, float):
            self.tasks[got.task_id] = got
        return got

    def pop_due(self, now, limit=None):
        got = self.s.pop_due(now, limit)
        for task in got:
            self.tasks[task.task_id] = task
        return got

    def running(self, task_id):
        task = self.tasks.get(task_id)
        return task if task is not None and task.state == "running" else None


def base_scheduler(s):
    """Pending a, b, d; r running with a newer version parked; c's entry stale."""
    s.schedule("a", 1.0, 0, fn_named("a"))
    s.schedule("b", 2.0, 5, fn_named("b"))
    s.schedule("c", 1.5, 0, fn_named("c"))
    s.schedule("r", 0.5, 0, fn_named("r"))
    s.next(0.5)
    s.schedule("r", 0.7, 0, fn_named("r2"))
    s.cancel("c")
    s.schedule("d", 3.0, 0, fn_named("d"))
    s.peek()  # parks r's new version


def norm(result):
    if isinstance(result, list):
        return [norm(r) for r in result]
    if hasattr(result, "version") and hasattr(result, "task_id"):
        return ("task", result.task_id, result.version)
    return result
