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
from .workloads import WORKLOADS

INSTALL_HINT = ("--plot needs matplotlib, which is not installed:"
                " pip install 'pysched[plot]' (or pip install matplotlib)")


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def require_matplotlib() -> Any:
    """Import matplotlib's pyplot on a file-only backend, or raise PlotUnavailable."""
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]  # the plot extra
    except ImportError as exc:
        raise PlotUnavailable(INSTALL_HINT) from exc
    matplotlib.use("Agg")  # no display needed: the figure only goes to a file
    import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]

    return plt


def panels(rows: Sequence[Row]) -> list[tuple[str, str, list[Row]]]:
    """(title, x label, rows) for each workload timed per operation at two or more sizes."""
    found: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if "ns_per_op" in row and row["section"] in ("scheduler", "bounded"):
            found.setdefault((row["workload"], row["param"]), []).append(row)
    titles = {workload.key: workload.title for workload in WORKLOADS}
    titles |= {"churn": "bounded-queue churn", "top_k": "one-shot top-k"}
    return [(titles.get(workload, workload), param, group)
            for (workload, param), group in found.items()
            if len({row["size"] for row in group}) >= 2]


def draw(rows: Sequence[Row], path: str | Path, title: str) -> None:
    """Write the figure to ``path``; raise PlotUnavailable without matplotlib.

    Each competitor keeps one colour in every panel, and one legend serves all.
    """
    plt = require_matplotlib()
    groups = panels(rows)
    if not groups:
        raise ValueError("nothing to plot: no workload was timed at two sizes or more")
    labels = dict.fromkeys((row["competitor"], row["label"]) for _, _, group in groups
                           for row in group)
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour = {key: palette[i % len(palette)] for i, (key, _) in enumerate(labels)}
    fig, axes = plt.subplots(2, len(groups), figsize=(3.4 * len(groups), 6.6), squeeze=False)
    handles = {}
    for column, (name, param, group) in enumerate(groups):
        core = {row["size"]: row["ns_per_op"] for row in group if row["competitor"] == CORE}
        for key, label in dict.fromkeys((row["competitor"], row["label"]) for row in group):
            points = sorted((row["size"], row["ns_per_op"]) for row in group
                            if row["competitor"] == key)
            sizes, ns = zip(*points, strict=True)
            (handles[label],) = axes[0][column].plot(sizes, ns, marker="o", color=colour[key])
            ratio = [(size, value / core[size]) for size, value in points if size in core]
            if key != CORE and ratio:
                xs, ys = zip(*ratio, strict=True)
                axes[1][column].plot(xs, ys, marker="o", color=colour[key])
        axes[0][column].set(title=name, xscale="log", yscale="log")
        axes[1][column].set(xscale="log", yscale="log", xlabel=param)
        axes[1][column].axhline(1.0, color="grey", linewidth=0.8)
        for axis in axes[:, column]:
            axis.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("ns per operation")
    axes[1][0].set_ylabel("speedup of pysched (x)")
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=len(handles),
               fontsize="small", frameon=False)
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
