"""benchmarks/compare_builds.py: builds load side by side; every workload runs, at a tiny size."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from support.impl import NO_EXTENSIONS, compiled_module

pytestmark = pytest.mark.skipif(NO_EXTENSIONS, reason="compares builds of the core")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "compare_builds.py"


def load_script():
    spec = importlib.util.spec_from_file_location("compare_builds", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_second_copy_of_a_build_is_a_module_of_its_own(tmp_path):
    core = compiled_module()
    path = tmp_path / Path(core.__file__).name
    shutil.copyfile(core.__file__, path)  # another build: another file
    copy = load_script().load_core(str(path))
    assert copy is not core and copy.Scheduler is not core.Scheduler
    s = copy.Scheduler(clock=lambda: 0.0)
    s.schedule("a", 0.0, 0, print)
    assert [task.task_id for task in s.pop_due(0.0)] == ["a"]


@pytest.mark.parametrize("workload", ["composite", "composite_single", "drain_pop_due",
                                      "drain_next", "equal_keys"])
def test_every_workload_reports_each_build(workload, capsys):
    path = compiled_module().__file__
    load_script().main([workload, "50", "2", f"one={path}", f"two={path}"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{workload}, n = 50, 2 rounds")
    assert [line.split()[0] for line in lines[1:]] == ["one", "two"]


def test_an_unknown_workload_is_named():
    with pytest.raises(SystemExit, match="unknown workload 'bogus'"):
        load_script().main(["bogus", "50", "1", f"one={compiled_module().__file__}"])
