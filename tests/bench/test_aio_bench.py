"""benchmarks/bench_aio.py runs, on each loop, and compares what it says it compares."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from support.aio import LOOPS

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_aio.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_aio", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_every_workload_runs_to_the_end_in_turns(capsys, loop):
    if loop == "uvloop":
        pytest.importorskip("uvloop", reason="uvloop is not installed")
    load_bench().main(["--n", "300", "--cap", "7", "--span", "0.01", "--repeats", "2",
                       "--loop", loop])
    out = capsys.readouterr().out
    assert f"{loop} loop" in out and "median of 2 runs" in out
    for title in ["300 plain callables due now", "300 plain callables due over 0.01 s",
                  "300 no-op coroutines, at most 7 at a time"]:
        assert title in out
    assert out.count("AsyncScheduler / this") == 3


def test_each_workload_reaches_its_last_call():

    bench = load_bench()
    from pysched import _scheduler_py

    for workload in [lambda: bench.callables_scheduler(50, 0.0, _scheduler_py.Scheduler),
                     lambda: bench.callables_call_at(50, 0.001),
                     lambda: bench.capped_scheduler(50, 3, _scheduler_py.Scheduler),
                     lambda: bench.capped_semaphore(50, 3)]:
        loop = LOOPS["asyncio"]()
        try:  # each awaits a Future that only the 50th call resolves
            assert loop.run_until_complete(workload()) >= 0.0
        finally:
            loop.close()


def test_context_vars_reach_every_workload():
    import asyncio
    import contextvars

    bench = load_bench()

    async def workload():
        return float(len(contextvars.copy_context()))

    base = bench._run(workload, asyncio.new_event_loop)  # what the caller's context holds
    assert bench._run(workload, asyncio.new_event_loop, 3) == base + 3
