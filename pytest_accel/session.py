"""The stateful half of the plugin, registered by ``pytest_configure``: device, results, reporting."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, final

import pytest

from pytest_accel.baselines import BaselineEntry, BaselineError, BaselineStore
from pytest_accel.devices import DeviceUnavailable, resolve_device
from pytest_accel.devices.base import Device
from pytest_accel.fixture import USER_PROPERTY
from pytest_accel.gate import GateResult, run_gate
from pytest_accel.measure import MeasureConfig
from pytest_accel.provenance import run_provenance
from pytest_accel.report import measurement_table
from pytest_accel.result import Measurement
from pytest_accel.verdict import Outcome, VerdictPolicy

__all__ = ["AccelSession", "Recorded"]

PERF_FIXTURE = "throughput"
RESULTS_SCHEMA = 1  # version of the --accel-json layout
_MARKER_SETTINGS = ("measure_seconds", "warmup_max_seconds", "min_rounds", "round_seconds")
_MARKER_POLICY = ("tolerance", "memory_tolerance")
WORLD_SIZE = 1  # single-process runs; torch.distributed runs come with the distributed support


@final
@dataclass(frozen=True)
class Recorded:
    """One measurement as it came back on a test report."""

    nodeid: str
    outcome: str
    measurement: Measurement
    verdict: Mapping[str, Any] | None  # GateResult.to_dict(), None when not judged (disabled)


def _ini_float(config: pytest.Config, name: str) -> float:
    raw = config.getini(name)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"ini option {name} = {raw!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise pytest.UsageError(f"ini option {name} = {raw!r} must be a finite number greater than 0")
    return value


def _ini_int(config: pytest.Config, name: str, minimum: int) -> int:
    raw = config.getini(name)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"ini option {name} = {raw!r} is not an integer") from None
    if value < minimum:
        raise pytest.UsageError(f"ini option {name} = {raw!r} must be at least {minimum}")
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
        self.policy = VerdictPolicy(
            tolerance=_ini_float(config, "accel_tolerance"),
            memory_tolerance=_ini_float(config, "accel_memory_tolerance"),
        )
        self.confirmations = _ini_int(config, "accel_confirmations", minimum=0)
        self.cpu_threads: int | None = (
            config.option.accel_cpu_threads or _ini_int(config, "accel_cpu_threads", minimum=0) or None
        )
        self.update: bool = config.option.accel_update
        self.strict: bool = config.option.accel_strict
        self.require_baseline: bool = config.option.accel_require_baseline
        self.store = BaselineStore(self._baselines_root())
        self.recorded: list[Recorded] = []
        self._device: Device | None = None
        self._baselines: dict[tuple[str, str], BaselineEntry] | None = None
        if self.choice != "auto":
            self.device()  # an explicit request is checked before anything runs (exit code 4)

    def _baselines_root(self) -> Path:
        if self.config.option.accel_baselines:
            return Path(self.config.option.accel_baselines).resolve()
        base = self.config.inipath.parent if self.config.inipath else self.config.rootpath
        return base / str(self.config.getini("accel_baselines"))

    def device(self) -> Device:
        """The resolved device; the first call resolves it (importing torch)."""
        if self._device is None:
            try:
                device = resolve_device(self.choice, self.cpu_threads)
            except DeviceUnavailable as error:
                raise pytest.UsageError(str(error)) from None
            device.activate()
            self._device = device
        return self._device

    def baselines(self) -> dict[tuple[str, str], BaselineEntry]:
        """This device's and profile's baseline entries, loaded once; a corrupt file is a usage error."""
        if self._baselines is None:
            try:
                self._baselines = self.store.load(self.device().key(), self.profile, WORLD_SIZE)
            except BaselineError as error:
                raise pytest.UsageError(f"cannot read the baselines: {error}") from None
        return self._baselines

    def policy_for(self, item: pytest.Item) -> VerdictPolicy:
        """The verdict thresholds for one test: ini defaults, overridden by its perf marker."""
        marker = item.get_closest_marker("perf")
        overrides = {k: v for k, v in (marker.kwargs if marker else {}).items() if k in _MARKER_POLICY}
        try:
            return replace(self.policy, **overrides) if overrides else self.policy
        except (TypeError, ValueError) as error:
            raise pytest.UsageError(f"{item.nodeid}: bad perf marker setting: {error}") from None

    def judge(self, item: pytest.Item, measurement: Measurement, remeasure: Callable[[], Measurement]) -> GateResult:
        """Run the regression gate for one measurement of ``item``."""
        entry = self.baselines().get((item.nodeid, measurement.name))
        confirmations = 0 if self.update else self.confirmations
        device = self.device()
        return run_gate(
            measurement,
            entry,
            self.policy_for(item),
            device.provenance(),
            remeasure,
            confirmations,
            gate_memory=device.exact_peak_memory,
        )

    def failure_of(self, gate: GateResult) -> str | None:
        """Why this gate result fails its test under the run's options, or None."""
        if self.update:
            return None  # recording new baselines: report, do not fail
        outcome = gate.outcome
        if outcome is Outcome.REGRESSED:
            return "regressed"
        if outcome is Outcome.NOISY and self.strict:
            return "noisy (and --accel-strict is set)"
        if outcome is Outcome.NEW and self.require_baseline:
            return "no baseline (and --accel-require-baseline is set)"
        return None

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
            self.policy_for(item)
        if self._device is None and perf_items:
            self.device()
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None and not hasattr(self.config, "workerinput"):
                for line in self.device_lines():
                    reporter.write_line(line)
        if perf_items:
            self.baselines()  # a corrupt baseline file stops the run before anything is measured

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect measurements from reports (this also receives xdist workers' reports)."""
        if report.when != "call" and not (report.when == "setup" and report.skipped):
            return
        for key, value in report.user_properties:
            if key == USER_PROPERTY:
                data = json.loads(str(value))
                verdict = data.pop("verdict", None)
                self.recorded.append(Recorded(report.nodeid, report.outcome, Measurement.from_dict(data), verdict))

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
        """Write ``--accel-json`` and, with ``--accel-update``, the baselines (controller only, under xdist)."""
        if hasattr(self.config, "workerinput"):
            return
        path: Path | None = self.config.option.accel_json
        if path is not None:
            path.write_text(json.dumps(self.results_document(), indent=2, sort_keys=True) + "\n")
        if self.update:
            self._write_baselines()

    def _write_baselines(self) -> None:
        measured = [r for r in self.recorded if not r.measurement.disabled]
        if not measured:
            return
        provenance = {**self.device().provenance(), **run_provenance(self.config.rootpath, self.profile, WORLD_SIZE)}
        previous = self.baselines()
        entries = [
            BaselineEntry(
                test=r.nodeid,
                metric=r.measurement.name,
                unit=r.measurement.unit,
                items_per_call=r.measurement.items_per_call,
                samples=r.measurement.samples,
                probe_samples=r.measurement.probe_samples,
                peak_memory_bytes=r.measurement.peak_memory_bytes,
                # A tolerance someone set by hand in the baseline file survives a refresh.
                tolerance=getattr(previous.get((r.nodeid, r.measurement.name)), "tolerance", None),
                memory_tolerance=getattr(previous.get((r.nodeid, r.measurement.name)), "memory_tolerance", None),
                provenance=provenance,
            )
            for r in measured
        ]
        path = self.store.update(self.device().key(), self.profile, WORLD_SIZE, entries)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                f"accel: wrote {len(entries)} baseline entr{'y' if len(entries) == 1 else 'ies'} to {path}"
            )

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
            "results": [
                {"test": r.nodeid, "outcome": r.outcome, "verdict": r.verdict, **r.measurement.to_dict()}
                for r in self.recorded
            ],
        }
