"""Many interval series in one scheduler: pysched's ThreadPoolScheduler beside
APScheduler 3's BackgroundScheduler, on the same jobs.

The jobs (``make_jobs``): ``series`` interval series, series i every
``1 + i % 60`` seconds, first due at a seeded random phase within its period
after the window starts, so fires arrive spread out as in a service rather
than in one burst. The fractional part of each phase is kept 0.05 s away from
a whole second, so no fire time lies near the window's (whole-second) end.
Both competitors schedule every series with an explicit first fire time
(``Every(p, start=...)``; ``IntervalTrigger(seconds=p, start_date=...)``), the
same instants, and a no-op job that records the fire time it is for and when
it started, each on the clock its scheduler keeps: pysched's interval series
run on the monotonic clock and name their fire time through
``current_fire()``; APScheduler runs on the wall clock, and its
EVENT_JOB_EXECUTED event carries the fire time beside the job's return value
(its start time).

Neither may drop a run silently. pysched runs with ``misfire_grace=None,
catch_up="all", overlap="queue"`` (never missed; a fire time due while the
series' previous run is in progress waits for it); APScheduler, as its user
guide suggests for jobs rebuilt at each start, with a MemoryJobStore and a
ThreadPoolExecutor of the same number of workers, ``misfire_grace_time=None,
coalesce=False`` and its default ``max_instances=1``. What either still
skipped is counted from its events (pysched's series events; APScheduler's
EVENT_JOB_MISSED, EVENT_JOB_MAX_INSTANCES and EVENT_JOB_ERROR).

Each turn runs in a fresh process (``python -m pysched.bench.calendar_workloads
--one NAME ...`` prints one JSON line), so neither competitor inherits the
other's threads, heap or garbage; ``compare`` runs the competitors in turns,
the first one alternating between rounds, and reports medians.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import logging
import math
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .percentiles import percentiles

__all__ = ["COMPETITORS", "Jobs", "compare", "make_jobs", "render", "run_turn", "summarize"]

PYSCHED = "pysched"
APSCHEDULER = "APScheduler"
PYSCHED_AIO = "pysched-asyncio"
PLAIN_ASYNCIO = "asyncio call_at"
COMPETITORS = (PYSCHED, APSCHEDULER, PYSCHED_AIO, PLAIN_ASYNCIO)
# Who is compared with whom: the thread pools, and the event loops.
THREADED = (PYSCHED, APSCHEDULER)
LOOPED = (PYSCHED_AIO, PLAIN_ASYNCIO)
# Longest period; series i runs every 1 + i % LONGEST seconds.
LONGEST = 60
# How far a fire time may lie from its place on the grid (window start + phase
# + k * period) and still count as that fire time; below the phases' 0.05 s
# margin, so a shifted fire time never crosses the window's end. How far they
# do lie is reported: APScheduler rounds dates to microseconds, and pysched
# maps a start date onto the monotonic clock with a wall-clock reading and a
# monotonic one taken one after the other.
GRID_TOLERANCE = 0.04
# A fire time further than this from its place counts as shifted.
SHIFTED = 0.001

# (series index, fire time, start time), both times on the scheduler's own clock
Run = tuple[int, float, float]


@dataclass(frozen=True)
class Jobs:
    """The series every competitor schedules: period and phase (seconds) of each."""

    periods: list[int]
    phases: list[float]
    seconds: int  # the window: fire times in [start, start + seconds) are counted

    def fires(self, i: int) -> int:
        """How many fire times series ``i`` has in the window."""
        phase = self.phases[i]
        return math.ceil((self.seconds - phase) / self.periods[i]) if phase < self.seconds else 0

    def expected(self) -> int:
        return sum(self.fires(i) for i in range(len(self.periods)))


def make_jobs(series: int, seconds: int, seed: int = 0) -> Jobs:
    """``series`` series with periods 1 to 60 s and seeded phases, for a window of ``seconds``."""
    rng = random.Random(seed)
    periods = [1 + i % LONGEST for i in range(series)]
    phases = [round(rng.randrange(p) + rng.uniform(0.05, 0.95), 6) for p in periods]
    return Jobs(periods, phases, seconds)


@dataclass
class Footprint:
    """What adding the series cost the process: resident bytes and tracked objects."""

    rss: int = 0  # growth of the resident set, bytes
    tracked: int = 0  # growth of len(gc.get_objects()), after a full collection
    frozen: bool = False  # gc.freeze() was called once the series were added


@dataclass
class Recording:
    """What one competitor's turn left behind, before it is summarized."""

    runs: list[Any]  # raw records; ``runs_on_clock`` turns them into ``Run``s
    start: float  # the window's start on the scheduler's clock
    cpu: float  # process CPU seconds during the window
    runs_in_cpu_window: int  # runs started during the window
    setup_wall: float
    setup_cpu: float
    drops: dict[str, int]  # skipped or late fire times by the scheduler's own account
    version: str
    footprint: Footprint = field(default_factory=Footprint)


