"""The stateful half of the plugin, registered by ``pytest_configure``: device, results, reporting."""

from __future__ import annotations

import datetime
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, final

import pytest

from pytest_accel.judgement.baselines import BaselineEntry, BaselineError, BaselineStore
from pytest_accel.judgement.confirm import confirm_in_fresh_process, in_fresh_process
from pytest_accel.engine.devices import DeviceUnavailable, resolve_device
from pytest_accel.engine.devices.base import Device, RegionTimer
from pytest_accel.engine.machine import MeasuredPeak, measure_peak
from pytest_accel.engine.distributed import Coordinator, DistributedTimer, RankFailure, world_from_environment
from pytest_accel.fixture import USER_PROPERTY
from pytest_accel.flops import DatasheetPeak, datasheet_peak
from pytest_accel.judgement.gate import GateResult, run_gate, run_history, with_fresh_confirmation
from pytest_accel.engine.measure import MeasureConfig
from pytest_accel.outputs.pages import run_summary_markdown
from pytest_accel.engine.provenance import run_provenance
from pytest_accel.ranks import RankAgreement
from pytest_accel.outputs.terminal import measurement_table, verdict_summary
from pytest_accel.core.measurement import Measurement
from pytest_accel.outputs.results import RESULTS_SCHEMA
from pytest_accel.options import ini_bool, ini_choice, ini_float, ini_int
from pytest_accel.core.stats import median
from pytest_accel.judgement.verdict import Outcome, VerdictPolicy

__all__ = ["AccelSession", "Recorded"]

PERF_FIXTURE = "throughput"
_MARKER_SETTINGS = ("measure_seconds", "warmup_max_seconds", "min_rounds", "round_seconds")
_MARKER_POLICY = ("tolerance", "memory_tolerance")


@final
@dataclass(frozen=True)
class Recorded:
    """One measurement as it came back on a test report."""

    nodeid: str
    outcome: str
    measurement: Measurement
    verdict: Mapping[str, Any] | None  # GateResult.to_dict(), None when not judged (disabled)


def is_perf_item(item: pytest.Item) -> bool:
    """Whether a test measures (uses the throughput fixture or carries the perf marker)."""
    return PERF_FIXTURE in getattr(item, "fixturenames", ()) or item.get_closest_marker("perf") is not None


