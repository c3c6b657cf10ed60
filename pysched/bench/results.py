"""Gather a run's figures into one document, and write it as JSON.

Fields: ``machine`` (platform, CPU model, cores, Python and pysched versions,
date: see machine.py), ``mode``, ``argv``, ``config`` (the sizes used),
``rows`` (every measured figure: see plan.py), ``speedups`` (derived from the
rows: the core against each competitor), ``growth`` (the log-n check per
workload) and ``growth_reference_heapq`` (the same for the main heapq
baselines: heapq, versioned for the scheduler, heapq, two heaps for churn).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .competitors import CORE
from .growth import GrowthCheck
from .plan import Row

SCHEMA = 3  # raised whenever a field goes or changes meaning


def speedups(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """For each timed row with a core row beside it: competitor ns/op over core ns/op."""
    core = {(row["section"], row["workload"], row["size"]): row["ns_per_op"]
            for row in rows if row["competitor"] == CORE and "ns_per_op" in row}
    return [{"section": row["section"], "workload": row["workload"], "size": row["size"],
             "competitor": row["competitor"],
             "speedup": row["ns_per_op"] / core[row["section"], row["workload"], row["size"]]}
            for row in rows
            if row["competitor"] != CORE and "ns_per_op" in row
            and (row["section"], row["workload"], row["size"]) in core]


def document(machine: Mapping[str, Any], mode: str, argv: Sequence[str],
             config: Mapping[str, Any], rows: Sequence[Row],
             growth: Mapping[str, GrowthCheck | None],
             reference: Mapping[str, GrowthCheck | None]) -> dict[str, Any]:
    """Everything a run found, as plain JSON-ready data."""
    return {
        "schema": SCHEMA,
        "machine": dict(machine),
        "mode": mode,
        "argv": list(argv),
        "config": dict(config),
        "rows": list(rows),
        "speedups": speedups(rows),
        "growth": _checks(growth),
        "growth_reference_heapq": _checks(reference),
    }


def _checks(checks: Mapping[str, GrowthCheck | None]) -> dict[str, Any]:
    return {key: None if check is None else {**dataclasses.asdict(check), "ok": check.ok}
            for key, check in checks.items()}


def write(path: str | Path, doc: Mapping[str, Any]) -> None:
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")