def _rss() -> int:
    """The process's resident set, bytes (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return 0


class Measure:
    """Around adding the series: the footprint; then, if asked, freeze what they hold.

    ``gc.freeze()`` moves every object tracked so far out of the collector's
    generations, so full collections no longer traverse the series: safe for
    a series that holds no reference cycle (one cancelled later is freed by
    reference counting; a frozen cycle would be kept until ``gc.unfreeze()``).
    """

    def __init__(self, freeze: bool) -> None:
        self.freeze = freeze
        self.footprint = Footprint(frozen=freeze)

    def __enter__(self) -> Measure:
        gc.collect()
        self._tracked, self._rss = len(gc.get_objects()), _rss()
        return self

    def __exit__(self, *exc_info: object) -> None:
        gc.collect()
        self.footprint.rss = _rss() - self._rss
        self.footprint.tracked = len(gc.get_objects()) - self._tracked
        if self.freeze:
            gc.freeze()


def summarize(jobs: Jobs, runs: Sequence[Run], recording: Recording) -> dict[str, Any]:
    """The figures of one turn: counts of fire times, lateness, CPU per fire."""
    start, end = recording.start, recording.start + jobs.seconds
    seen: set[tuple[int, int]] = set()
    duplicate = early = off_grid = shifted = 0
    lateness: list[float] = []
    last_start = start
    worst_shift = 0.0
    for i, fire, began in runs:
        if fire >= end:
            continue
        period = jobs.periods[i]
        offset = fire - start - jobs.phases[i]
        k = round(offset / period)
        shift = abs(offset - k * period)
        if k < 0 or shift > GRID_TOLERANCE:
            off_grid += 1
            continue
        worst_shift = max(worst_shift, shift)
        shifted += shift > SHIFTED
        if (i, k) in seen:
            duplicate += 1
            continue
        seen.add((i, k))
        if began < fire:
            early += 1
        lateness.append(began - fire)
        last_start = max(last_start, began)
    expected = jobs.expected()
    late = percentiles(lateness) if lateness else {}
    return {
        "expected": expected, "run": len(seen), "missing": expected - len(seen),
        "duplicate": duplicate, "early": early, "off_grid": off_grid,
        "shifted": shifted, "shift_max_ms": worst_shift * 1e3,
        "dropped": sum(recording.drops.values()), "drops": recording.drops,
        "lateness_p50_ms": late.get("p50_ms", math.nan),
        "lateness_p99_ms": late.get("p99_ms", math.nan),
        "lateness_max_ms": late.get("max_ms", math.nan),
        "cpu_s": recording.cpu, "runs_in_cpu_window": recording.runs_in_cpu_window,
        "cpu_per_fire_us": recording.cpu / max(1, recording.runs_in_cpu_window) * 1e6,
        "setup_wall_s": recording.setup_wall, "setup_cpu_s": recording.setup_cpu,
        # after the window's end, until the last of its fire times started
        "tail_s": max(0.0, last_start - end),
        "version": recording.version,
        "rss_per_series_b": recording.footprint.rss / max(1, len(jobs.periods)),
        "tracked_per_series": recording.footprint.tracked / max(1, len(jobs.periods)),
        "frozen": recording.footprint.frozen,
    }


# -- one turn ---------------------------------------------------------------------------------


def _sleep_until(clock: Callable[[], float], when: float) -> None:
    while (left := when - clock()) > 0:
        time.sleep(left)


def _watch(jobs: Jobs, runs: list[Any], clock: Callable[[], float], start: float,
           fire_of: Callable[[Any], float], began_of: Callable[[Any], float],
           drain: float) -> tuple[float, int]:
    """Sleep through the window; then wait (at most ``drain`` s) for its last fire times.

    Returns the process CPU seconds during the window and the runs that
    started in it. This thread only sleeps while the window is timed.
    """
    _sleep_until(clock, start)
    cpu, mark = time.process_time(), clock()
    end = start + jobs.seconds
    _sleep_until(clock, end)
    cpu, until = time.process_time() - cpu, clock()
    counted = sum(1 for run in list(runs) if mark <= began_of(run) <= until)
    expected, done, seen = jobs.expected(), 0, 0
    deadline = end + drain
    while True:
        new = runs[seen:]
        seen += len(new)
        done += sum(1 for run in new if fire_of(run) < end)
        if done >= expected or clock() >= deadline:
            return cpu, counted
        time.sleep(0.05)


def _window_start(lead: float) -> float:
    """The window's start on the wall clock: ``lead`` s from now, on a whole millisecond."""
    return round(time.time() + lead, 3)


