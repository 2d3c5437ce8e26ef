"""The machine's peaks: datasheet look-up and the % of peak a figure is reported as."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from pytest_accel.engine import machine
from pytest_accel.engine.devices.base import Device
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


class _Keyed:
    """Only what shared_peak asks of a device: its key."""

    def __init__(self, key: str) -> None:
        self._key = key

    def key(self) -> str:
        return self._key


def test_a_shared_peak_is_measured_once_per_device_key_and_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    measured: list[str] = []

    def fake_measure(device: Any) -> MeasuredPeak:
        measured.append(device.key())
        return MeasuredPeak(tflops=float(len(measured)), bytes_per_second=1e9)

    monkeypatch.setattr(machine, "measure_peak", fake_measure)
    shared = tmp_path / "peak-base.json"
    first = machine.shared_peak(cast(Device, _Keyed("cpu-a")), shared)
    again = machine.shared_peak(cast(Device, _Keyed("cpu-a")), shared)
    assert first == again == MeasuredPeak(1.0, 1e9) and measured == ["cpu-a"]
    other = machine.shared_peak(cast(Device, _Keyed("cpu-b")), shared)  # another device: measured over
    assert other == MeasuredPeak(2.0, 1e9) and measured == ["cpu-a", "cpu-b"]
    shared.write_text("{not json", encoding="utf-8")  # a broken file is measured over, never an error
    assert machine.shared_peak(cast(Device, _Keyed("cpu-b")), shared) == MeasuredPeak(3.0, 1e9)
    assert machine.shared_peak(cast(Device, _Keyed("cpu-b")), None) == MeasuredPeak(4.0, 1e9)  # no file: each run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["peak-base.json"]  # no scratch file left
