"""The machine's peaks: datasheet look-up and the % of peak a figure is reported as."""

from __future__ import annotations

import pytest

from pytest_accel.engine.machine import DatasheetPeak, MeasuredPeak, datasheet_peak, peak_figures


@pytest.mark.parametrize(
    "key, tflops",
    [
        ("cuda-nvidia-h100-80gb-hbm3", 989.0),
        ("cuda-nvidia-h100-pcie", 756.0),
        ("cuda-nvidia-a100-sxm4-40gb", 312.0),
        ("cuda-nvidia-h200", 989.0),
        ("hpu-gaudi2", 432.0),
        ("hpu-gaudi3", 1835.0),
    ],
)
def test_datasheet_peaks_by_device_key(key: str, tflops: float) -> None:
    peak = datasheet_peak(key)
    assert peak is not None and peak.tflops_bf16 == tflops


@pytest.mark.parametrize("key", ["cpu-intel-xeon-2c", "cuda-some-new-gpu", "hpu-gaudi2-w8"])
def test_no_datasheet_for_unknown_devices(key: str) -> None:
    assert datasheet_peak(key) is None


def test_peak_figures_are_percentages_of_what_was_passed() -> None:
    measured, sheet = MeasuredPeak(tflops=500.0, bytes_per_second=2e12), DatasheetPeak(1000.0, 4000.0, "sheet")
    assert peak_figures(250.0, 1e12, measured, sheet) == {
        "percent_of_measured_tflops": 50.0,
        "percent_of_datasheet_tflops": 25.0,
        "percent_of_measured_bandwidth": 50.0,
        "percent_of_datasheet_bandwidth": 25.0,
    }
    assert peak_figures(250.0, None, measured, None) == {"percent_of_measured_tflops": 50.0}
    assert peak_figures(None, None, measured, sheet) == {}