def _first_fires(jobs: Jobs, start: float) -> list[datetime]:
    return [datetime.fromtimestamp(start + phase, timezone.utc) for phase in jobs.phases]


def _check_setup(start: float) -> None:
    if time.time() >= start:
        raise RuntimeError("adding the series took longer than the lead; raise --lead")


def _turn_pysched(jobs: Jobs, workers: int, lead: float, drain: float,
                  freeze: bool) -> dict[str, Any]:
    import pysched
    from pysched import Every, ThreadPoolScheduler
    from pysched.calendar import current_fire

    runs: list[Run] = []
    record = runs.append
    mono = time.monotonic

    def job(i: int) -> None:
        fire = current_fire()
        assert fire is not None
        record((i, fire.fire_time, mono()))

    start = _window_start(lead)
    first = _first_fires(jobs, start)
    setup_wall, setup_cpu = time.perf_counter(), time.process_time()
    pool = ThreadPoolScheduler(workers)
    try:
        schedule = pool.schedule_recurring
        with Measure(freeze) as measure:
            for i, period in enumerate(jobs.periods):
                schedule(i, Every(period, start=first[i]), 0, job, (i,), misfire_grace=None,
                         catch_up="all", overlap="queue")
        setup_wall, setup_cpu = (time.perf_counter() - setup_wall,
                                 time.process_time() - setup_cpu)
        _check_setup(start)
        # interval series run on the monotonic clock: the window's start there
        start_mono = start - (time.time() - mono())
        cpu, counted = _watch(jobs, runs, mono, start_mono, lambda r: r[1], lambda r: r[2],
                              drain)
        events = pool.stats()["series_events"]
    finally:
        pool.close(wait=True)
    drops = {key: value for key, value in events.items() if "." in key}
    recording = Recording(runs, start_mono, cpu, counted, setup_wall, setup_cpu, drops,
                          pysched.__version__, measure.footprint)
    return summarize(jobs, runs, recording)


