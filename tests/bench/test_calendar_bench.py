"""benchmarks/bench_calendar.py: its accounting, and a run at a tiny size so it cannot rot."""

from __future__ import annotations

import math
import runpy
from pathlib import Path

import pytest

from pysched.bench import calendar_workloads as calendar
from pysched.bench.calendar_workloads import Jobs, Recording

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_calendar.py"
# Seconds to add the series before the first fire time: on a loaded machine adding
# even 300 (and the collections around it) can take seconds; a wait, not a check.
LEAD = 3.0


def recording(runs, start):
    return Recording(runs, start, cpu=0.5, runs_in_cpu_window=5, setup_wall=0.0, setup_cpu=0.0,
                     drops={"skipped.overlap": 2}, version="x")


def test_each_fault_of_a_run_is_counted_apart():
    # series 0: 0.5, 1.5, 2.5, 3.5 s into the window; series 1: 1.25, 3.25 s
    jobs = Jobs(periods=[1, 2], phases=[0.5, 1.25], seconds=4)
    start = 100.0
    runs = [(0, 100.5, 100.6),
            (0, 101.5, 101.502),
            (0, 101.5, 101.7),             # the same fire time again
            (0, 102.5, 102.49),            # started before its fire time
            (1, 101.252, 101.26),          # 2 ms off its place: shifted, still counted
            (1, 103.55, 103.6),            # not one of series 1's fire times
            (1, 105.25, 105.3)]            # after the window: not counted
    figures = calendar.summarize(jobs, runs, recording(runs, start))
    assert jobs.expected() == figures["expected"] == 6
    assert figures["run"] == 4
    assert figures["missing"] == 2  # 3.5 s of series 0, 3.25 s of series 1
    assert figures["duplicate"] == 1
    assert figures["early"] == 1
    assert figures["off_grid"] == 1
    assert figures["shifted"] == 1 and figures["shift_max_ms"] == pytest.approx(2.0)
    assert figures["dropped"] == 2
    assert figures["lateness_max_ms"] == pytest.approx(100.0)
    assert figures["cpu_per_fire_us"] == pytest.approx(1e5)
    assert figures["tail_s"] == 0.0


def test_the_jobs_are_periods_of_one_to_sixty_seconds_with_fire_times_off_the_window_edge():
    jobs = calendar.make_jobs(600, 7, seed=3)
    assert sorted(set(jobs.periods)) == list(range(1, 61))
    assert jobs == calendar.make_jobs(600, 7, seed=3)
    brute = 0
    for period, phase in zip(jobs.periods, jobs.phases, strict=True):
        assert 0.05 <= phase % 1 <= 0.95 and phase < period
        brute += sum(1 for k in range(8) if phase + k * period < 7)
    assert jobs.expected() == brute


def test_pysched_runs_every_fire_time_once_and_never_early():
    figures = calendar.run_turn(calendar.PYSCHED, calendar.make_jobs(300, 1), workers=2,
                                lead=LEAD, drain=60.0)
    assert figures["expected"] > 0
    assert figures["run"] == figures["expected"]
    assert figures["missing"] == figures["duplicate"] == figures["early"] == 0
    assert figures["off_grid"] == figures["dropped"] == 0
    assert not math.isnan(figures["lateness_p99_ms"])


def test_apscheduler_names_every_fire_time_it_did_not_run():
    pytest.importorskip("apscheduler", reason="APScheduler 3 is in the bench extra")
    if not calendar.apscheduler_available():
        pytest.skip("APScheduler 4 is installed; the benchmark compares with 3")
    figures = calendar.run_turn(calendar.APSCHEDULER, calendar.make_jobs(300, 1), workers=2,
                                lead=LEAD, drain=60.0)
    assert figures["expected"] > 0
    assert figures["missing"] <= figures["dropped"]
    assert figures["duplicate"] == figures["off_grid"] == 0


@pytest.mark.slow  # a whole run of the script, a process per competitor
def test_the_script_runs_each_competitor_in_a_fresh_process(capsys, tmp_path):
    out_file = tmp_path / "calendar.json"
    main = runpy.run_path(str(BENCH))["main"]
    result = main(["--series", "50", "--seconds", "1", "--repeats", "1", "--lead", str(LEAD),
                   "--json", str(out_file)])
    out = capsys.readouterr().out
    assert "50 interval series" in out and "CPU per fire" in out
    assert set(result["turns"]) <= set(calendar.COMPETITORS)
    assert calendar.PYSCHED in result["turns"] and out_file.stat().st_size > 0


def test_percentiles_are_nearest_rank_in_milliseconds():
    from pysched.bench.percentiles import percentiles

    figures = percentiles([i / 1000 for i in range(100, 0, -1)])  # 1 ms to 100 ms
    assert figures == {"p50_ms": 50.0, "p90_ms": 90.0, "p99_ms": 99.0, "max_ms": 100.0,
                       "count": 100}
    assert percentiles([0.002])["p99_ms"] == 2.0
    with pytest.raises(ValueError, match="samples"):
        percentiles([])


def test_the_calendar_section_runs_in_python_m_pysched_bench(tmp_path, capsys):
    import json

    from pysched.bench import __main__ as cli

    assert "calendar" in cli.SECTIONS
    out_file = tmp_path / "bench.json"
    assert cli.main(["--sizes", "20", "--sections", "calendar", "--quiet",
                     "--json", str(out_file)]) == 0
    out = capsys.readouterr().out
    assert "calendar: 20 interval series" in out and "fire times run" in out
    rows = [row for row in json.loads(out_file.read_text())["rows"]
            if row["section"] == "calendar"]
    assert rows and rows[0]["competitor"] == "pysched" and rows[0]["size"] == 20
    (turn,) = rows[0]["turns"]
    assert turn["missing"] == turn["duplicate"] == turn["early"] == 0
