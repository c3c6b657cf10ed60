"""Tests of the benchmark code itself (pysched.bench), at tiny sizes.

Nothing here asserts a speed: figures are checked for shape and consistency,
the baselines for doing the same work as the core, the log-n check's logic on
made-up figures.
"""

from __future__ import annotations

import io
import json
import math
import re
import sys
from collections.abc import Callable, Hashable
from functools import partial
from heapq import heappush
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysched.bench import __main__ as cli
from pysched.bench import baselines, draining, growth, plot, progress, report, scheduling
from pysched.bench._timing import measure, measure_in_turns
from pysched.bench.bounded_baselines import COMPACT_FLOOR, TwoHeapsQueue
from pysched.bench.bounded_workloads import churn_queue
from pysched.bench.competitors import (
    CORE,
    Competitor,
    core_available,
    drain_baseline,
    drain_versioned,
)
from pysched.bench.workloads import WORKLOADS, Workload, run_order

from support.examples import examples

TINY = ["--sizes", "20,200", "--quiet"]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


# --- the command, end to end ----------------------------------------------------------------


@pytest.mark.slow  # a whole run of the command
def test_cli_runs_every_section_end_to_end(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "bench.json"
    code, out, err = run_cli([*TINY, "--json", str(out_json)], capsys)
    assert code == 0, err
    for title in ("composite:", "cancel-heavy:", "replace-heavy:", "equal keys (FIFO):",
                  "bounded-queue churn:", "one-shot top-k", "memory with", "runtime throughput:",
                  "runtime start lateness:"):
        assert title in out
    for label in ("heapq, versioned", "heapq, two heaps", "pure twin", "heapq, entry finder",
                  "sched", "PriorityQueue", "heapq.nsmallest"):
        assert label in out
    assert "issue" not in out and "target" not in out  # figures for users, not for the tracker
    assert ("drain: claim, run and complete" in out) == bool(draining.drainers())
    if core_available():
        assert re.search(r"^  pysched +[\d,]+ ", out, re.MULTILINE)  # the core's line
        assert re.search(r"\d\.\dx", out)  # speedup cells
        assert "log-n check" in out
    else:  # a pure install: said once on stderr; the log-n check is the core's only
        assert "compiled core does not import" in err
        assert "log-n check" not in out
    assert out_json.is_file()


@pytest.mark.slow  # a whole run of the command
def test_progress_bar_goes_to_stderr_one_line_per_step(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["--sizes", "20,200", "--sections", "scheduler"], capsys)
    assert code == 0
    lines = err.splitlines()
    if not core_available():  # a pure install: the note comes before the bar
        assert lines.pop(0).startswith("note: pysched's compiled core does not import")
    assert lines[0].startswith("[") and "1/" in lines[0]
    assert lines[-1].endswith("done")
    total = int(lines[-1].split("/")[1].split()[0])
    assert len(lines) == total + 1  # not a terminal: a line per step, then the final one
    assert not any(line.startswith("[") for line in out.splitlines())  # no bar in the report


@pytest.mark.slow  # a whole run of the command
def test_json_has_the_promised_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "out.json"
    code, _, _ = run_cli(["--sizes", "20,200", "--sections", "scheduler,bounded", "--quiet",
                          "--json", str(path)], capsys)
    assert code == 0
    doc = json.loads(path.read_text())
    machine = doc["machine"]
    for field in ("platform", "cpu_model", "cores", "python", "pysched", "date"):
        assert machine[field], field
    assert machine["cores"] >= 1
    assert doc["mode"] == "custom" and doc["config"]["sizes"] == [20, 200]
    rows = doc["rows"]
    assert {row["workload"] for row in rows} == {w.key for w in WORKLOADS} | {"churn", "top_k"}
    for row in rows:
        assert row["ns_per_op"] == pytest.approx(row["seconds"] * 1e9 / row["ops"])
        assert row["seconds"] in row["samples"] or len(row["samples"]) > 1
    composite = [r for r in rows if r["workload"] == "composite" and r["size"] == 200]
    assert composite[0]["ops"] == 200 + 20 + 20 + 180  # schedules, replaces, cancels, runs
    if core_available():
        core = {(r["workload"], r["size"]): r["ns_per_op"] for r in rows if r["competitor"] == CORE}
        for entry in doc["speedups"]:
            mine = next(r for r in rows if (r["workload"], r["size"], r["competitor"])
                        == (entry["workload"], entry["size"], entry["competitor"]))
            assert entry["speedup"] == pytest.approx(
                mine["ns_per_op"] / core[entry["workload"], entry["size"]])
        assert doc["speedups"]
    assert set(doc["growth"]) >= {"composite", "equal keys (FIFO)"} or not core_available()
    assert "growth_reference_heapq" in doc and "targets" not in doc


def test_only_times_the_competitors_named(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "out.json"
    code, out, _ = run_cli(["--sizes", "20,200", "--sections", "scheduler,bounded,memory",
                            "--only", "versioned,two_heaps,nsmallest", "--quiet",
                            "--json", str(path)], capsys)
    assert code == 0
    rows = json.loads(path.read_text())["rows"]
    assert {row["competitor"] for row in rows} == {"versioned", "two_heaps", "nsmallest"}
    assert "pure twin" not in out and "SortedList" not in out


def test_workloads_runs_only_the_workloads_named(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "out.json"
    code, _, _ = run_cli(["--sizes", "20,200", "--sections", "scheduler", "--only", "versioned",
                          "--workloads", "composite_single,equal_keys", "--quiet",
                          "--json", str(path)], capsys)
    assert code == 0
    rows = json.loads(path.read_text())["rows"]
    assert {row["workload"] for row in rows if "workload" in row} == {"composite_single",
                                                                       "equal_keys"}


def test_an_unknown_workload_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--workloads", "composite,nope"])
    assert exit_info.value.code == 2
    assert "nope" in capsys.readouterr().err


def test_bad_sizes_and_sections_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["--sizes", "ten"], ["--sections", "scheduler,nope"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(args)
        assert exit_info.value.code == 2
    assert "nope" in capsys.readouterr().err


def test_sizes_stays_out_of_help() -> None:
    text = cli.parser().format_help()
    assert "--full" in text and "--json" in text and "--plot" in text
    assert "--sections" in text and "--only" in text  # the docs use them
    assert "--sizes" not in text  # for tests


# --- matplotlib -----------------------------------------------------------------------------


def test_missing_matplotlib_gives_a_clear_message_before_measuring(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    target = tmp_path / "plot.png"
    code, out, err = run_cli(["--plot", str(target), "--full"], capsys)
    assert code == 2
    assert "matplotlib" in err and "pip install 'pysched[plot]'" in err
    assert out == "" and not target.exists()  # failed at once: --full was never run
    with pytest.raises(plot.PlotUnavailable, match="matplotlib"):
        plot.require_matplotlib()


def test_plot_is_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rows = [{"section": section, "workload": workload, "param": param, "size": size,
             "competitor": key, "label": key, "ns_per_op": cost * size ** 0.1}
            for section, workload, param in (("scheduler", "composite", "n"),
                                             ("bounded", "churn", "capacity"))
            for size in (100, 1_000) for key, cost in ((CORE, 100.0), ("py", 900.0))]
    target = tmp_path / "plot.png"
    plot.draw(rows, target, "title")
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="nothing to plot"):
        plot.draw(rows[:1], tmp_path / "none.png", "title")


def test_plot_panels_need_two_sizes() -> None:
    rows = [{"section": "scheduler", "workload": "composite", "param": "n", "size": size,
             "competitor": CORE, "label": "pysched", "ns_per_op": 1.0} for size in (10, 100)]
    assert [title for title, _, _ in plot.panels(rows)] == ["composite"]
    assert plot.panels(rows[:1]) == []


# --- the log-n check ------------------------------------------------------------------------

SIZES = (1_000, 10_000, 100_000, 1_000_000)


def costs(per_op: object) -> dict[int, float]:
    return {n: per_op(n) for n in SIZES}  # type: ignore[operator]


def test_log_growth_passes() -> None:
    result = growth.check(costs(lambda n: 50 * math.log2(n)))
    assert result is not None and result.ok
    assert result.ratios == pytest.approx((1, 1, 1, 1))
    assert result.exponent == pytest.approx(math.log(2) / math.log(1000), rel=0.05)


def test_log_growth_with_cache_penalty_within_factor_passes() -> None:
    # ns/op / log2 n rising 2.5x as the heap leaves the caches: still within 3.
    penalty = {1_000: 1.0, 10_000: 1.5, 100_000: 2.2, 1_000_000: 2.5}
    result = growth.check(costs(lambda n: 50 * math.log2(n) * penalty[n]))
    assert result is not None and result.ok and result.worst == pytest.approx(2.5)


@pytest.mark.parametrize("power", [1 / 3, 1 / 2, 1])
def test_polynomial_growth_fails(power: float) -> None:
    result = growth.check(costs(lambda n: 5 * n ** power))
    assert result is not None and not result.ok
    assert result.exponent == pytest.approx(power)


def test_constant_cost_passes_and_ratio_is_relative_to_smallest() -> None:
    result = growth.check(costs(lambda n: 100.0))
    assert result is not None and result.ok
    assert result.ratios[0] == 1 and result.ratios[-1] == pytest.approx(10 / 20)


def test_too_narrow_a_span_is_not_checked() -> None:
    assert growth.check({1_000: 1.0, 10_000: 100.0}) is None
    assert growth.check({1_000: 1.0}) is None
    assert growth.check({1_000: 1.0, 100_000: 2.0}) is not None


def test_growth_checks_use_only_the_core_rows() -> None:
    rows = [{"section": "scheduler", "workload": "composite", "size": n, "competitor": key,
             "ns_per_op": cost(n)}
            for n in SIZES for key, cost in ((CORE, lambda n: math.log2(n)), ("py", float))]
    checks = cli.growth_checks(rows)
    assert set(checks) == {"composite"}
    assert checks["composite"] is not None and checks["composite"].ok  # the py rows are O(n)


# --- competitors do the same work -------------------------------------------------------------


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.key)
def test_every_competitor_runs_the_same_tasks_in_order(workload: Workload) -> None:
    competitors = scheduling.scheduler_competitors()
    scheduling.verify(workload, competitors, 300)
    first = competitors[0]
    order = run_order(workload, first.make, first.drain, 300)
    if workload.key == "equal_keys":
        assert order == list(range(300))
    else:  # each id runs at most once; some ran
        assert len(set(order)) == len(order) > 0


class LastInFirstOut(baselines.HeapqTuples):
    """A broken baseline: equal keys run newest first."""

    def schedule(self, task_id: Hashable, run_at: float, priority: int,
                 fn: Callable[[], Any]) -> None:
        heappush(self._heap, (run_at, -priority, -next(self._counter), fn))

    schedule_many = baselines.schedule_each


def test_verify_catches_a_competitor_that_reorders() -> None:
    broken = Competitor("lifo", "LIFO", LastInFirstOut, drain_baseline)
    honest = scheduling.scheduler_competitors()[:1]
    equal = next(w for w in WORKLOADS if w.key == "equal_keys")
    with pytest.raises(scheduling.Disagreement, match="LIFO"):
        scheduling.verify(equal, [*honest, broken], 50)


def test_sched_is_capped_where_it_cancels() -> None:
    sched_comp = next(c for c in scheduling.scheduler_competitors(1_000) if c.key == "sched")
    assert sched_comp.runs_at(1_000, cancels=True)
    assert not sched_comp.runs_at(1_001, cancels=True)
    assert sched_comp.runs_at(10**6, cancels=False)


@pytest.mark.parametrize("cls", [baselines.HeapqScheduler, baselines.SchedScheduler,
                                 baselines.PriorityQueueScheduler, baselines.SortedListScheduler])
def test_baselines_replace_and_cancel_like_the_core(cls: type) -> None:
    if cls is baselines.SortedListScheduler:
        pytest.importorskip("sortedcontainers")
    ran: list[str] = []
    s = cls()
    s.schedule("a", 2.0, 0, lambda: ran.append("a1"))
    s.schedule("b", 1.0, 0, lambda: ran.append("b"))
    s.schedule("a", 0.5, 0, lambda: ran.append("a2"))  # replaces a1
    s.schedule("c", 1.0, 5, lambda: ran.append("c"))  # same time as b, higher priority
    s.schedule("d", 1.0, 5, lambda: ran.append("d"))  # equal to c: after it
    assert s.cancel("b") and not s.cancel("b") and not s.cancel("zzz")
    s.drain()
    assert ran == ["a2", "c", "d"]


# --- the main baselines give the core's results on the same inputs ---------------------------

scheduler_item = st.tuples(st.integers(0, 30), st.integers(0, 20), st.integers(0, 3))
scheduler_ops = st.lists(st.one_of(
    st.tuples(st.just("schedule"), scheduler_item),
    st.tuples(st.just("schedule_many"), st.lists(scheduler_item, max_size=80)),
    st.tuples(st.just("cancel"), st.integers(0, 30)),
    st.tuples(st.just("next"), st.integers(0, 4)),
    st.tuples(st.just("pop_due"), st.integers(0, 4), st.none() | st.integers(0, 5))),
    max_size=300)


# impl is a module, the same for every example.
@settings(max_examples=examples(80), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=scheduler_ops)
def test_heapq_versioned_claims_what_the_core_claims(impl: Any, ops: list[tuple[Any, ...]]) -> None:
    """Every call answers as the core does; a claimed task is completed at once.

    Batches too: ``schedule_many`` (heapified or pushed, ids repeated within a
    batch or already pending) and ``pop_due`` claim what the core claims.
    """
    core, plain = impl.Scheduler(), baselines.HeapqVersioned()
    now = 0.0

    def same_claim(task: Any, entry: Any) -> None:
        run_at, neg_priority, _, task_id, fn = entry
        assert (task.task_id, task.run_at, task.priority, task.fn) == (
            task_id, run_at, -neg_priority, fn)
        core.complete(task)

    for step, (op, *args) in enumerate(ops):
        if op == "schedule":
            task_id, run_at, priority = args[0]
            fn = partial(int, step)  # tells the versions apart
            core.schedule(task_id, float(run_at), priority, fn)
            plain.schedule(task_id, float(run_at), priority, fn)
        elif op == "schedule_many":
            items = [(task_id, float(run_at), priority, partial(int, step, k))
                     for k, (task_id, run_at, priority) in enumerate(args[0])]
            core.schedule_many(items)
            plain.schedule_many(items)
        elif op == "cancel":
            assert core.cancel(args[0]) == plain.cancel(args[0])
        elif op == "next":
            now += args[0]
            task, entry = core.next(now), plain.next(now)
            if isinstance(task, impl.Task):
                assert isinstance(entry, tuple)
                same_claim(task, entry)
            else:
                assert task == entry  # the same wait, or None for both
        else:
            now += args[0]
            tasks, entries = core.pop_due(now, args[1]), plain.pop_due(now, args[1])
            assert len(tasks) == len(entries)
            for task, entry in zip(tasks, entries, strict=True):
                same_claim(task, entry)
        assert len(core) == len(plain)


@pytest.mark.parametrize("cls", [baselines.HeapqScheduler, baselines.HeapqVersioned,
                                 baselines.HeapqTuples, baselines.SchedScheduler,
                                 baselines.PriorityQueueScheduler,
                                 baselines.SortedListScheduler])
@pytest.mark.parametrize("pending", [0, 5, 50])
def test_schedule_many_runs_what_schedule_one_by_one_runs(cls: type, pending: int) -> None:
    """A batch, heapified or pushed, replaces and orders exactly as its items one by one."""
    if cls is baselines.SortedListScheduler:
        pytest.importorskip("sortedcontainers")
    replaces = cls is not baselines.HeapqTuples  # plain tuples keep no ids
    ran: dict[str, list[int]] = {"batch": [], "loop": []}
    for way in ran:
        sched = cls()
        record = ran[way].append
        for i in range(pending):
            sched.schedule(i, float(i % 7), i % 3, partial(record, 1_000 + i))
        items = [((i * 7) % 40 if replaces else i, float(i % 5), i % 2, partial(record, i))
                 for i in range(30)]
        if way == "batch":
            sched.schedule_many(items)
        else:
            for item in items:
                sched.schedule(*item)
        if isinstance(sched, baselines.HeapqVersioned):
            drain_versioned(sched)
        else:
            sched.drain()
    assert ran["batch"] == ran["loop"] and ran["batch"]


def test_heapq_versioned_rebuilds_when_stale_entries_outnumber_live_ones() -> None:
    plain = baselines.HeapqVersioned()
    for i in range(1_000):
        plain.schedule(i, float(i), 0, int)
    for i in range(900):
        assert plain.cancel(i)
    assert len(plain) == 100 and len(plain._heap) <= 200
    for _ in range(3):
        for i in range(900, 1_000):
            plain.schedule(i, 0.5, 0, int)  # replaced: the old entries turn stale
    assert len(plain._heap) <= 200
    assert [plain.next(1e9)[3] for _ in range(100)] == list(range(900, 1_000))  # type: ignore[index]
    assert plain.next(1e9) is None


queue_ops = st.lists(st.one_of(st.tuples(st.just("push"), st.integers(0, 10)),
                               st.tuples(st.just("pop"))), max_size=400)


@settings(max_examples=examples(80), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(capacity=st.integers(0, 8), ops=queue_ops)
def test_two_heaps_admit_evict_and_pop_as_the_core(impl: Any, capacity: int,
                                                   ops: list[tuple[Any, ...]]) -> None:
    """Each push drops what the core's push_or_evict drops; each pop gives the same value."""
    core, plain = impl.StableBoundedPriorityQueue(capacity), TwoHeapsQueue(capacity)
    for step, (op, *args) in enumerate(ops):
        if op == "push":
            dropped = core.push_or_evict(args[0], step)
            assert plain.push(args[0], step) == (
                None if dropped is None else (dropped.priority, dropped.seq, dropped.value))
        elif len(core):
            assert plain.pop() == core.pop()
        else:
            with pytest.raises(IndexError):
                plain.pop()
        assert plain.snapshot() == core.snapshot()
        # Dead nodes are bounded: memory follows the capacity.
        assert len(plain._best) <= 2 * len(plain) + COMPACT_FLOOR
        assert len(plain._worst) <= 2 * len(plain) + COMPACT_FLOOR


def test_two_heaps_stay_bounded_under_churn() -> None:
    queue = churn_queue(TwoHeapsQueue, 100, list(range(5_000, 0, -1)))
    assert len(queue) == 99  # the last push is followed by a pop
    assert len(queue._best) <= 2 * 100 + COMPACT_FLOOR
    assert len(queue._worst) <= 2 * 100 + COMPACT_FLOOR


# --- draining with pop_due ------------------------------------------------------------------


def test_every_drain_runs_the_same_tasks_in_order() -> None:
    ways = draining.drainers()
    if not ways:
        pytest.skip("this core has no pop_due")
    draining.verify(ways, 300)
    order: list[int] = []
    key, _, make, drain = ways[0]
    assert key == CORE
    drain(draining.filled(make, 300, 0, [partial(order.append, i) for i in range(300)]))
    assert sorted(order) == list(range(300))


def drain_backwards(sched: Any) -> None:
    """A broken drain: claims everything, then runs it last first."""
    entries = []
    while isinstance(entry := sched.next(1e300), tuple):
        entries.append(entry)
    for entry in reversed(entries):
        entry[4]()


def test_drain_verify_catches_a_drain_that_reorders() -> None:
    honest = ("v", "honest", baselines.HeapqVersioned, drain_versioned)
    backwards = ("b", "backwards", baselines.HeapqVersioned, drain_backwards)
    draining.verify([honest, honest], 50)
    with pytest.raises(scheduling.Disagreement, match="backwards"):
        draining.verify([honest, backwards], 50)


def test_drain_section_is_left_out_when_the_core_has_no_pop_due(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    if not core_available():
        pytest.skip("no compiled core")
    import pysched._core

    monkeypatch.setattr(pysched._core, "Scheduler", type("Scheduler", (), {}))
    assert draining.drainers() == [] and draining.steps(100, 0.0) == []
    code, out, err = run_cli(["--sizes", "20", "--sections", "drain", "--quiet"], capsys)
    assert code == 0 and "no pop_due" in err and "drain:" not in out


# --- the report ------------------------------------------------------------------------------


def test_tables_have_a_line_per_competitor_with_its_speedup() -> None:
    rows = [{"size": size, "competitor": key, "label": label, "ns_per_op": ns}
            for key, label, costs in ((CORE, "pysched", (100.0, 200.0)),
                                      ("versioned", "heapq, versioned", (300.0, 1_000.0)),
                                      ("sched", "sched", (5_000.0, None)))
            for size, ns in zip((1_000, 10_000), costs, strict=True) if ns is not None]
    lines = report.speedup_table(rows, "title", "n", "sched is capped")
    assert lines[0] == "title" and "1,000" in lines[1] and "10,000" in lines[1]
    core, versioned, sched = lines[3:6]
    assert core.split() == ["pysched", "100", "200"]
    assert versioned.split() == ["heapq,", "versioned", "300", "3.0x", "1,000", "5.0x"]
    assert sched.split() == ["sched", "5,000", "50.0x", "-"]
    assert lines[6] == "  -: sched is capped"


def test_memory_table_shows_bytes_and_the_share_left_after_draining() -> None:
    rows = [{"size": 1_000_000, "competitor": key, "label": label, "bytes_per_task": per_task,
             "after_drain": share}
            for key, label, per_task, share in ((CORE, "pysched", 90.0, 0.05),
                                                ("py", "pure twin", 243.0, 0.185))]
    lines = report.memory_table(rows)
    assert "1,000,000 tasks pending" in lines[0]
    assert lines[2].split() == ["pysched", "90", "1.0x", "5.0%"]
    assert lines[3].split() == ["pure", "twin", "243", "2.7x", "18.5%"]


# --- timing, progress, loading --------------------------------------------------------------


def test_measure_repeats_within_bounds_and_returns_the_result() -> None:
    calls: list[int] = []

    def work() -> int:
        calls.append(1)
        return 7

    once = measure(work, budget=0.0)
    assert once.samples == (once.seconds,) and once.result == 7 and len(calls) == 1
    calls.clear()
    many = measure(work, budget=1.0, max_repeats=5)
    assert len(many.samples) == 5 and len(calls) == 6  # a warm-up, then the repeats
    assert min(many.samples) <= many.seconds <= max(many.samples)


def test_measure_counts_a_long_warm_up_as_one_of_three_samples() -> None:
    durations = iter([5.0, 1.0, 3.0])  # the warm-up is over budget, then two repeats
    clock = {"now": 0.0}

    def timer() -> float:
        return clock["now"]

    def work() -> None:
        clock["now"] += next(durations)

    long = measure(work, budget=1.0, timer=timer)
    assert long.samples == (5.0, 1.0, 3.0) and long.seconds == 3.0 and long.warmup == 5.0


def test_measure_in_turns_alternates_fresh_runs() -> None:
    order: list[str] = []
    clock = {"now": 0.0}

    def build(name: str) -> Callable[[], Callable[[], int]]:
        def make() -> Callable[[], int]:
            def run() -> int:
                order.append(name)
                clock["now"] += 2.0  # over budget: a warm-up counts, two more turns each
                return len(name)
            return run
        return make

    a, b = measure_in_turns([build("a"), build("bb")], budget=1.0, timer=lambda: clock["now"])
    assert order == ["a", "bb", "a", "bb", "a", "bb"]
    assert a.samples == b.samples == (2.0, 2.0, 2.0) and (a.result, b.result) == (1, 2)


def test_progress_inline_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    bar = progress.Progress(stream)
    bar.start(2)
    bar.advance("first")
    bar.advance("second")
    bar.finish()
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.count("\n") == 1 and "2/2" in text