def _turn_apscheduler(jobs: Jobs, workers: int, lead: float, drain: float,
                      freeze: bool) -> dict[str, Any]:
    apscheduler = importlib.import_module("apscheduler")
    events = importlib.import_module("apscheduler.events")
    background = importlib.import_module("apscheduler.schedulers.background")
    pool = importlib.import_module("apscheduler.executors.pool")
    interval = importlib.import_module("apscheduler.triggers.interval")
    # Skips are counted from the events below; their log lines would only flood stderr.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)

    raw: list[tuple[str, datetime, float]] = []
    record = raw.append
    wall = time.time

    def job() -> float:
        return wall()

    def executed(event: Any) -> None:
        record((event.job_id, event.scheduled_run_time, event.retval))

    drops: Counter[str] = Counter()
    names = {events.EVENT_JOB_MISSED: "missed", events.EVENT_JOB_MAX_INSTANCES: "max_instances",
             events.EVENT_JOB_ERROR: "error"}

    def dropped(event: Any) -> None:  # a submission refused at max_instances is all its run times
        drops[names[event.code]] += len(getattr(event, "scheduled_run_times", None) or [None])

    start = _window_start(lead)
    first = _first_fires(jobs, start)
    setup_wall, setup_cpu = time.perf_counter(), time.process_time()
    scheduler = background.BackgroundScheduler(
        executors={"default": pool.ThreadPoolExecutor(workers)},
        job_defaults={"misfire_grace_time": None, "coalesce": False, "max_instances": 1},
        timezone=timezone.utc)
    scheduler.add_listener(executed, events.EVENT_JOB_EXECUTED)
    scheduler.add_listener(dropped, events.EVENT_JOB_MISSED | events.EVENT_JOB_MAX_INSTANCES
                           | events.EVENT_JOB_ERROR)
    try:
        with Measure(freeze) as measure:  # its jobs are stored when it starts
            for i, period in enumerate(jobs.periods):
                trigger = interval.IntervalTrigger(seconds=period, start_date=first[i],
                                                   timezone=timezone.utc)
                scheduler.add_job(job, trigger, id=str(i))
            scheduler.start()
        setup_wall, setup_cpu = (time.perf_counter() - setup_wall,
                                 time.process_time() - setup_cpu)
        _check_setup(start)
        cpu, counted = _watch(jobs, raw, wall, start, lambda r: r[1].timestamp(),
                              lambda r: r[2], drain)
    finally:
        scheduler.shutdown(wait=True)
    runs = [(int(job_id), fire.timestamp(), began) for job_id, fire, began in raw]
    recording = Recording(runs, start, cpu, counted, setup_wall, setup_cpu, dict(drops),
                          apscheduler.__version__, measure.footprint)
    return summarize(jobs, runs, recording)


def _turn_on_a_loop(jobs: Jobs, lead: float, drain: float, freeze: bool,
                    add: Callable[[asyncio.AbstractEventLoop, list[Run], float], Any],
                    version: str) -> dict[str, Any]:
    """A turn on an asyncio loop in this thread: ``add(loop, runs, start_mono)`` adds
    every series (returning what ``stats()`` gives, or None) and the window is watched
    from another thread, which only sleeps."""
    runs: list[Run] = []

    async def main() -> tuple[float, float, int, float, float, Footprint,
                              dict[str, int]]:
        loop = asyncio.get_running_loop()
        start = _window_start(lead)
        start_mono = start - (time.time() - loop.time())  # interval series use loop.time()
        setup_wall, setup_cpu = time.perf_counter(), time.process_time()
        with Measure(freeze) as measure:
            scheduler = add(loop, runs, start_mono)
        setup_wall, setup_cpu = (time.perf_counter() - setup_wall,
                                 time.process_time() - setup_cpu)
        _check_setup(start)
        cpu, counted = await loop.run_in_executor(
            None, _watch, jobs, runs, loop.time, start_mono, lambda r: r[1], lambda r: r[2],
            drain)
        drops: dict[str, int] = {}
        if scheduler is not None:
            events = scheduler.stats()["series_events"]
            drops = {key: value for key, value in events.items() if "." in key}
            await scheduler.aclose()
        return start_mono, cpu, counted, setup_wall, setup_cpu, measure.footprint, drops

    start_mono, cpu, counted, setup_wall, setup_cpu, footprint, drops = asyncio.run(main())
    recording = Recording(runs, start_mono, cpu, counted, setup_wall, setup_cpu, drops,
                          version, footprint)
    return summarize(jobs, runs, recording)


def _turn_pysched_aio(jobs: Jobs, workers: int, lead: float, drain: float,
                      freeze: bool) -> dict[str, Any]:
    """pysched's AsyncScheduler, the same series as the pool's; no concurrency limit."""
    import pysched
    from pysched import AsyncScheduler, Every
    from pysched.calendar import current_fire

    def add(loop: asyncio.AbstractEventLoop, runs: list[Run], start_mono: float) -> Any:
        record = runs.append
        now = loop.time

        def job(i: int) -> None:
            fire = current_fire()
            assert fire is not None
            record((i, fire.fire_time, now()))

        start = start_mono + (time.time() - loop.time())
        first = _first_fires(jobs, start)
        scheduler = AsyncScheduler()
        schedule = scheduler.schedule_recurring
        for i, period in enumerate(jobs.periods):
            schedule(i, Every(period, start=first[i]), 0, job, (i,), misfire_grace=None,
                     catch_up="all", overlap="queue")
        return scheduler

    return _turn_on_a_loop(jobs, lead, drain, freeze, add, pysched.__version__)


