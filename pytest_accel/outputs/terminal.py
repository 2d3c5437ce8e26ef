"""Human-readable renderings of measurements: the end-of-run terminal table."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_accel.session import Recorded

__all__ = ["format_bytes", "format_rate", "format_seconds", "measurement_table", "verdict_summary"]

_HEADERS = ("test", "device", "throughput", "spread", "latency", "TFLOP/s", "% peak", "peak mem", "verdict")


def format_bytes(count: int | float | None) -> str:
    """Human-readable binary size: ``1.50 GiB``; ``?`` when unknown."""
    if count is None:
        return "?"
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} TiB"


def format_rate(value: float) -> str:
    """Three significant figures with a k/M/G suffix: ``1.23k``."""
    if not math.isfinite(value):
        return "-"
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def format_seconds(value: float) -> str:
    """A latency with a fitting unit: ``812 us``, ``3.2 ms``, ``1.05 s``."""
    if not math.isfinite(value):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def _row(record: Recorded) -> tuple[str, ...]:
    m = record.measurement
    test = record.nodeid if m.name == "throughput" else f"{record.nodeid} [{m.name}]"
    if m.disabled:
        return (test, m.device_key, "disabled", "-", "-", "-", "-", "-", "-")
    tflops = m.tflops
    return (
        test,
        m.device_key,
        f"{format_rate(m.items_per_second)} {m.unit}/s",
        f"±{m.spread * 100:.1f}%" + ("" if m.warmup_settled else " (warm-up unsettled)"),
        format_seconds(m.seconds_per_call),
        "-" if tflops is None else f"{tflops:.3g}",
        percent_of_peak(m.extra),
        format_bytes(m.peak_memory_bytes),
        _verdict_cell(record.verdict),
    )


def percent_of_peak(extra: Mapping[str, Any]) -> str:
    """``41% [ds 35%]`` of compute and/or ``bw 63%`` of memory bandwidth; measured first, datasheet in brackets."""
    cells = []
    for kind, prefix in (("tflops", ""), ("bandwidth", "bw ")):
        measured = extra.get(f"percent_of_measured_{kind}")
        if measured is None:
            continue
        sheet = extra.get(f"percent_of_datasheet_{kind}")
        cells.append(f"{prefix}{measured:.0f}%" + ("" if sheet is None else f" [ds {sheet:.0f}%]"))
    return " ".join(cells) or "-"


def _verdict_cell(verdict: Mapping[str, Any] | None) -> str:
    """``unchanged +1.2%``, ``regressed +17.0% (memory)``, ``new``."""
    if verdict is None:
        return "-"
    cell = str(verdict["outcome"])
    ratio = verdict["time"].get("ratio")
    if ratio is not None:
        cell += f" {(ratio - 1) * 100:+.1f}%"
    memory = verdict.get("memory")
    if memory is not None and memory["outcome"] == "regressed":
        cell += " (memory)"
    return cell


def _aligned(rows: Sequence[tuple[str, ...]]) -> Iterable[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        yield "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()


_HINTS = {
    "new": "no baseline for {where}: record one with `pytest <same args> --accel-update`",
    "improved": "faster than the baseline: refresh it with `pytest <same args> --accel-update`",
    "noisy": "the machine was too unsteady to judge (passes; --accel-strict fails it)",
    "regressed": "slower (or fatter) than the baseline, confirmed by re-measurement: see the failures above",
}


def verdict_summary(records: Sequence[Recorded], where: str, updating: bool) -> list[str]:
    """One line per verdict kind that occurred, with what to do about it."""
    counts: dict[str, int] = {}
    for record in records:
        if record.verdict is not None:
            outcome = str(record.verdict["outcome"])
            counts[outcome] = counts.get(outcome, 0) + 1
    lines = [
        f"accel: {count} {outcome}" + (f": {_HINTS[outcome].format(where=where)}" if outcome in _HINTS else "")
        for outcome, count in sorted(counts.items())
    ]
    if updating and lines:
        lines.append("accel: --accel-update: verdicts are reported, not enforced, and the baselines rewritten")
    return lines


def measurement_table(records: Sequence[Recorded]) -> list[str]:
    """The end-of-run table: one row per measurement; spread is IQR / median."""
    rows = [_HEADERS, *(_row(r) for r in records)]
    return list(_aligned(rows))
