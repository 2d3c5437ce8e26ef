"""Plots for the HTML pages: matplotlib figures as base64 PNGs (matplotlib is imported only here, when drawing)."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_accel.judgement.history import ChangePoint

__all__ = ["plot_png"]


def plot_png(
    title: str,
    series: Mapping[str, Sequence[float]],
    labels: Sequence[str],
    ylabel: str,
    changes: Sequence[ChangePoint] = (),
    bars: bool = False,
    log: bool = False,
    across: bool = False,
) -> str:
    """A matplotlib figure as a base64 PNG (bars per device, or a line per figure over nights); ``log``: a
    logarithmic value axis, for figures of several tests whose scales differ by orders of magnitude; ``across``:
    bars drawn across, a row per label (test names too long, or too many, to stand under their bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if across:
        return _across(plt, title, series, labels, ylabel, log)
    figure, axes = plt.subplots(figsize=(7, 3.2), dpi=110)
    if bars:  # one bar per label; with several series, a group of bars per label (one per series)
        width = 0.8 / len(series)
        for index, (name, values) in enumerate(series.items()):
            offsets = [i - 0.4 + width * (index + 0.5) for i in range(len(values))]
            # a missing figure: no bar (a zero on a linear axis; nothing on a log axis, which has no zero)
            heights = [(math.nan if log else 0) if not v > 0 else v for v in values]
            color = "#3b6ea8" if len(series) == 1 else None
            axes.bar(offsets, heights, width=width, color=color, label=name)
        axes.set_xticks(range(len(labels)), labels, rotation=15, ha="right", fontsize=8)
        if len(series) > 1:  # beside the axes, never over a bar
            axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        for name, values in series.items():
            axes.plot(range(len(values)), values, marker="o", label=name)
        for point in changes:
            axes.axvline(point.index - 0.5, color="#c0392b", linestyle="--", linewidth=1)
            axes.annotate(
                f"{(point.ratio - 1) * 100:+.0f}%",
                (point.index - 0.5, axes.get_ylim()[1]),
                color="#c0392b",
                fontsize=8,
                ha="left",
                va="top",
            )
        axes.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=7)
    if log:
        axes.set_yscale("log")
    axes.set_title(title, fontsize=9)
    axes.set_ylabel(ylabel, fontsize=8)
    axes.grid(alpha=0.3)
    return _png(plt, figure)


def _across(
    plt: Any, title: str, series: Mapping[str, Sequence[float]], labels: Sequence[str], xlabel: str, log: bool
) -> str:
    """A group of bars per label, drawn across, the labels down the left, the first at the top."""
    height = 0.8 / len(series)
    figure, axes = plt.subplots(figsize=(8, 1.0 + 0.22 * len(labels) * max(1.5, len(series) * 0.6)), dpi=110)
    for index, (name, values) in enumerate(series.items()):
        offsets = [i - 0.4 + height * (index + 0.5) for i in range(len(values))]
        widths = [(math.nan if log else 0) if not v > 0 else v for v in values]
        axes.barh(offsets, widths, height=height, label=name)
    axes.set_yticks(range(len(labels)), labels, fontsize=7)
    axes.invert_yaxis()
    if log:
        axes.set_xscale("log")
        axes.xaxis.set_minor_formatter(plt.NullFormatter())  # within one decade they would overlap
    if len(series) > 1:
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes.set_title(title, fontsize=9)
    axes.set_xlabel(xlabel, fontsize=8)
    axes.grid(alpha=0.3, axis="x")
    return _png(plt, figure)


def _png(plt: Any, figure: Any) -> str:
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode()