def _turn_plain_asyncio(jobs: Jobs, workers: int, lead: float, drain: float,
                        freeze: bool) -> dict[str, Any]:
    """The floor on a loop: each series one ``loop.call_at`` timer, re-armed by its
    callback for fire time k + 1 (``anchor + (k + 1) * period``, by multiplication)."""
    def add(loop: asyncio.AbstractEventLoop, runs: list[Run], start_mono: float) -> None:
        record = runs.append
        now = loop.time
        call_at = loop.call_at

        def fire(i: int, anchor: float, period: float, k: int) -> None:
            record((i, anchor + k * period, now()))
            call_at(anchor + (k + 1) * period, fire, i, anchor, period, k + 1)

        for i, period in enumerate(jobs.periods):
            anchor = start_mono + jobs.phases[i]
            call_at(anchor, fire, i, anchor, float(period), 0)
        return None

    return _turn_on_a_loop(jobs, lead, drain, freeze, add, "python " + sys.version.split()[0])


TURNS: dict[str, Callable[[Jobs, int, float, float, bool], dict[str, Any]]] = {
    PYSCHED: _turn_pysched, APSCHEDULER: _turn_apscheduler,
    PYSCHED_AIO: _turn_pysched_aio, PLAIN_ASYNCIO: _turn_plain_asyncio}


def run_turn(name: str, jobs: Jobs, workers: int, lead: float, drain: float,
             freeze: bool = False) -> dict[str, Any]:
    """One competitor's turn in this process: schedule the jobs, watch the window, summarize.

    ``freeze``: ``gc.freeze()`` once the series are added (see ``Measure``)."""
    return TURNS[name](jobs, workers, lead, drain, freeze)


def default_lead(series: int) -> float:
    """Seconds between the first series added and the window's start: room for adding all."""
    return 5.0 + series * 4e-4


# -- turns in fresh processes -----------------------------------------------------------------


def _turn_in_process(name: str, series: int, seconds: int, workers: int, seed: int,
                     lead: float, drain: float, freeze: bool) -> dict[str, Any]:
    command = [sys.executable, "-m", __name__, "--one", name, "--series", str(series),
               "--seconds", str(seconds), "--workers", str(workers), "--seed", str(seed),
               "--lead", repr(lead), "--drain", repr(drain)] + (["--freeze"] if freeze else [])
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name}'s turn failed ({done.returncode}):\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def apscheduler_available() -> bool:
    try:
        version = importlib.import_module("apscheduler").__version__
    except ImportError:
        return False
    return int(str(version).split(".")[0]) < 4


def compare(series: int, seconds: int, repeats: int, *, workers: int = 10, seed: int = 0,
            lead: float | None = None, drain: float = 10.0, freeze: bool = False,
            competitors: Sequence[str] = COMPETITORS,
            progress: Callable[[str], object] = lambda line: None) -> dict[str, Any]:
    """Every competitor ``repeats`` times, in turns, each turn a fresh process.

    Returns the settings and, per competitor, the list of its turns' figures.
    """
    if lead is None:
        lead = default_lead(series)
    turns: dict[str, list[dict[str, Any]]] = {name: [] for name in competitors}
    for round_ in range(repeats):
        order = list(competitors) if round_ % 2 == 0 else list(reversed(competitors))
        for name in order:
            progress(f"round {round_ + 1}/{repeats}: {name}")
            turn = _turn_in_process(name, series, seconds, workers, seed, lead, drain, freeze)
            turns[name].append(turn)
            progress(f"  {turn['run']:,} of {turn['expected']:,} fire times run, "
                     f"{turn['early']} early, {turn['dropped']} skipped or late; lateness "
                     f"p50 {turn['lateness_p50_ms']:.2f} ms, p99 {turn['lateness_p99_ms']:.1f} ms; "
                     f"{turn['cpu_per_fire_us']:.1f} µs CPU per fire; "
                     f"{turn['rss_per_series_b']:.0f} B and "
                     f"{turn['tracked_per_series']:.2f} tracked objects per series")
    return {"series": series, "seconds": seconds, "repeats": repeats, "workers": workers,
            "seed": seed, "lead": lead, "drain": drain, "freeze": freeze, "turns": turns}


