"""The stateful half of the plugin, registered by ``pytest_configure``: its pytest hooks, and the wiring.

``AccelSession`` translates pytest objects and delegates: options come from ``options.AccelOptions``,
measuring from ``engine``, judging (all of confirmation, failure text) from ``judgement.gate.Gate``,
files and tables from ``outputs``. It builds each test's ``Throughput`` from those parts.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, final

import pytest

from pytest_accel.core.advice import AccelAdvice
from pytest_accel.core.measurement import Measurement
from pytest_accel.engine.devices import DeviceUnavailable, resolve_device
from pytest_accel.engine.devices.base import Device, RegionTimer
from pytest_accel.engine.distributed import Coordinator, DistributedTimer, RankFailure, world_from_environment
from pytest_accel.engine.operators import trace_path
from pytest_accel.engine.structure import structure_key
from pytest_accel.finish import RunFigures, RunFiles
from pytest_accel.fixture import OperatorPlan, StructurePlan, Throughput
from pytest_accel.judgement.baselines import BaselineEntry, BaselineError, BaselineStore
from pytest_accel.judgement.calibrate import StandardNeighbour
from pytest_accel.judgement.confirm import ChildSettings, in_fresh_process, inherited_options
from pytest_accel.judgement.gate import Gate
from pytest_accel.judgement.recording import stale_tests
from pytest_accel.judgement.structures import StructureGate, StructureStore
from pytest_accel.judgement.verdict import VerdictRecord
from pytest_accel.options import AccelOptions
from pytest_accel.outputs.results import USER_PROPERTY, Recorded
from pytest_accel.outputs.terminal import measurement_table, verdict_summary
from pytest_accel.ranks import RankAgreement

__all__ = ["PERF_FIXTURE", "AccelSession", "is_perf_item"]

PERF_FIXTURE = "throughput"


def is_perf_item(item: pytest.Item) -> bool:
    """Whether a test measures (uses the throughput fixture or carries the perf marker)."""
    return PERF_FIXTURE in getattr(item, "fixturenames", ()) or item.get_closest_marker("perf") is not None


def _marker(item: pytest.Item) -> dict[str, Any]:
    marker = item.get_closest_marker("perf")
    return dict(marker.kwargs) if marker is not None else {}


def _xdist_workers(config: pytest.Config) -> int:
    """How many xdist workers this run has (0 when this process is not an xdist worker)."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    return int(workerinput.get("workercount", 1)) if workerinput is not None else 0


