"""The stateful half of the plugin, registered by ``pytest_configure``: device, results, reporting."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

import pytest

from pytest_accel.devices import DeviceUnavailable, resolve_device
from pytest_accel.devices.base import Device
from pytest_accel.fixture import USER_PROPERTY
from pytest_accel.measure import MeasureConfig
from pytest_accel.report import measurement_table
from pytest_accel.result import Measurement

__all__ = ["AccelSession", "Recorded"]

PERF_FIXTURE = "throughput"
RESULTS_SCHEMA = 1  # version of the --accel-json layout
_MARKER_SETTINGS = ("measure_seconds", "warmup_max_seconds", "min_rounds", "round_seconds")


@final
@dataclass(frozen=True)
class Recorded:
    """One measurement as it came back on a test report."""

    nodeid: str
    outcome: str
    measurement: Measurement


def _ini_float(config: pytest.Config, name: str) -> float:
    raw = config.getini(name)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"ini option {name} = {raw!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise pytest.UsageError(f"ini option {name} = {raw!r} must be a finite number greater than 0")
    return value


def _ini_choice(config: pytest.Config, name: str, choices: tuple[str, ...]) -> str:
    value = str(config.getini(name))
    if value not in choices:
        raise pytest.UsageError(f"ini option {name} = {value!r}; choose one of {', '.join(choices)}")
    return value


def is_perf_item(item: pytest.Item) -> bool:
    """Whether a test measures (uses the throughput fixture or carries the perf marker)."""
    return PERF_FIXTURE in getattr(item, "fixturenames", ()) or item.get_closest_marker("perf") is not None


@final
class AccelSession:
    """Holds the device choice, builds measurement settings, gathers results, writes reports."""

    def __init__(self, config: pytest.Config) -> None:
        from pytest_accel.devices import DEVICE_CHOICES
        from pytest_accel.plugin import PROFILE_CHOICES

        self.config = config
        self.choice: str = config.option.accel_device or _ini_choice(config, "accel_device", DEVICE_CHOICES)
        self.profile: str = config.option.accel_profile or _ini_choice(config, "accel_profile", PROFILE_CHOICES)
        self.measure_seconds: float = config.option.accel_measure_seconds or _ini_float(config, "accel_measure_seconds")
        self.warmup_max_seconds = _ini_float(config, "accel_warmup_max_seconds")
        self.recorded: list[Recorded] = []
        self._device: Device | None = None
        if self.choice != "auto":
            self.device()  # an explicit request is checked before anything runs (exit code 4)

    def device(self) -> Device:
        """The resolved device; the first call resolves it (importing torch)."""
        if self._device is None:
            try:
                self._device = resolve_device(self.choice)
            except DeviceUnavailable as error:
                raise pytest.UsageError(str(error)) from None
        return self._device

    def device_lines(self) -> list[str]:
        """Header lines: device, key and provenance."""
        device = self.device()
        provenance = ", ".join(f"{k}={v}" for k, v in device.provenance().items())
        return [
            f"accel: device {device.kind} (key {device.key()}), profile {self.profile}",
            f"accel: {provenance}",
        ]

    def measure_config(self, item: pytest.Item) -> MeasureConfig:
        """Measurement settings for one test: ini and options, overridden by its perf marker."""
        settings: dict[str, Any] = {
            "measure_seconds": self.measure_seconds,
            "warmup_max_seconds": self.warmup_max_seconds,
        }
        marker = item.get_closest_marker("perf")
        if marker is not None:
            unknown = set(marker.kwargs) - set(_MARKER_SETTINGS) - {"tolerance", "memory_tolerance"}
            if unknown:
                raise pytest.UsageError(
                    f"{item.nodeid}: unknown perf marker setting(s) {', '.join(sorted(unknown))}; "
                    f"known: {', '.join(_MARKER_SETTINGS)}, tolerance, memory_tolerance"
                )
            settings.update({k: v for k, v in marker.kwargs.items() if k in _MARKER_SETTINGS})
        try:
            return MeasureConfig(**settings)
        except (TypeError, ValueError) as error:
            raise pytest.UsageError(f"{item.nodeid}: bad perf marker setting: {error}") from None

    @pytest.hookimpl(trylast=True)
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """Name the device when it is already known (explicit --device); auto resolves after collection."""
        if self._device is None:
            return [f"accel: device {self.choice} (resolved when a perf test is collected), profile {self.profile}"]
        return self.device_lines()

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Check perf markers; resolve an ``auto`` device only when perf tests were collected."""
        perf_items = [item for item in items if is_perf_item(item)]
        for item in perf_items:
            self.measure_config(item)  # a bad marker setting is a usage error before anything runs
        if self._device is None and perf_items:
            self.device()
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None and not hasattr(self.config, "workerinput"):
                for line in self.device_lines():
                    reporter.write_line(line)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect measurements from reports (this also receives xdist workers' reports)."""
        if report.when != "call" and not (report.when == "setup" and report.skipped):
            return
        for key, value in report.user_properties:
            if key == USER_PROPERTY:
                measurement = Measurement.from_dict(json.loads(str(value)))
                self.recorded.append(Recorded(report.nodeid, report.outcome, measurement))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """One table of every measurement of the run."""
        if not self.recorded:
            return
        terminalreporter.write_sep("=", "accel measurements")
        for line in measurement_table(self.recorded):
            terminalreporter.write_line(line)
        if self.config.option.accel_json is not None:
            terminalreporter.write_line(f"accel: results written to {self.config.option.accel_json}")

    def pytest_sessionfinish(self) -> None:
        """Write ``--accel-json`` (on the controller only, under xdist)."""
        path: Path | None = self.config.option.accel_json
        if path is None or hasattr(self.config, "workerinput"):
            return
        path.write_text(json.dumps(self.results_document(), indent=2, sort_keys=True) + "\n")

    def results_document(self) -> dict[str, Any]:
        """Every measurement of the run with the device's provenance."""
        provenance: Mapping[str, str] = {}
        key = None
        if self.recorded or self._device is not None:
            provenance = self.device().provenance()
            key = self.device().key()
        return {
            "schema": RESULTS_SCHEMA,
            "device": {"kind": self.choice if self._device is None else self._device.kind, "key": key},
            "provenance": dict(provenance),
            "profile": self.profile,
            "results": [{"test": r.nodeid, "outcome": r.outcome, **r.measurement.to_dict()} for r in self.recorded],
        }