@final
class AccelSession:
    """Holds the device choice, builds measurement settings, gathers results, writes reports."""

    def __init__(self, config: pytest.Config) -> None:
        from pytest_accel.engine.devices import DEVICE_CHOICES
        from pytest_accel.plugin import PROFILE_CHOICES

        self.config = config
        self.choice: str = config.option.accel_device or ini_choice(config, "accel_device", DEVICE_CHOICES)
        self.profile: str = config.option.accel_profile or ini_choice(config, "accel_profile", PROFILE_CHOICES)
        self.measure_seconds: float = config.option.accel_measure_seconds or ini_float(config, "accel_measure_seconds")
        self.warmup_max_seconds = ini_float(config, "accel_warmup_max_seconds")
        self.policy = VerdictPolicy(
            tolerance=ini_float(config, "accel_tolerance"),
            memory_tolerance=ini_float(config, "accel_memory_tolerance"),
        )
        self.confirmations = ini_int(config, "accel_confirmations", minimum=0)
        self.cpu_threads: int | None = (
            config.option.accel_cpu_threads or ini_int(config, "accel_cpu_threads", minimum=0) or None
        )
        self.fresh_confirmation = ini_bool(config, "accel_fresh_process_confirmation")
        self.update: bool = config.option.accel_update or config.option.accel_reset_history
        self.reset_history: bool = config.option.accel_reset_history
        self.strict: bool = config.option.accel_strict
        self.require_baseline: bool = config.option.accel_require_baseline
        self.store = BaselineStore(self._baselines_root())
        self.world = world_from_environment()  # set when pytest runs on every rank of a torchrun job
        self.world_size = self.world.world_size if self.world else 1
        self.reports = self.world is None or self.world.rank == 0  # only rank 0 prints and writes
        self.rank_timeout = ini_float(config, "accel_rank_timeout_seconds")
        self.coordinator: Coordinator | None = None
        self.recorded: list[Recorded] = []
        self._device: Device | None = None
        self._baselines: dict[tuple[str, str], BaselineEntry] | None = None
        self._peak: MeasuredPeak | None = None
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
            threads, index = self.cpu_threads, 0
            if self.world is not None:
                index = self.world.local_rank  # one GPU per rank on CUDA
                cores = os.cpu_count() or 1  # CPU ranks share the cores: half of them, split evenly
                threads = threads or max(1, cores // 2 // self.world.local_world_size)
            try:
                device = resolve_device(self.choice, threads, index)
            except DeviceUnavailable as error:
                raise pytest.UsageError(str(error)) from None
            device.activate()
            self._device = device
            if self.world is not None:
                self.coordinator = Coordinator.start(self.world, device.kind, self.rank_timeout)
                self.config.pluginmanager.register(RankAgreement(self.coordinator), "accel-ranks")
        return self._device

    def timer_for(self, item: pytest.Item, name: str) -> RegionTimer:
        """The device's timer; under torchrun, one whose rounds start together and last as the slowest rank's."""
        timer = self.device().timer()
        if self.coordinator is None:
            return timer
        return DistributedTimer(timer, self.coordinator, item.nodeid, name)

    def baselines(self) -> dict[tuple[str, str], BaselineEntry]:
        """This device's and profile's baseline entries, loaded once; a corrupt file is a usage error."""
        if self._baselines is None:
            try:
                self._baselines = self.store.load(self.device().key(), self.profile, self.world_size)
            except BaselineError as error:
                raise pytest.UsageError(f"cannot read the baselines: {error}") from None
        return self._baselines

    def scaling_efficiency(self, nodeid: str, measurement: Measurement) -> float | None:
        """N-device items/s over N x the one-device baseline's (torchrun runs with a world-size-1 baseline)."""
        if self.world_size == 1:
            return None
        try:
            single = self.store.load(self.device().key(), self.profile, 1).get((nodeid, measurement.name))
        except BaselineError:
            return None  # reported when the one-device suite runs; not this run's concern
        if single is None:
            return None
        single_rate = single.items_per_call / median(single.samples)
        return measurement.items_per_second / (self.world_size * single_rate)

    def peaks(self) -> tuple[MeasuredPeak, DatasheetPeak | None]:
        """The device's peaks: measured once per session (a short matmul and copy), and its datasheet's."""
        if self._peak is None:
            self._peak = measure_peak(self.device())
        return self._peak, datasheet_peak(self.device().key())

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
        gate = run_gate(
            measurement,
            entry,
            self.policy_for(item),
            device.provenance(),
            remeasure,
            confirmations,
            gate_memory=device.exact_peak_memory,
        )
        # Not when recording (nothing fails then), not under torchrun, not from a confirmation child.
        may_spawn = self.fresh_confirmation and not self.update and self.world is None and not in_fresh_process()
        if gate.time.outcome is Outcome.REGRESSED and may_spawn:
            fresh = confirm_in_fresh_process(item.nodeid, measurement.name, self.config.rootpath, self._child_options())
            gate = replace(gate, time=with_fresh_confirmation(gate.time, fresh))
        return gate

    def _child_options(self) -> list[str]:
        """The options a confirmation child needs to measure and judge exactly as this run does."""
        device = self.device()
        options = [
            "--accel-device", device.kind, "--accel-profile", self.profile,
            "--accel-baselines", str(self.store.root), "--accel-measure-seconds", str(self.measure_seconds),
            "-o", f"accel_tolerance={self.policy.tolerance}",
            "-o", f"accel_memory_tolerance={self.policy.memory_tolerance}",
            "-o", f"accel_confirmations={self.confirmations}",
            "-o", f"accel_warmup_max_seconds={self.warmup_max_seconds}",
        ]  # fmt: skip
        threads = getattr(device, "threads", None)
        return [*options, "--accel-cpu-threads", str(threads)] if threads else options

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

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """``--accel-stale`` / ``--accel-prune``: list (and remove) entries of tests that no longer exist."""
        option = self.config.option
        if not (option.accel_stale or option.accel_prune) or hasattr(self.config, "workerinput"):
            return
        if option.keyword or option.markexpr:
            raise pytest.UsageError("--accel-stale/--accel-prune judge what exists from what is collected: drop -k/-m")
        collected = {item.nodeid for item in session.items}
        files = {nodeid.split("::", 1)[0] for nodeid in collected}
        rootpath = self.config.rootpath

        def stale(test: str) -> bool:
            # Only judge entries whose file was collected or is gone: a partial run prunes nothing else.
            path = test.split("::", 1)[0]
            return test not in collected and (path in files or not (rootpath / path).exists())

        tests = sorted({test for test, _ in self.baselines() if stale(test)})
        if option.accel_prune and tests:
            keep = {test for test, _ in self.baselines() if test not in tests}
            self.store.prune(self.device().key(), self.profile, self.world_size, keep)
        verb = "removed" if option.accel_prune else "stale"
        where = self.store.path_for(self.device().key(), self.profile, self.world_size)
        lines = [f"accel: {verb}: {test}" for test in tests] or [f"accel: no stale entries in {where}"]
        pytest.exit("\n".join(lines), returncode=0)

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
        """One table of every measurement of the run (rank 0 only under torchrun)."""
        if not self.recorded or not self.reports:
            return
        terminalreporter.write_sep("=", "accel measurements")
        for line in measurement_table(self.recorded):
            terminalreporter.write_line(line)
        key = self._device.key() if self._device is not None else self.choice
        for line in verdict_summary(self.recorded, f"{key}/{self.profile}", self.update):
            terminalreporter.write_line(line)
        if self.config.option.accel_json is not None:
            terminalreporter.write_line(f"accel: results written to {self.config.option.accel_json}")

    def pytest_sessionfinish(self) -> None:
        """Write ``--accel-json`` and, with ``--accel-update``, the baselines (controller only, under xdist)."""
        if self.coordinator is not None:
            # No rank leaves before every rank has finished its tests: torchrun ends the whole job
            # when the first rank exits, which would cut off the others' reports of a failure.
            try:
                self.coordinator.exchange("session", "finished", "")
            except RankFailure as failure:
                print(f"accel: rank {self.coordinator.world.rank}: {failure}", file=sys.stderr)
        if hasattr(self.config, "workerinput") or not self.reports:
            return
        path: Path | None = self.config.option.accel_json
        if path is not None:
            path.write_text(json.dumps(self.results_document(), indent=2, sort_keys=True) + "\n")
        markdown: Path | None = self.config.option.accel_markdown
        if markdown is not None:
            key = self._device.key() if self._device is not None else self.choice
            records = [
                (
                    r.nodeid if r.measurement.name == "throughput" else f"{r.nodeid} [{r.measurement.name}]",
                    r.measurement,
                    r.verdict,
                )
                for r in self.recorded
            ]
            markdown.write_text(run_summary_markdown(records, f"pytest-accel on {key} ({self.profile})"))
        if self.update:
            self._write_baselines()

    def _write_baselines(self) -> None:
        measured = [r for r in self.recorded if not r.measurement.disabled]
        if not measured:
            return
        provenance_now = self.device().provenance()
        provenance = {**provenance_now, **run_provenance(self.config.rootpath, self.profile, self.world_size)}
        previous = self.baselines()
        entries = [
            BaselineEntry(
                test=r.nodeid,
                metric=r.measurement.name,
                unit=r.measurement.unit,
                items_per_call=r.measurement.items_per_call,
                samples=r.measurement.samples,
                probe_samples=r.measurement.probe_samples,
                run_medians=run_history(
                    previous.get((r.nodeid, r.measurement.name)), r.measurement, provenance_now, self.reset_history
                ),
                peak_memory_bytes=r.measurement.peak_memory_bytes,
                # A tolerance someone set by hand in the baseline file survives a refresh.
                tolerance=getattr(previous.get((r.nodeid, r.measurement.name)), "tolerance", None),
                memory_tolerance=getattr(previous.get((r.nodeid, r.measurement.name)), "memory_tolerance", None),
                provenance=provenance,
            )
            for r in measured
        ]
        path = self.store.update(self.device().key(), self.profile, self.world_size, entries)
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
            "world_size": self.world_size,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "results": [
                {"test": r.nodeid, "outcome": r.outcome, "verdict": r.verdict, **r.measurement.to_dict()}
                for r in self.recorded
            ],
        }
