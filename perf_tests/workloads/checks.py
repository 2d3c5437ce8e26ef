"""What every perf test checks of its measurement: the figures it reports follow from what it passed."""

from __future__ import annotations

import math

from pytest_accel import Measurement

__all__ = ["check_measurement"]


def check_measurement(result: Measurement, *, unit: str, items: float, flops: float | None = None) -> None:
    """Assert the measurement is of ``items`` ``unit`` per call, finite, and its rates follow from its samples.

    ``items`` is per call on all ranks together. Where FLOPs were passed, TFLOP/s and the % of the
    session's measured peak must be there and agree with them. A disabled run (``--benchmark-disable``)
    only has to name the work.
    """
    assert result.unit == unit, f"measured {result.unit!r}, expected {unit!r}"
    assert result.items_per_call == items, f"{result.items_per_call} {unit} per call, expected {items}"
    if result.disabled:
        return
    assert result.samples and all(math.isfinite(s) and s > 0 for s in result.samples), result.samples
    assert math.isclose(result.items_per_second, items / result.seconds_per_call)
    if flops is not None:
        assert result.tflops is not None and math.isclose(result.tflops, flops / result.seconds_per_call / 1e12)
        percent = result.extra.get("percent_of_measured_tflops")
        assert percent is not None and math.isfinite(percent) and percent > 0, result.extra
