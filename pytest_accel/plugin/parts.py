"""The parts of one run, each built when first needed and then kept: the device (under torchrun with
the coordinator of the ranks), this device's baselines and structural records, the regression gate,
and the settings a child pytest gets. ``session.AccelSession`` connects them to pytest's hooks.

A stored file that cannot be read, or a device that was asked for and is not there, is a usage error
(exit 4) before anything is measured.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import final

import pytest

from pytest_accel.core.advice import AccelAdvice
from pytest_accel.core.environment import ENVIRONMENT_PROVENANCE, Environment
from pytest_accel.engine.cards import worker_place
from pytest_accel.engine.counting import as_started
from pytest_accel.engine.devices import DeviceUnavailable, resolve_device
from pytest_accel.engine.devices.base import Device, RegionTimer
from pytest_accel.engine.devices.hostalloc import allocator_cause
from pytest_accel.engine.distributed import Coordinator, DistributedTimer, world_from_environment
from pytest_accel.engine.environment import take_environment
from pytest_accel.engine.machine import wait_for_quiet
from pytest_accel.engine.structure import structure_key
from pytest_accel.judgement.baselines import BaselineEntry, BaselineStore
from pytest_accel.judgement.confirm import ChildSettings, accept_command, in_fresh_process, inherited_options
from pytest_accel.judgement.counts import CountGate, CountStore, count_key
from pytest_accel.judgement.drift import SEARCHED_NIGHTS, NightDrift, night_drifts
from pytest_accel.judgement.gate import Gate, Launchers, Waited
from pytest_accel.judgement.recorded_build import RecordedWord
from pytest_accel.judgement.results import ResultsError
from pytest_accel.judgement.structures import StructureGate, StructureStore
from pytest_accel.outputs.history_store import HistoryError, recent_figures
from pytest_accel.plugin.options import AccelOptions
from pytest_accel.plugin.ranks import RankAgreement
from pytest_accel.sittings.counting import COUNTING_ENV, count_selection, valgrind_version
from pytest_accel.sittings.fresh import fresh_launcher
from pytest_accel.sittings.recorded_build import measure_beside_recorded, recorded_commit
from pytest_accel.storage.environments import EnvironmentStore
from pytest_accel.storage.files import StoreError

__all__ = ["RunParts"]

# A counting process that ran other code than this run (what a child cannot inherit): its counts say nothing.
_OTHER_ENVIRONMENT = (
    "the counting process ran in another environment (digest {}, this run's {}: a plugin object given to "
    "pytest.main, or a plugin or variable this run set for itself), so its counts count other code"
)
# What this run's gate may start to settle a suspect: a fresh pytest, the recorded build beside this tree.
LAUNCHERS = Launchers(fresh_launcher, recorded_commit, measure_beside_recorded)


@contextmanager
def _unreadable(what: str) -> Iterator[None]:
    """A stored file that cannot be read (corrupt, foreign) is a usage error before anything is measured."""
    try:
        yield
    except StoreError as error:
        raise pytest.UsageError(f"cannot read {what}: {error}") from None


@final
class RunParts:
    """The device, the stores and the gates of one pytest run, built lazily from its options."""

    def __init__(
        self,
        config: pytest.Config,
        options: AccelOptions,
        early: tuple[dict[str, str], tuple[str, ...] | None] = ({}, None),
    ) -> None:
        self.config = config
        self.options = options
        self.store = BaselineStore(options.baselines)
        self.structures = StructureStore(options.baselines)
        self.environments = EnvironmentStore(options.baselines)
        # the variables as the user set them, and who imported torch before pytest-accel (plugin.EARLY_KEY)
        self._user_environ, self._torch_importers = early
        self._environment: Environment | None = None
        self.world = world_from_environment()  # set when pytest runs on every rank of a torchrun job
        self.world_size = self.world.world_size if self.world else 1
        self.coordinator: Coordinator | None = None
        self.resolved: Device | None = None  # the device, once resolved
        self._baselines: dict[tuple[str, str], BaselineEntry] | None = None
        self._gate: Gate | None = None
        self._drifts: dict[tuple[str, str], NightDrift] | None = None
        self.structure_gate_taken: StructureGate | None = None  # the structural gate, once built
        self.structure_key: str | None = None
        self.counts = CountStore(options.baselines)
        self.count_gate: CountGate | None = None  # this run's counts (--accel-count), once counted
        self.count_key = ""

    def device(self) -> Device:
        """The resolved device; the first call resolves it (importing torch)."""
        if self.resolved is None:
            threads: int | None = self.options.cpu_threads
            index, cores = 0, os.cpu_count() or 1
            if self.world is not None:
                threads, index = self.world.placement(threads, cores)
            try:
                device = resolve_device(self.options.device, threads, index, self.options.host_allocator)
            except DeviceUnavailable as error:
                raise pytest.UsageError(str(error)) from None
            if advice := self.options.thread_advice(device.kind, cores):
                self.config.issue_config_time_warning(AccelAdvice(advice), stacklevel=2)
            device.activate()
            self.resolved = device
            if self.world is not None:
                self.coordinator = Coordinator.start(self.world, device.kind, self.options.rank_timeout_seconds)
                self.config.pluginmanager.register(RankAgreement(self.coordinator), "accel-ranks")
        return self.resolved

    def key(self) -> str:
        """The device key, or the ``--device`` choice while no device is resolved."""
        return self.resolved.key() if self.resolved is not None else self.options.device

    def baselines(self) -> dict[tuple[str, str], BaselineEntry]:
        """This device's and profile's baseline entries, loaded once."""
        if self._baselines is None:
            with _unreadable("the baselines"):
                self._baselines = self.store.load(self.device().key(), self.options.profile, self.world_size)
        return self._baselines

    def drifts(self) -> dict[tuple[str, str], NightDrift]:
        """Each figure's drift between nights in ``--accel-history`` (none without it), read once; a
        missing folder or a corrupt result file there is a usage error, a folder with no nights of this
        device widens nothing."""
        if self._drifts is None:
            folder = self.options.history
            figures = {}
            if folder is not None:
                if not folder.is_dir():
                    raise pytest.UsageError(f"--accel-history {folder}: no such folder")
                try:
                    figures = recent_figures(folder, self.device().key(), SEARCHED_NIGHTS)
                except HistoryError:
                    figures = {}  # no result files yet (the history's first nights): nothing to widen by
                except ResultsError as error:
                    raise pytest.UsageError(f"cannot read the history (--accel-history): {error}") from None
            self._drifts = night_drifts(figures, self.options.tolerance)  # a change of level as the gate sizes one
        return self._drifts

    def environment(self) -> Environment:
        """What this run runs on besides the host and the repository (``core/environment.py``), taken once."""
        if self._environment is None:
            plugins = self.config.pluginmanager.list_name_plugin()
            variables = as_started(self._user_environ or os.environ)  # in the counting process, the parent's loader
            self._environment = take_environment(self.config.rootpath, plugins, variables)
        return self._environment

    def provenance(self) -> dict[str, str]:
        """The device's provenance and the environment's digest: what a figure is judged and recorded with."""
        return {**self.device().provenance(), ENVIRONMENT_PROVENANCE: self.environment().digest}

    def environment_changes(self, digest: str) -> str:
        """What changed since the environment of ``digest`` was recorded for this device, in a few words;
        "" where it was not kept (or cannot be read: the verdict then says the digests differ)."""
        try:
            then = self.environments.load(self.device().key(), digest)
        except StoreError:
            return ""
        return "" if then is None else ", ".join(then.changes(self.environment()))

    def setup_causes(self) -> dict[str, tuple[str, str]]:
        """Per setup field, why this run's is what it is and how to restore the baseline's (``run_gate``)."""
        device = self.device()
        allocator = device.provenance().get("host_allocator")
        if allocator is None:
            return {}
        cause = allocator_cause(self.options.host_allocator, allocator, self._user_environ, self._torch_importers)
        return {"host_allocator": cause}

    def gate(self) -> Gate:
        """The regression gate of this run (built once the device is known)."""
        if self._gate is None:
            device = self.device()
            # Not under torchrun, and not from a confirmation child (it would spawn one in turn).
            child = in_fresh_process()
            may_spawn = self.world is None and not child
            mode = self.options.gate_mode(self.child_settings() if may_spawn else None, one_reading=child)
            self._gate = Gate(
                self.baselines, self.provenance(), mode, self.config.rootpath, device.exact_peak_memory,
                lambda test: self.accept(test, "--accel-reset-history"), self.config.option.verbose > 0,
                quiet=wait_for_quiet if self.world is None else None,  # ranks measure in step: none waits alone
                drifts=self.drifts(), setup_causes=self.setup_causes(),
                environment_changes=self.environment_changes, launchers=LAUNCHERS, card=worker_place(),
            )  # fmt: skip
        return self._gate

    def waits(self) -> list[Waited]:
        """The figures this run's gate waited for quiet for (none when it judged nothing)."""
        return [] if self._gate is None else self._gate.waits

    def sittings(self) -> list[RecordedWord]:
        """The sittings beside recorded builds this run's gate held (none when it judged nothing)."""
        return [] if self._gate is None else self._gate.sittings

    def structure_gate(self) -> tuple[StructureGate, str]:
        """The structural verdicts of this run, and the structure key of this device they are kept under."""
        if self.structure_gate_taken is None or self.structure_key is None:
            self.structure_key = key = structure_key(self.device())
            with _unreadable("the structural records"):
                stored = self.structures.load(key, self.options.profile, self.world_size)
            self.structure_gate_taken = StructureGate(
                lambda: stored, update=self.options.update, accept=lambda test: self.accept(test, "--accel-update")
            )
        return self.structure_gate_taken, self.structure_key

    def count(self, tests: list[str]) -> str:
        """Count the work of ``tests`` in one process under callgrind (``sittings/counting.py``); what to say."""
        device = self.device()
        if device.kind != "cpu":
            why = f"the work is counted on the CPU device only: the device side of a {device.kind} run is out of scope"
            self.count_gate = CountGate({}, dict, {}, why)
            return f"not counted: {why}"
        if valgrind_version() is None:
            raise pytest.UsageError(
                "counting the work (--accel-count, count=True) needs valgrind: apt-get install valgrind"
            )
        run = count_selection(tests, self.config.rootpath, self.child_settings(), self.options.count_misses,
                              costs=self._count_costs(device.key()))  # fmt: skip
        # the counting process's environment is this run's with one thread and the portable kernels (COUNTING_ENV)
        plugins, variables = self.config.pluginmanager.list_name_plugin(), self._user_environ or dict(os.environ)
        ours = take_environment(self.config.rootpath, plugins, {**variables, **COUNTING_ENV}).digest
        if run.problem is None and run.environment not in (None, ours):
            run = replace(run, counts={}, problem=_OTHER_ENVIRONMENT.format(run.environment, ours))
        isa = next((count.context.get("isa", "") for count in run.counts.values()), "") or "unknown"
        self.count_key = key = count_key(device.key(), isa, run.valgrind or "unknown")
        with _unreadable("the counted work"):
            stored = self.counts.load(key, self.options.profile, self.world_size) if run.counts else {}
        self.count_gate = CountGate(run.counts, lambda: stored, run.missing, run.problem)
        if run.problem is not None:
            return f"not counted: {run.problem}"
        return f"counted the work of {len(run.counts)} measurement(s) under callgrind in {run.seconds:.0f} s ({key})"

    def _count_costs(self, device_key: str) -> dict[str, float]:
        """Each test's last recorded instructions per call (its metrics together), to share the counting out
        evenly; none where nothing is recorded or the file cannot be read (the gate says so later)."""
        key = count_key(device_key, COUNTING_ENV["ATEN_CPU_CAPABILITY"], valgrind_version() or "unknown")
        try:
            stored = self.counts.load(key, self.options.profile, self.world_size)
        except StoreError:
            return {}
        costs: dict[str, float] = {}
        for (test, _), recordings in stored.items():
            costs[test] = costs.get(test, 0.0) + recordings[-1].instructions
        return costs

    def write_counts(self) -> str | None:
        """``--accel-update``: this run's counts appended to their recordings; where they went."""
        gate = self.count_gate
        if gate is None or not gate.counts:
            return None
        return str(self.counts.update(self.count_key, self.options.profile, self.world_size, gate.recorded_again()))

    def accept(self, test: str, record: str) -> str:
        """The command that records ``test`` anew with ``record``, as the user would paste it."""
        invocation, config = self.config.invocation_params, self.config
        paths = config.args if config.args_source is pytest.Config.ArgsSource.ARGS else ()
        return accept_command(test, invocation.args, paths, invocation.dir, config.rootpath, record)

    def child_settings(self) -> ChildSettings:
        """What a child pytest (a confirmation, the calibration's load) needs to measure as this run does."""
        device, invocation = self.device(), self.config.invocation_params
        return self.options.child_settings(
            device.kind, getattr(device, "threads", None), inherited_options(invocation.args, invocation.dir)
        )

    def timer(self, test: str, metric: str) -> RegionTimer:
        """The device's timer; under torchrun, one whose rounds start together and last as the slowest rank's."""
        timer = self.device().timer()
        if self.coordinator is None:
            return timer
        return DistributedTimer(timer, self.coordinator, test, metric)
