"""A result file in the formats of the dashboards people already run. Pure: no torch, no pytest.

- github-action-benchmark, tools ``customBiggerIsBetter`` / ``customSmallerIsBetter``: a JSON list of
  ``{"name", "unit", "value", "range"?, "extra"?}``, where ``range`` and ``extra`` are strings (the
  action shows them in the chart's tooltip). Bigger is better: items per second; smaller: milliseconds
  per call. ``range`` is half the interquartile range of the rounds, in the value's unit.
- Bencher Metric Format (BMF): ``{benchmark: {measure slug: {"value", "lower_value"?, "upper_value"?}}}``.
  ``throughput`` (items per second) and ``latency`` (nanoseconds per call: Bencher's built-in Latency
  measure is in nanoseconds) with the rounds' quartiles as bounds, and ``peak-memory`` (bytes) where
  it was measured. The device is Bencher's testbed (``bencher run --testbed``), not part of the name.

One entry per timed measurement; measurements with timing disabled have no figures and are left out.
"""

from __future__ import annotations

from typing import Any

from pytest_accel.core.measurement import Measurement, display_name
from pytest_accel.core.stats import quantile, relative_spread
from pytest_accel.judgement.results import ResultFile

__all__ = ["BIGGER", "SMALLER", "bencher_metrics", "github_action_benchmark"]

BIGGER = "customBiggerIsBetter"  # github-action-benchmark's tool names, for the docs and messages
SMALLER = "customSmallerIsBetter"
_MS = 1e3  # milliseconds per second
_NS = 1e9  # nanoseconds per second


def _timed(result: ResultFile) -> list[tuple[str, Measurement]]:
    """(display name, measurement) of every timed measurement, in name order."""
    return sorted((display_name(*key), m) for key, m in result.measurements.items() if not m.disabled)


def _quartile_seconds(measurement: Measurement) -> tuple[float, float]:
    """Seconds per call at the rounds' first and third quartiles."""
    return quantile(measurement.samples, 0.25), quantile(measurement.samples, 0.75)


def _extra(result: ResultFile, measurement: Measurement) -> str:
    """The tooltip: where and on what it was measured, and how steady the rounds were."""
    lines = [f"device: {result.device_key}"]
    if commit := result.provenance.get("commit"):
        lines.append(f"commit: {commit}")
    lines.append(f"rounds: {len(measurement.samples)}, spread (IQR/median): {relative_spread(measurement.samples):.1%}")
    return "\n".join(lines)


def github_action_benchmark(result: ResultFile, bigger_is_better: bool) -> list[dict[str, Any]]:
    """The ``customBiggerIsBetter`` (items/s) or ``customSmallerIsBetter`` (ms/call) entries of a result file."""
    entries = []
    for name, m in _timed(result):
        fast, slow = _quartile_seconds(m)
        if bigger_is_better:
            value, unit = m.items_per_second, f"{m.unit}/s"
            half_range = (m.items_per_call / fast - m.items_per_call / slow) / 2
        else:
            value, unit = m.seconds_per_call * _MS, "ms/call"
            half_range = (slow - fast) * _MS / 2
        entries.append(
            {"name": name, "unit": unit, "value": value, "range": f"± {half_range:.4g}", "extra": _extra(result, m)}
        )
    return entries


def bencher_metrics(result: ResultFile) -> dict[str, dict[str, dict[str, float]]]:
    """The Bencher Metric Format document of a result file (see the module docstring)."""
    document: dict[str, dict[str, dict[str, float]]] = {}
    for name, m in _timed(result):
        fast, slow = _quartile_seconds(m)
        measures = {
            "throughput": {
                "value": m.items_per_second,
                "lower_value": m.items_per_call / slow,
                "upper_value": m.items_per_call / fast,
            },
            "latency": {"value": m.seconds_per_call * _NS, "lower_value": fast * _NS, "upper_value": slow * _NS},
        }
        if m.peak_memory_bytes is not None:
            measures["peak-memory"] = {"value": float(m.peak_memory_bytes)}
        document[name] = measures
    return document
