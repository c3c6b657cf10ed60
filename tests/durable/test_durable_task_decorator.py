"""``@durable.task`` without ``name=`` on a module-level function, as its docstring shows:
the name is the function's ``module:qualname``, taken while the module is still being
imported and checked when it is first stored.

The tasks live in real module files in a temporary directory, imported by name.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from pysched.durable import NotDurable

HANG_GUARD = 60  # seconds: a bound on a hang, not a speed check


def write_module(directory: Path, body: str) -> str:
    """Write ``body`` as a uniquely named module in ``directory``; its name."""
    name = f"tasks_{uuid.uuid4().hex[:12]}"
    (directory / f"{name}.py").write_text(textwrap.dedent(body))
    return name


@pytest.fixture
def import_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``import_module(body)``: write a module and import it by name; forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def load(body: str) -> Any:
        names.append(write_module(tmp_path, body))
        return importlib.import_module(names[-1])

    yield load
    for name in names:
        sys.modules.pop(name, None)


def test_the_documented_form_imports_schedules_and_runs(tmp_path: Path) -> None:
    """The module is imported, its task stored under its import name and run by a worker,
    in a process of its own: the default registry is the one the decorator fills."""
    module = write_module(tmp_path, """
        from pysched import durable

        @durable.task
        def double(x):
            return 2 * x

        @durable.task(queue="mail")
        def mail(x):
            return x
        """)
    script = textwrap.dedent(f"""
        import {module} as tasks
        from pysched import durable

        with durable.DurableScheduler({str(tmp_path / "schedule.db")!r}, max_workers=1,
                                      poll_interval=0.05) as sched:
            future = sched.schedule_in("a", 0, 0, tasks.double, args=[21])
            print(future.result({HANG_GUARD}), sched.row("a")["ref"])
            sched.schedule_in("m", 3600, 0, tasks.mail, args=[1])
            print(sched.row("m")["ref"], sched.row("m")["queue"])
        """)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == [f"42 {module}:double", f"{module}:mail mail", ""]


def test_the_import_name_is_checked_when_first_stored(import_module: Any) -> None:
    """A name bound to something else than the registered function (another decorator's
    wrapper around it) cannot bring that function back after a restart: the first
    reference refuses it, naming why; the plain task beside it is stored by its name."""
    tasks = import_module("""
        import functools
        from pysched.durable import TaskRegistry

        registry = TaskRegistry()

        @registry.task
        def plain(x):
            return x

        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*args):
                return fn(*args)
            return wrapper

        @logged
        @registry.task
        def wrapped(x):
            return x
        """)
    registry = tasks.registry
    assert registry.reference(tasks.plain) == f"{tasks.__name__}:plain"
    assert registry.resolve(f"{tasks.__name__}:plain") is tasks.plain
    with pytest.raises(NotDurable, match="does not give it back"):
        registry.reference(tasks.wrapped.__wrapped__)
    with pytest.raises(NotDurable, match="does not give it back"):
        registry.reference(tasks.wrapped.__wrapped__)  # refused every time, not once


def test_functions_no_restart_can_find_are_still_refused_when_registered(
        import_module: Any) -> None:
    """What has no importable name is refused at once, at registration, naming why."""
    tasks = import_module("""
        from pysched.durable import TaskRegistry

        registry = TaskRegistry()

        def make():
            def nested():
                pass
            return nested

        def in_main():
            pass

        in_main.__module__ = "__main__"  # as a script's own functions are
        """)
    registry = tasks.registry
    for fn, why in [(tasks.make(), "inside a function"), (lambda: None, "lambda"),
                    (print, "cannot be found again")]:
        with pytest.raises(NotDurable, match=why):
            registry.register(fn)
    with pytest.raises(NotDurable, match="__main__"):
        registry.register(tasks.in_main)
    assert registry.serves().names == ()
