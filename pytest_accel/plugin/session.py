"""The stateful half of the plugin, registered by ``pytest_configure``: its pytest hooks, and the wiring.

``AccelSession`` translates pytest objects and delegates: options come from ``options.AccelOptions``,
the device, the stores and the gates from ``parts.RunParts``, what each test takes beside its figure
from ``plans``, the run's figures and files from ``finish``. It builds each test's ``Throughput``
from those parts.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Any, final

import pytest

from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Cause
from pytest_accel.judgement.confirm import in_fresh_process
from pytest_accel.judgement.recording import orphaned_tests, stale_lines
from pytest_accel.judgement.results import USER_PROPERTY, Recorded
from pytest_accel.judgement.verdict import VerdictRecord
from pytest_accel.outputs.terminal import benchmark_skip_line, device_lines, history_line
from pytest_accel.plugin.finish import RunFigures, RunFiles, summary_lines
from pytest_accel.plugin.fixture import Throughput
from pytest_accel.plugin.options import AccelOptions
from pytest_accel.plugin.parts import RunParts
from pytest_accel.plugin.plans import count_plan, counts, operator_plan, structure_plan, takes_structures
from pytest_accel.plugin.status import LiveStatus
from pytest_accel.plugin.workers import Workers, is_worker, worker_output
from pytest_accel.sittings.calibrate import StandardLoad

__all__ = ["PERF_FIXTURE", "AccelSession", "is_perf_item"]

PERF_FIXTURE = "throughput"


def is_perf_item(item: pytest.Item) -> bool:
    """Whether a test measures (uses the throughput fixture or carries the perf marker)."""
    return PERF_FIXTURE in getattr(item, "fixturenames", ()) or item.get_closest_marker("perf") is not None


def _marker(item: pytest.Item) -> dict[str, Any]:
    marker = item.get_closest_marker("perf")
    return dict(marker.kwargs) if marker is not None else {}


@final
class AccelSession:
    """The parts and the results of one pytest run; the hooks that drive them."""

    def __init__(
        self, config: pytest.Config, early: tuple[dict[str, str], tuple[str, ...] | None] = ({}, None)
    ) -> None:
        self.config = config
        self.options = options = AccelOptions.from_config(config)
        self.parts = parts = RunParts(config, options, early)  # early: the setup before pytest-accel touched it
        self.reports = parts.world is None or parts.world.rank == 0  # only rank 0 prints and writes
        self.recorded: list[Recorded] = []
        self.traces: list[Path] = []  # --accel-trace files written by this run
        self.problems: list[str] = []  # what went wrong beside the tests (the calibration load)
        self.unwritten: list[tuple[str, str]] = []  # (what, why) of the outputs sessionfinish could not write
        self.collected: set[str] = set()  # every test collected, selected or not
        self.figures = RunFigures(parts.device, parts.store, options, parts.world_size)
        self.load: StandardLoad | None = None  # --accel-calibrate's, while it runs
        self.workers = Workers.of_run(config, options)  # an xdist controller's; None: this process measures
        if options.device != "auto" and self.workers is None:
            parts.device()  # an explicit request is checked before anything runs (exit code 4)

    def throughput(self, item: pytest.Item, benchmark: Any) -> Throughput:
        """The ``throughput`` fixture's value for one test."""
        marker, options, parts = _marker(item), self.options, self.parts
        config, policy, alone = options.measure_config(marker), options.policy_for(marker), parts.world is None
        return Throughput(
            device=parts.device(),
            config=config,
            benchmark=benchmark,
            timer=lambda metric: parts.timer(item.nodeid, metric),
            judge=lambda first, again, state: parts.gate().judge(item.nodeid, first, policy, again, state),
            record=lambda measurement, verdict: self._record(item, measurement, verdict),
            items_scale=parts.world_size,
            operators=operator_plan(options, item.nodeid, alone, self.traces.append, self.config.option.verbose > 0),
            structure=structure_plan(options, item.nodeid, marker, alone, parts.structure_gate),
            progress=self._live(item.nodeid),
            disabled_fails=options.unjudged_fails(),
            allow_setup_mismatch=options.allow_setup_mismatch,
            count=count_plan(options, item.nodeid, marker, alone, parts.count_gate, parts.count_key,
                             lambda test: parts.accept(test, "--accel-update")),
        )  # fmt: skip

    def _live(self, test: str) -> LiveStatus:
        """A long test's live status (plugin/status.py): said by the terminal reporter, capture suspended."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")

        def say(line: str) -> None:
            if reporter is not None:
                with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
                    reporter.write_line(line)

        return LiveStatus.shown(test, say, tty=bool(getattr(reporter, "isatty", False)))

    def _record(self, item: pytest.Item, result: Measurement, verdict: VerdictRecord | None) -> Measurement:
        """Add the %-of-peak and scaling figures, attach the result and its verdict to the test report."""
        result = self.figures.add(item.nodeid, result)
        item.user_properties.append((USER_PROPERTY, Recorded.property_value(result, verdict)))
        return result

    def device_lines(self) -> list[str]:
        """Header lines: the device, its key and provenance; or that an ``auto`` device is resolved later."""
        device, profile = self.parts.resolved, self.options.profile
        if device is None:
            return [f"accel: device {self.options.device} (resolved when a perf test is collected), profile {profile}"]
        return device_lines(device.kind, device.key(), profile, device.provenance())

    def _history_line(self, reporter: pytest.TerminalReporter | None) -> None:
        """With ``--accel-history``: read it now (a bad folder stops the run) and say what it gives."""
        folder = self.options.history
        if folder is None:
            return
        drifts = self.parts.drifts()
        if reporter is not None and not hasattr(self.config, "workerinput"):
            reporter.write_line(history_line(folder, self.parts.key(), drifts))

    # --- hooks -------------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """Name the device when it is already known (explicit --device); auto resolves after collection."""
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
        if self.parts.resolved is None and perf_items:
            self.parts.device()
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None and not hasattr(self.config, "workerinput"):
                for line in self.device_lines():
                    reporter.write_line(line)
        if perf_items and getattr(self.config.option, "benchmark_skip", False):  # pytest-benchmark skips them all
            if fails := self.options.unjudged_fails():
                raise pytest.UsageError(f"--benchmark-skip skips every perf test, and {fails}")
            self.problems.append(benchmark_skip_line(len(perf_items)))
        if perf_items:
            self.parts.baselines()  # a corrupt baseline file stops the run before anything is measured
            self._history_line(self.config.pluginmanager.get_plugin("terminalreporter"))
            if takes_structures(self.options, self.parts.world is None):
                self.parts.structure_gate()  # so does a corrupt structural record

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Deselected tests still exist: a baseline of theirs is not left behind (``orphaned_tests``)."""
        self.collected.update(item.nodeid for item in items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """``--accel-calibrate``: start the standard load. ``--accel-stale`` / ``--accel-prune``: list
        (and remove) entries of tests that no longer exist."""
        options, parts = self.options, self.parts
        self.collected.update(item.nodeid for item in session.items)
        if options.calibrate and parts.world is None and not hasattr(self.config, "workerinput"):
            self._start_load([item.nodeid for item in session.items if is_perf_item(item)])
        counted = [t.nodeid for t in session.items if is_perf_item(t) and counts(options, _marker(t), not parts.world)]
        if counted and (problem := parts.count(counted)) is not None:
            self.problems.append(f"accel: {problem}")
        if not options.stale or hasattr(self.config, "workerinput"):
            return
        if self.config.option.keyword or self.config.option.markexpr:
            raise pytest.UsageError("--accel-stale/--accel-prune judge what exists from what is collected: drop -k/-m")
        where, recorded = (parts.device().key(), options.profile, parts.world_size), {t for t, _ in parts.baselines()}
        collected = {item.nodeid for item in session.items}
        lines = stale_lines(parts.store, where, recorded, collected, self.config.rootpath, options.prune)
        pytest.exit("\n".join(lines), returncode=0)

    def _start_load(self, tests: list[str]) -> None:
        if not tests or in_fresh_process():
            return
        self.load = StandardLoad(tests, self.config.rootpath, self.parts.child_settings())
        self.load.start()
        if (reporter := self.config.pluginmanager.get_plugin("terminalreporter")) is not None:
            reporter.write_line(f"accel: {self.load.description()}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect measurements from the reports of call phases (and of setups that skipped)."""
        if report.when != "call" and not (report.when == "setup" and report.skipped):
            return
        for key, value in report.user_properties:
            if key == USER_PROPERTY:
                self.recorded.append(Recorded.from_property(report.nodeid, report.outcome, str(value)))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """One table of every measurement of the run (rank 0 only under torchrun)."""
        if not self.recorded or not self.reports:
            for problem in self.problems if self.reports else ():  # --benchmark-skip: nothing was measured
                terminalreporter.write_line(problem, red=True)
            return
        terminalreporter.write_sep("=", "accel measurements")
        key = self.parts.key() if self.workers is None else self.workers.key(self.options.device)
        waits, sittings = self.parts.waits(), self.parts.sittings()
        new = [r.test for r in self.recorded if r.verdict is not None and r.verdict.time.abstention is not None
               and r.verdict.time.abstention.cause is Cause.NO_BASELINE]  # fmt: skip
        baselined = {test for test, _ in self.parts.baselines()} if new and not self.workers else set()  # judged
        lines = summary_lines(
            self.recorded, key, self.options, self.traces, self.problems, self.unwritten, waits, sittings,
            orphaned_tests(baselined, self.collected, new),
        )  # fmt: skip
        for line, red in lines:
            terminalreporter.write_line(line, red=red)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write ``--accel-json``, ``--accel-markdown`` and, with ``--accel-update``, the baselines.

        An output that cannot be written (a read-only folder, a baseline file corrupted meanwhile)
        loses nothing else: the others are still written, the table is still printed, the problem
        is named under it, and the run exits 4 (a usage error: the run's figures stand). Under
        torchrun, ``ranks.RankAgreement`` has waited for every rank to finish first.
        """
        if self.load is not None:
            self.load.stop()
            if self.load.failure:
                self.problems.append(f"accel: {self.load.failure}: the calibration may not have seen it")
        if not self.reports:
            return
        reporter, parts, options = self.config.pluginmanager.get_plugin("terminalreporter"), self.parts, self.options
        if self.workers is not None:  # the workers recorded the baselines; the controller writes the run's files
            self.recorded, options = self.workers.in_order(self.recorded), replace(options, update=False)
            self.problems += self.workers.problems()
        elif is_worker(self.config):  # each worker records its own figures (merged under a lock); no run files
            options = replace(options, json_path=None, markdown_path=None)
        files = RunFiles(
            options, self.recorded, parts.resolved, parts.baselines, parts.store, parts.structures,
            parts.structure_gate_taken, parts.structure_key, parts.world_size, self.config.rootpath,
            say=lambda line: reporter.write_line(f"accel: {line}") if reporter is not None else None,
            waited=sum(w.seconds for w in parts.waits()) + (self.workers.waited() if self.workers else 0.0),
            environment=parts.environment if parts.resolved is not None else None, environments=parts.environments,
            described=self.workers.described() if self.workers is not None else None,
        )  # fmt: skip
        self.unwritten = files.write() + (self.workers.unwritten() if self.workers is not None else [])
        if is_worker(self.config):
            worker_output(self.config, parts, self.problems, self.unwritten)
        if self.options.update and (where := parts.write_counts()) is not None and reporter is not None:
            reporter.write_line(f"accel: counted work recorded: {where}")
        if self.unwritten:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
