"""``--plot FILE.png``: ns/op and speedup against n, one column per workload.

matplotlib is optional (the ``plot`` extra); without it ``--plot`` fails
with PlotUnavailable's message before anything is measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .competitors import CORE
from .plan import Row

INSTALL_HINT = ("--plot needs matplotlib, which is not installed:"
                " pip install 'pysched[plot]' (or pip install matplotlib)")


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def require_matplotlib() -> Any:
    """Import matplotlib's pyplot on a file-only backend, or raise PlotUnavailable."""
    try:
        import matplotlib
    except ImportError as exc:
        raise PlotUnavailable(INSTALL_HINT) from exc
    matplotlib.use("Agg")  # no display needed: the figure only goes to a file
    import matplotlib.pyplot as plt

    return plt


def panels(rows: Sequence[Row]) -> list[tuple[str, str, list[Row]]]:
    """(title, x label, rows) for each workload timed per operation at two or more sizes."""
    found: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if "ns_per_op" in row and row["section"] in ("scheduler", "bounded"):
            found.setdefault((row["workload"], row["param"]), []).append(row)
    return [(workload.replace("_", " "), param, group)
            for (workload, param), group in found.items()
            if len({row["size"] for row in group}) >= 2]


def draw(rows: Sequence[Row], path: str | Path, title: str) -> None:
    """Write the figure to ``path``; raise PlotUnavailable without matplotlib."""
    plt = require_matplotlib()
    groups = panels(rows)
    if not groups:
        raise ValueError("nothing to plot: no workload was timed at two sizes or more")
    fig, axes = plt.subplots(2, len(groups), figsize=(3.6 * len(groups), 7), squeeze=False)
    for column, (name, param, group) in enumerate(groups):
        core = {row["size"]: row["ns_per_op"] for row in group if row["competitor"] == CORE}
        labels = dict.fromkeys((row["competitor"], row["label"]) for row in group)
        for key, label in labels:
            points = sorted((row["size"], row["ns_per_op"]) for row in group
                            if row["competitor"] == key)
            sizes, ns = zip(*points, strict=True)
            axes[0][column].plot(sizes, ns, marker="o", label=label)
            if key != CORE and core:
                ratio = [(size, value / core[size]) for size, value in points if size in core]
                if ratio:
                    xs, ys = zip(*ratio, strict=True)
                    axes[1][column].plot(xs, ys, marker="o", label=label)
        axes[0][column].set(title=name, xscale="log", yscale="log", ylabel="ns per operation")
        axes[1][column].set(xscale="log", yscale="log", xlabel=param,
                            ylabel="speedup of pysched (x)")
        axes[1][column].axhline(1.0, color="grey", linewidth=0.8)
        for axis in axes[:, column]:
            axis.grid(True, which="both", alpha=0.3)
        axes[0][column].legend(fontsize="small")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