@final
class AccelSession:
    """The device, the gate and the results of one pytest run; the hooks that drive them."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = AccelOptions.from_config(config)
        self.store = BaselineStore(self.options.baselines)
        self.structures = StructureStore(self.options.baselines)
        self.world = world_from_environment()  # set when pytest runs on every rank of a torchrun job
        self.world_size = self.world.world_size if self.world else 1
        self.reports = self.world is None or self.world.rank == 0  # only rank 0 prints and writes
        self.coordinator: Coordinator | None = None
        self.recorded: list[Recorded] = []
        self.traces: list[Path] = []  # --accel-trace files written by this run
        self.write_failures: list[str] = []  # outputs sessionfinish could not write, shown under the table
        self._device: Device | None = None
        self._baselines: dict[tuple[str, str], BaselineEntry] | None = None
        self._gate: Gate | None = None
        self._structure_gate: StructureGate | None = None
        self._structure_key: str | None = None
        self.figures = RunFigures(self.device, self.store, self.options.profile, self.world_size)
        self.neighbour: StandardNeighbour | None = None  # --accel-calibrate's, while it runs
        if self.options.device != "auto":
            self.device()  # an explicit request is checked before anything runs (exit code 4)

    # --- the parts, built lazily -------------------------------------------------------------

    def device(self) -> Device:
        """The resolved device; the first call resolves it (importing torch)."""
        if self._device is None:
            threads, index = self.options.cpu_threads, 0
            if self.world is not None:
                index = self.world.local_rank  # one GPU per rank on CUDA
                cores = os.cpu_count() or 1  # CPU ranks share the cores: half of them, split evenly
                threads = threads or max(1, cores // 2 // self.world.local_world_size)
            try:
                device = resolve_device(self.options.device, threads, index, self.options.host_allocator)
            except DeviceUnavailable as error:
                raise pytest.UsageError(str(error)) from None
            cores = os.cpu_count() or 1
            if device.kind == "cpu" and self.options.cpu_threads and self.options.cpu_threads > cores:
                self.config.issue_config_time_warning(
                    AccelAdvice(
                        f"--accel-cpu-threads {self.options.cpu_threads} is more than this host's {cores} cores:"
                        " the threads contend for cores, and the figures measure that contention"
                    ),
                    stacklevel=2,
                )
            device.activate()
            self._device = device
            if self.world is not None:
                self.coordinator = Coordinator.start(self.world, device.kind, self.options.rank_timeout_seconds)
                self.config.pluginmanager.register(RankAgreement(self.coordinator), "accel-ranks")
        return self._device

    def baselines(self) -> dict[tuple[str, str], BaselineEntry]:
        """This device's and profile's baseline entries, loaded once; a corrupt file is a usage error."""
        if self._baselines is None:
            try:
                self._baselines = self.store.load(self.device().key(), self.options.profile, self.world_size)
            except BaselineError as error:
                raise pytest.UsageError(f"cannot read the baselines: {error}") from None
        return self._baselines

    def gate(self) -> Gate:
        """The regression gate of this run (built once the device is known)."""
        if self._gate is None:
            device = self.device()
            # Not under torchrun, and not from a confirmation child (it would spawn one in turn).
            may_spawn = self.world is None and not in_fresh_process()
            mode = self.options.gate_mode(self._child_settings() if may_spawn else None)
            self._gate = Gate(self.baselines, device.provenance(), mode, self.config.rootpath, device.exact_peak_memory)
        return self._gate

    def structure_gate(self) -> StructureGate:
        """The structural verdicts of this run, against the records of this device's structure key."""
        if self._structure_gate is None:
            self._structure_key = key = structure_key(self.device())
            try:
                stored = self.structures.load(key, self.options.profile, self.world_size)
            except BaselineError as error:
                raise pytest.UsageError(f"cannot read the structural records: {error}") from None
            self._structure_gate = StructureGate(lambda: stored, update=self.options.update)
        return self._structure_gate

    def _structure_plan(self, test: str, marker: dict[str, Any]) -> StructurePlan:
        """Whether this test's structural record is taken, and how its change is judged (see StructurePlan)."""
        policy = self.options.structure_for(marker)
        if policy == "off":
            return StructurePlan(off="structural records are off in this run (--accel-structure=off)")
        if self.world is not None:  # a profile per rank would need every rank to take it in step
            return StructurePlan(off="structural records are not taken under torchrun")
        if self.options.calibrate or in_fresh_process():
            return StructurePlan(off="structural records are taken by runs that judge or record")
        gate = self.structure_gate()
        return StructurePlan(
            judge=lambda metric, now: gate.judge(test, metric, now, policy),
            expected=lambda metric: gate.expected(test, metric),
            key=self._structure_key or "",
            only=self.options.structure_only,
        )

    def _child_settings(self) -> ChildSettings:
        """What a child pytest (a confirmation, the calibration's neighbour) needs to measure as this run does."""
        device, invocation = self.device(), self.config.invocation_params
        return self.options.child_settings(
            device.kind, getattr(device, "threads", None), inherited_options(invocation.args, invocation.dir)
        )

    def throughput(self, item: pytest.Item, benchmark: Any) -> Throughput:
        """The ``throughput`` fixture's value for one test."""
        marker = _marker(item)
        config, policy = self.options.measure_config(marker), self.options.policy_for(marker)
        return Throughput(
            device=self.device(),
            config=config,
            benchmark=benchmark,
            timer=lambda metric: self._timer(item.nodeid, metric),
            judge=lambda first, again: self.gate().judge(item.nodeid, first, policy, again),
            record=lambda measurement, verdict: self._record(item, measurement, verdict),
            items_scale=self.world_size,
            xdist_workers=_xdist_workers(self.config),
            operators=self._operator_plan(item.nodeid),
            structure=self._structure_plan(item.nodeid, marker),
        )

    def _operator_plan(self, test: str) -> OperatorPlan:
        """When this test's operator tables are taken (see OperatorPlan), or why they never are."""
        options = self.options
        if options.operators == "off":
            return OperatorPlan(off="operator profiles are off in this run (--accel-operators=off)")
        if self.world is not None:  # a profile per rank would need every rank to take it in step
            return OperatorPlan(off="operator profiles are not taken under torchrun")
        if in_fresh_process():  # a confirmation child: the parent profiles once it has the answer
            return OperatorPlan(off="operator profiles are taken by the run that spawned this confirmation")
        folder = options.trace_dir
        return OperatorPlan(
            update=options.update,
            always=options.operators == "always",
            trace=None if folder is None else (lambda metric: trace_path(folder, test, metric)),
            on_trace=self.traces.append,
        )

    def _timer(self, test: str, metric: str) -> RegionTimer:
        """The device's timer; under torchrun, one whose rounds start together and last as the slowest rank's."""
        timer = self.device().timer()
        if self.coordinator is None:
            return timer
        return DistributedTimer(timer, self.coordinator, test, metric)

    def _record(self, item: pytest.Item, result: Measurement, verdict: VerdictRecord | None) -> Measurement:
        """Add the %-of-peak and scaling figures, attach the result and its verdict to the test report."""
        result = self.figures.add(item.nodeid, result)
        item.user_properties.append((USER_PROPERTY, Recorded.property_value(result, verdict)))
        return result

    def device_lines(self) -> list[str]:
        """Header lines: device, key and provenance."""
        device = self.device()
        provenance = ", ".join(f"{k}={v}" for k, v in device.provenance().items())
        return [
            f"accel: device {device.kind} (key {device.key()}), profile {self.options.profile}",
            f"accel: {provenance}",
        ]

    # --- hooks -------------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """Name the device when it is already known (explicit --device); auto resolves after collection."""
        if self._device is None:
            return [
                f"accel: device {self.options.device} (resolved when a perf test is collected), "
                f"profile {self.options.profile}"
            ]
        return self.device_lines()

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Check perf markers; resolve an ``auto`` device only when perf tests were collected."""
        perf_items = [item for item in items if is_perf_item(item)]
        for item in perf_items:
            try:  # a bad marker setting is a usage error before anything runs
                self.options.measure_config(_marker(item))
                self.options.policy_for(_marker(item))
            except ValueError as error:
                raise pytest.UsageError(f"{item.nodeid}: {error}") from None
        if self._device is None and perf_items:
            self.device()
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None and not hasattr(self.config, "workerinput"):
                for line in self.device_lines():
                    reporter.write_line(line)
        if perf_items:
            self.baselines()  # a corrupt baseline file stops the run before anything is measured
            if self.options.structure != "off" and self.world is None and not in_fresh_process():
                self.structure_gate()  # so does a corrupt structural record

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """``--accel-calibrate``: start the standard neighbour. ``--accel-stale`` / ``--accel-prune``: list
        (and remove) entries of tests that no longer exist."""
        options = self.options
        if options.calibrate and self.world is None and not hasattr(self.config, "workerinput"):
            self._start_neighbour([item.nodeid for item in session.items if is_perf_item(item)])
        if not options.stale or hasattr(self.config, "workerinput"):
            return
        if self.config.option.keyword or self.config.option.markexpr:
            raise pytest.UsageError("--accel-stale/--accel-prune judge what exists from what is collected: drop -k/-m")
        collected = {item.nodeid for item in session.items}
        tests = stale_tests((test for test, _ in self.baselines()), collected, self.config.rootpath)
        key = self.device().key()
        if options.prune and tests:
            keep = {test for test, _ in self.baselines() if test not in tests}
            self.store.prune(key, options.profile, self.world_size, keep)
        verb = "removed" if options.prune else "stale"
        where = self.store.path_for(key, options.profile, self.world_size)
        lines = [f"accel: {verb}: {test}" for test in tests] or [f"accel: no stale entries in {where}"]
        pytest.exit("\n".join(lines), returncode=0)

    def _start_neighbour(self, tests: list[str]) -> None:
        if not tests or in_fresh_process():
            return
        self.neighbour = StandardNeighbour(tests, self.config.rootpath, self._child_settings())
        self.neighbour.start()
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                f"accel: calibrating beside the standard neighbour: a second copy of these {len(tests)} perf "
                "test(s) in another pytest process, restarted whenever it ends"
            )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect measurements from the reports of call phases (and of setups that skipped)."""
        if report.when != "call" and not (report.when == "setup" and report.skipped):
            return
        for key, value in report.user_properties:
            if key == USER_PROPERTY:
                self.recorded.append(Recorded.from_property(report.nodeid, report.outcome, str(value)))

    def _key(self) -> str:
        return self._device.key() if self._device is not None else self.options.device

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """One table of every measurement of the run (rank 0 only under torchrun)."""
        if not self.recorded or not self.reports:
            return
        terminalreporter.write_sep("=", "accel measurements")
        for line in measurement_table(self.recorded):
            terminalreporter.write_line(line)
        recording = self.options.update or self.options.calibrate  # verdicts are reported, not enforced
        for line in verdict_summary(self.recorded, f"{self._key()}/{self.options.profile}", recording):
            terminalreporter.write_line(line)
        if self.traces:
            terminalreporter.write_line(
                f"accel: wrote {len(self.traces)} operator trace(s) (chrome://tracing, ui.perfetto.dev):"
            )
            for trace in self.traces:
                terminalreporter.write_line(f"  {trace}")
        if self.options.json_path is not None and not any("--accel-json" in f for f in self.write_failures):
            terminalreporter.write_line(f"accel: results written to {self.options.json_path}")
        for failure in self.write_failures:
            terminalreporter.write_line(failure, red=True)
        if any("the baselines" in failure for failure in self.write_failures):
            terminalreporter.write_line("accel: no baseline was changed; the figures above are this run's", red=True)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write ``--accel-json``, ``--accel-markdown`` and, with ``--accel-update``, the baselines.

        An output that cannot be written (a read-only folder, a baseline file corrupted meanwhile)
        loses nothing else: the others are still written, the table is still printed, the problem
        is named under it, and the run exits 4 (a usage error: the run's figures stand).
        """
        if self.coordinator is not None:
            # No rank leaves before every rank has finished its tests: torchrun ends the whole job
            # when the first rank exits, which would cut off the others' reports of a failure.
            try:
                self.coordinator.exchange("session", "finished", "")
            except RankFailure as failure:
                # Exit non-zero: torchrun then stops the job's other workers (a hung rank would
                # otherwise keep the job alive as long as it hangs), and the job fails naming the rank.
                print(f"accel: rank {self.coordinator.world.rank}: {failure}", file=sys.stderr)
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.neighbour is not None:
            self.neighbour.stop()
            if self.neighbour.failure:
                self.write_failures.append(f"accel: {self.neighbour.failure}: the calibration may not have seen it")
        if hasattr(self.config, "workerinput") or not self.reports:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        files = RunFiles(
            self.options, self.recorded, self._device, self.baselines, self.store, self.structures,
            self._structure_gate, self._structure_key, self.world_size, self.config.rootpath,
            say=lambda line: reporter.write_line(f"accel: {line}") if reporter is not None else None,
        )  # fmt: skip
        writers = files.writers()
        for what, write in writers:
            try:
                write()
            except (OSError, BaselineError) as error:
                detail = f"{error.filename}: {error.strerror}" if isinstance(error, OSError) else str(error)
                self.write_failures.append(f"accel: could not write {what}: {detail}")
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
