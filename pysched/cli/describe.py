"""``pysched describe ID``: everything stored of one task id, and of a series of that id.

For a task: its state, when it is due, its arguments, attempts, the lease
of a running version, and the error with its traceback. For a series: its
trigger in words, its next fire times, the fire times the store keeps (the
newest first) and their counts, a pause note. The fields are those of the
``pysched.jobs`` snapshots ``DurableScheduler.describe()`` gives (``--json``
holds them as ``snapshot``). Reads only.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..durable.jobs import series_info, task_info
from ..durable.listing import SeriesDetail, TaskDetail
from ..durable.moments import lease_text, when
from ..jobs import job_dict
from ._common import ExitCode, add_store_arguments, fail, public_target
from ._reads import guarded, key, listing, print_json, printable, table

__all__ = ["add_parser", "render_series", "render_task", "run"]


def add_parser(commands: Any) -> None:
    """Add the ``describe`` command to ``commands`` (argparse's subparsers)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "describe", help="print everything stored of one task or series",
        description="Print one task (state, due time, arguments, attempts, error and"
                    " traceback) and the series of that id if there is one. Reads only.")
    parser.add_argument("task_id", metavar="ID", type=key, help="the task or series id")
    add_store_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the task and series of the id; exit status 1 if there is neither."""
    return guarded("describe", args, lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    with listing(args) as reads:
        task = reads.task(args.task_id)
        series = reads.one_series(args.task_id)
    if task is None and series is None:
        return fail("describe", f"{public_target(args.store)}: no task or series"
                                f" {printable(repr(args.task_id), 200)}")
    if args.json:
        return print_json({"task": None if task is None else _task_data(task),
                           "series": None if series is None else _series_data(series),
                           "snapshot": {
                               "task": None if task is None else job_dict(
                                   task_info(task.row, _store_clock)),
                               "series": None if series is None else job_dict(
                                   series_info(series.series, series.fires))}})
    parts = [] if task is None else [render_task(task)]
    if series is not None:
        parts.append(render_series(series))
    print("\n\n".join(parts))
    return ExitCode.OK


def _task_data(task: TaskDetail) -> dict[str, Any]:
    return {**task.row, "args_decoded": None if task.args is None else
            {"args": task.args, "kwargs": task.kwargs}, "args_error": task.args_error,
            "now": task.now}


def _series_data(detail: SeriesDetail) -> dict[str, Any]:
    return {**detail.series._asdict(), "fires": [f._asdict() for f in detail.fires],
            "fire_counts": detail.fire_counts, "args": detail.args, "spec": detail.spec,
            "floor": detail.floor, "now": detail.now}


def _store_clock(wall: float) -> float:
    return wall  # read from outside any scheduler: due on the store's own clock


def _shown(value: object, raw: object) -> str:
    """A snapshot's field, or the row's value where the snapshot could not hold it."""
    return printable(value if value is not None else raw)


def render_task(task: TaskDetail) -> str:
    """One task as text for a terminal: its snapshot's fields, then what only the row has."""
    row, now = task.row, task.now
    info = task_info(row, _store_clock)
    lines = [f"Task {printable(row['task_id'])}",
             *_fields([("state", printable(info.state)),
                       ("version", _shown(info.version, row["version"])),
                       ("task", _shown(info.name, row["ref"])),
                       ("queue", _shown(info.queue, row["queue"])),
                       ("priority", _shown(info.priority, row["priority"])),
                       ("due", when(info.due if info.due is not None else row["run_at"], now)),
                       ("attempts", printable(info.attempts)),
                       ("last outcome", printable(info.last_outcome or "-")),
                       ("written", when(row["updated_at"], now)),
                       ("lease", _lease(row, now))])]
    if task.args_error is not None:
        lines += ["", f"Arguments (cannot run: {printable(task.args_error)}):",
                  f"  {printable(row['args'], 2000)}"]
    else:
        lines += ["", "Arguments:", *_indented(json.dumps(
            {"args": task.args, "kwargs": task.kwargs}, indent=2, ensure_ascii=False))]
    error = row["error"]
    if error is not None:
        lines += ["", "Error:", *_indented(error if isinstance(error, str) else repr(error))]
    return "\n".join(lines)


def render_series(detail: SeriesDetail) -> str:
    """One series as text for a terminal."""
    s, now = detail.series, detail.now
    info = series_info(s, detail.fires)
    lines = [f"Series {printable(s.series_id)}",
             *_fields([("state", printable(info.state)),
                       ("running", "yes" if info.running else "no"),
                       ("generation", printable(s.generation)),
                       ("task", printable(s.ref)), ("queue", printable(s.queue)),
                       ("priority", printable(s.priority)),
                       ("trigger", printable(s.trigger) if s.trigger is not None
                        else f"cannot be read: {printable(s.problem)}"),
                       ("stored", when(s.created, now)),
                       ("note", printable(s.note) if s.note is not None else "-")])]
    if s.next_fires:
        lines += ["", "Next fire times:", *(f"  {when(f, now)}" for f in s.next_fires)]
    counts = ", ".join(f"{printable(k)} {v}" for k, v in sorted(detail.fire_counts.items()))
    lines += ["", f"Fire times kept in the store: {counts or 'none'}"]
    if detail.fires:
        rows = [[when(f.fire_time, now), printable(run.outcome), printable(f.attempts),
                 printable(f.lease_owner) if f.lease_owner is not None else "-"]
                for f, run in zip(detail.fires, info.last_runs, strict=True)]
        lines += ["", "Last runs:", *table(["FIRE TIME", "OUTCOME", "ATTEMPTS", "OWNER"],
                                           rows)]
    return "\n".join(lines)


def _lease(row: dict[str, Any], now: float) -> str:
    if row["lease_owner"] is None:
        return "none"
    return f"{printable(row['lease_owner'])}, {lease_text(row['lease_expires'], now)}"


def _fields(pairs: list[tuple[str, str]]) -> list[str]:
    width = max(len(name) for name, _ in pairs)
    return [f"  {name.ljust(width)}  {value}" for name, value in pairs]


def _indented(text: str) -> list[str]:
    return [f"  {printable(line)}" for line in text.splitlines()]