# -- the report -------------------------------------------------------------------------------

# (label, key, how the repeats combine, format)
ROWS: list[tuple[str, str, Callable[[list[float]], float], str]] = [
    ("fire times expected", "expected", max, "{:,.0f}"),
    ("fire times run (fewest)", "run", min, "{:,.0f}"),
    ("missing (most)", "missing", max, "{:,.0f}"),
    ("run twice (most)", "duplicate", max, "{:,.0f}"),
    ("early (most)", "early", max, "{:,.0f}"),
    ("off their grid (most)", "off_grid", max, "{:,.0f}"),
    ("shifted from their grid by over 1 ms (most)", "shifted", max, "{:,.0f}"),
    ("largest shift from the grid, ms", "shift_max_ms", max, "{:.3f}"),
    ("skipped or late, its own events (most)", "dropped", max, "{:,.0f}"),
    ("lateness p50, ms", "lateness_p50_ms", statistics.median, "{:.2f}"),
    ("lateness p99, ms", "lateness_p99_ms", statistics.median, "{:.2f}"),
    ("lateness max, ms", "lateness_max_ms", statistics.median, "{:.1f}"),
    ("CPU per fire, µs", "cpu_per_fire_us", statistics.median, "{:.1f}"),
    ("resident bytes per series (growth)", "rss_per_series_b", statistics.median, "{:,.0f}"),
    ("tracked objects per series", "tracked_per_series", statistics.median, "{:.2f}"),
    ("CPU in the window, s", "cpu_s", statistics.median, "{:.2f}"),
    ("adding the series, wall s", "setup_wall_s", statistics.median, "{:.2f}"),
    ("adding the series, CPU s", "setup_cpu_s", statistics.median, "{:.2f}"),
    ("last fire started, s after the window", "tail_s", statistics.median, "{:.3f}"),
]


def render(result: dict[str, Any]) -> str:
    """The comparison as a table: counts at their worst over the turns, figures as medians."""
    turns = result["turns"]
    names = list(turns)
    heads = [f"{name} {turns[name][0]['version']}" for name in names]
    width = max(len(row[0]) for row in ROWS)
    lines = [f"{result['series']:,} interval series (periods 1 to {LONGEST} s) for "
             f"{result['seconds']} s, {result['workers']} workers; {result['repeats']} turns "
             "each, in fresh processes, in turns"
             + ("; gc.freeze() once the series were added" if result.get("freeze") else ""),
             " " * width + "".join(f"  {head:>22}" for head in heads)]
    for label, key, combine, form in ROWS:
        cells = [form.format(combine([turn[key] for turn in turns[name]])) for name in names]
        lines.append(label.ljust(width) + "".join(f"  {cell:>22}" for cell in cells))
    for name in names:
        drops: Counter[str] = Counter()
        for turn in turns[name]:
            drops.update(turn["drops"])
        if drops:
            lines.append(f"{name}'s events over all turns: {dict(drops)}")
    return "\n".join(lines)


def _main_one(argv: Sequence[str]) -> None:
    parse = argparse.ArgumentParser(description="one turn of one competitor; prints JSON")
    parse.add_argument("--one", choices=COMPETITORS, required=True)
    parse.add_argument("--series", type=int, required=True)
    parse.add_argument("--seconds", type=int, required=True)
    parse.add_argument("--workers", type=int, required=True)
    parse.add_argument("--seed", type=int, default=0)
    parse.add_argument("--lead", type=float, required=True)
    parse.add_argument("--drain", type=float, required=True)
    parse.add_argument("--freeze", action="store_true")
    args = parse.parse_args(argv)
    jobs = make_jobs(args.series, args.seconds, args.seed)
    print(json.dumps(run_turn(args.one, jobs, args.workers, args.lead, args.drain,
                              args.freeze)))


if __name__ == "__main__":
    _main_one(sys.argv[1:])
