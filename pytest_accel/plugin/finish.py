"""What a run leaves behind: its figures beyond the measurement, and the files written when it ends.

``RunFigures`` adds the %-of-peak and multi-device scaling figures to a measurement. ``RunFiles``
writes ``--accel-json``, ``--accel-markdown``, and with ``--accel-update`` / ``--accel-calibrate``
the baselines, structural records and calibration; each writer is independent, so one that fails
loses nothing else (the session names the failure under its table and exits 4).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, final

from pytest_accel.core.cost import cost_of, price_for
from pytest_accel.core.energy import Energy
from pytest_accel.core.environment import ENVIRONMENT_PROVENANCE, Environment
from pytest_accel.core.measurement import Measurement, display_name, throttle_problem
from pytest_accel.core.outcomes import Outcome
from pytest_accel.core.roofline import bound_then, roofline
from pytest_accel.core.stats import median
from pytest_accel.core.units import format_percent_change
from pytest_accel.engine.cards import worker_place
from pytest_accel.engine.devices.base import Device
from pytest_accel.engine.machine import PEAK_FILE_ENV, MeasuredPeak, datasheet_peak, peak_figures, shared_peak
from pytest_accel.engine.provenance import run_provenance
from pytest_accel.judgement.baselines import BaselineEntry, BaselineStore
from pytest_accel.judgement.calibrate import calibrate_entries
from pytest_accel.judgement.gate import Waited
from pytest_accel.judgement.recorded_build import RecordedWord
from pytest_accel.judgement.recording import recorded_entries
from pytest_accel.judgement.results import Recorded, results_document, save_results
from pytest_accel.judgement.spans import record_again
from pytest_accel.judgement.structures import StructureGate, StructureStore
from pytest_accel.outputs.pages import run_summary_markdown
from pytest_accel.outputs.terminal import (
    measurement_table,
    orphan_lines,
    sittings_line,
    verdict_summary,
    waiting_line,
)
from pytest_accel.plugin.options import AccelOptions
from pytest_accel.storage.environments import EnvironmentStore
from pytest_accel.storage.files import StoreError

__all__ = ["RunFigures", "RunFiles", "summary_lines"]


def _peak_file() -> Path | None:
    value = os.environ.get(PEAK_FILE_ENV)
    return Path(value) if value else None


@final
class RunFigures:
    """The figures a measurement gains from the run: %-of-peak and the roofline (against peaks measured once per
    session), scaling, and what it costs at the run's prices (core/cost.py)."""

    def __init__(self, device: Callable[[], Device], store: BaselineStore, options: AccelOptions, world_size: int):
        self._device = device
        self._store = store
        self._profile = options.profile
        self._prices, self._price_per_kwh = options.prices, options.price_per_kwh
        self._world_size = world_size
        self._peak: MeasuredPeak | None = None
        self._baselines: Mapping[tuple[str, str], BaselineEntry] | None = None  # this run's file, read once

    def add(self, test: str, result: Measurement) -> Measurement:
        """``result`` with its %-of-peak and scaling figures in ``extra`` (a disabled one as it is), and in an
        xdist worker the card it was taken on (``card``: the caller's name for it; a CPU worker's cores)."""
        if (card := worker_place()) is not None:
            result = replace(result, extra={**result.extra, "card": card})
        if result.disabled:
            return result
        figures: dict[str, Any] = {}
        if result.tflops is not None or result.bytes_per_second is not None:
            if self._peak is None:
                # once per session (a short matmul and copy); an ab sitting shares one per side
                self._peak = shared_peak(self._device(), _peak_file())
            sheet = datasheet_peak(self._device().key())
            figures.update(peak_figures(result.tflops, result.bytes_per_second, self._peak, sheet))
            figures.update(self._roofline(test, result, self._peak))
        if self._prices:
            figures["cost"] = self._cost(result)
        efficiency = self._scaling_efficiency(test, result)
        if efficiency is not None:
            figures["scaling_efficiency"] = efficiency
        return replace(result, extra={**result.extra, **figures})

    def _roofline(self, test: str, result: Measurement, peak: MeasuredPeak) -> dict[str, Any]:
        """The figure under the roof of this run's peaks, and the bound its baseline's time had there ("was")
        where that differs: a regression that moved it from one bound class to another says so."""
        roof = roofline(result.flops_per_call, result.bytes_per_call, result.seconds_per_call, peak.tflops,
                        peak.bytes_per_second)  # fmt: skip
        if roof is None:
            return {}
        try:
            if self._baselines is None:
                self._baselines = self._store.load(self._device().key(), self._profile, self._world_size)
            entry = self._baselines.get((test, result.name))
        except StoreError:
            entry = None  # the gate said why; the roofline stands without the baseline's bound
        flops, moved = result.flops_per_call or 0.0, result.bytes_per_call or 0.0
        was = None if entry is None else bound_then(roof, flops, moved, median(entry.samples), peak.tflops,
                                                     peak.bytes_per_second)  # fmt: skip
        return {"roofline": {**roof.to_json(), **({} if was is None else {"was": was})}}

    def _cost(self, measurement: Measurement) -> dict[str, Any]:
        """What ``measurement`` costs at the run's price of its device class; why not, where none prices it."""
        price = price_for(self._prices, measurement.device_key)
        if price is None:
            return {"not_priced": f"no class of accel_price_per_hour prices {measurement.device_key}"}
        energy = measurement.extra.get("energy")
        read = Energy.from_json(energy) if isinstance(energy, Mapping) else None
        return cost_of(measurement.items_per_second, price, read, self._price_per_kwh).to_json()

    def _scaling_efficiency(self, test: str, measurement: Measurement) -> float | None:
        """N-device items/s over N x the one-device baseline's (torchrun runs with a world-size-1 baseline)."""
        if self._world_size == 1:
            return None
        try:
            single = self._store.load(self._device().key(), self._profile, 1).get((test, measurement.name))
        except StoreError:
            return None  # reported when the one-device suite runs; not this run's concern
        if single is None:
            return None
        return measurement.items_per_second / (self._world_size * single.items_per_second)


@final
@dataclass(frozen=True)
class RunFiles:
    """The files one run writes when it ends, from what it recorded."""

    options: AccelOptions
    recorded: list[Recorded]
    device: Device | None  # None: no perf test resolved an ``auto`` device
    baselines: Callable[[], Mapping[tuple[str, str], BaselineEntry]]
    store: BaselineStore
    structures: StructureStore
    structure_gate: StructureGate | None
    structure_key: str | None
    world_size: int
    rootpath: Path
    say: Callable[[str], None]  # a line for the terminal
    waited: float = 0.0  # seconds this run waited for quiet
    # What the run ran on besides the host and the repository (taken once, by RunParts), and where the
    # environments of recordings are kept; None: not taken (no device resolved)
    environment: Callable[[], Environment] | None = None
    environments: EnvironmentStore | None = None
    # An xdist controller's device, as its workers described it: (kind, key, provenance); the controller has none
    described: tuple[str, str, Mapping[str, str]] | None = None

    def _provenance(self, device: Device) -> dict[str, str]:
        """The device's provenance with the environment's digest (``RunParts.provenance``)."""
        digest = {} if self.environment is None else {ENVIRONMENT_PROVENANCE: self.environment().digest}
        return {**device.provenance(), **digest}

    def writers(self) -> list[tuple[str, Callable[[], None]]]:
        """(what, write) for each output this run asked for, in the order they are written."""
        options, writers = self.options, []
        json_path = options.json_path
        if json_path is not None:
            writers.append((f"--accel-json {json_path}", lambda: self.write_results(json_path)))
        if options.markdown_path is not None:
            writers.append((f"--accel-markdown {options.markdown_path}", self.write_markdown))
        if options.update:
            writers.append(("the baselines", self.write_baselines))
            writers.append(("the structural records", self.write_structures))
        if options.calibrate:
            writers.append(("the calibration", self.write_calibration))
        return writers

    def write(self) -> list[tuple[str, str]]:
        """Write every output this run asked for; (what, why) of each that could not be written.

        One that fails (a read-only folder, a baseline file corrupted meanwhile) loses nothing else.
        """
        failed = []
        for what, write in self.writers():
            try:
                write()
            except (OSError, StoreError) as error:
                why = f"{error.filename}: {error.strerror}" if isinstance(error, OSError) else str(error)
                failed.append((what, why))
        return failed

    def key(self) -> str:
        """The device key, or the ``--device`` choice when no device was resolved."""
        if self.device is None:
            return self.described[1] if self.described is not None else self.options.device
        return self.device.key()

    def _device(self) -> Device:
        assert self.device is not None, "only runs that measured write baselines"
        return self.device

    def write_markdown(self) -> None:
        """``--accel-markdown``: the run's summary page."""
        assert self.options.markdown_path is not None
        title = f"pytest-accel on {self.key()} ({self.options.profile})"
        self.options.markdown_path.write_text(run_summary_markdown(self.recorded, title))

    def write_results(self, path: Path) -> None:
        """``--accel-json``: every measurement with its verdict and the run's provenance."""
        kind, key, provenance = self.described or (self.options.device, None, {})
        if self.device is not None:
            kind, key, provenance = self.device.kind, self.device.key(), self._provenance(self.device)
        document = results_document(
            self.recorded,
            device_kind=kind,
            device_key=key,
            provenance=provenance,
            profile=self.options.profile,
            world_size=self.world_size,
            waited=self.waited,
        )
        save_results(path, document)

    def write_calibration(self) -> None:
        """``--accel-calibrate``: each measured test's move beside the standard load, into its entry."""
        measured = [r for r in self.recorded if not r.measurement.disabled]
        entries, skipped = calibrate_entries(
            [(r.test, r.measurement) for r in measured], self.baselines(), self.options.policy.foreign_cpu_margin
        )
        path = self.store.update(self._device().key(), self.options.profile, self.world_size, entries)
        self.say(f"calibrated {len(entries)} baseline entr{'y' if len(entries) == 1 else 'ies'} in {path}")
        for why in skipped:
            self.say(f"not calibrated: {why}")

    def write_structures(self) -> None:
        """``--accel-update``: the structural records this run took."""
        gate = self.structure_gate
        if gate is None or not gate.taken or self.structure_key is None:
            return
        path = self.structures.update(self.structure_key, self.options.profile, self.world_size, gate.taken)
        self.say(f"wrote {len(gate.taken)} structural record(s) to {path}")

    def write_baselines(self) -> None:
        """``--accel-update``: this run's figures as the baseline entries, with their recording history."""
        measured = [r for r in self.recorded if not r.measurement.disabled]
        for r in measured:  # a throttled figure is not the workload's: never a baseline (the old entry stays)
            if (why := throttle_problem(r.measurement)) is not None:
                self.say(f"not recorded: {display_name(r.test, r.measurement.name)}: {why}")
        measured = [r for r in measured if throttle_problem(r.measurement) is None]
        if not self.options.reset_history:  # a recording is one more sample of the same level, never a new level
            refusals = {id(r): why for r in measured if (why := _refused(r)) is not None}
            for why in refusals.values():
                self.say(why)
            measured = [r for r in measured if id(r) not in refusals]
        if not measured:
            return
        device = self._device()
        provenance_now = self._provenance(device)
        provenance = {**provenance_now, **run_provenance(self.rootpath, self.options.profile, self.world_size)}
        if self.environment is not None and self.environments is not None:  # first: an entry names it
            self.environments.save(device.key(), self.environment())
        entries = recorded_entries(
            ((r.test, r.measurement) for r in measured),
            self.baselines(),
            provenance_now,
            provenance,
            self.options.reset_history,
            provenance["date"],
        )
        path = self.store.update(device.key(), self.options.profile, self.world_size, entries)
        self.say(f"wrote {len(entries)} baseline entr{'y' if len(entries) == 1 else 'ies'} to {path}")
        if advice := record_again((entry.run_times, len(entry.run_medians)) for entry in entries):
            self.say(advice)


def _refused(record: Recorded) -> str | None:
    """Why a figure is not merged into its baseline's recordings, or None: it reads slower than them (beyond the
    tolerance and significant: a recording does not absorb a slowdown), or it was taken in another setup (it
    would replace a good baseline with one of the wrong setup). The old entry stays either way."""
    time = record.verdict.time if record.verdict is not None else None
    name, test = display_name(record.test, record.measurement.name), record.test.rpartition("::")[2]
    on_purpose = f"pytest <same args> --accel-reset-history -k {test!r}"
    if time is not None and time.abstention is not None and time.abstention.setup:
        return f"not recorded: {name}: {time.abstention.why} since its baseline; {time.abstention.remedy}"
    if time is None or time.outcome is not Outcome.REGRESSED:
        return None
    change = f" {format_percent_change(time.ratio)}" if time.ratio is not None else ""
    return (
        f"not recorded: {name} reads{change} against its own recordings: a recording does not absorb a slowdown"
        f" (the old entry stays); to record a new level on purpose: {on_purpose}"
    )


def summary_lines(
    recorded: Sequence[Recorded],
    key: str,
    options: AccelOptions,
    traces: Sequence[Path],
    problems: Sequence[str],
    unwritten: Sequence[tuple[str, str]],
    waits: Sequence[Waited] = (),
    sittings: Sequence[RecordedWord] = (),
    orphans: Sequence[tuple[str, tuple[str, ...]]] = (),
) -> list[tuple[str, bool]]:
    """(line, red) of the run's end: its table of measurements and the verdicts' summary (on device
    ``key``), the traces written, where the results went, the run's problems (a calibration load that failed)
    and the outputs ``RunFiles.write`` could not write."""
    recording = options.update or options.calibrate  # verdicts are reported, not enforced
    table = [*measurement_table(recorded), *verdict_summary(recorded, f"{key}/{options.profile}", recording)]
    table += waiting_line(waits, options.quiet_wait_seconds) + sittings_line(sittings, options.recorded_minutes)
    table += orphan_lines(orphans)
    lines = [(line, False) for line in table]
    json_path = options.json_path
    if traces:
        lines.append((f"accel: wrote {len(traces)} operator trace(s) (chrome://tracing, ui.perfetto.dev):", False))
        lines.extend((f"  {trace}", False) for trace in traces)
    if json_path is not None and not any(what.startswith("--accel-json") for what, _ in unwritten):
        lines.append((f"accel: results written to {json_path}", False))
    lines.extend((problem, True) for problem in problems)
    lines.extend((f"accel: could not write {what}: {why}", True) for what, why in unwritten)
    if any(what == "the baselines" for what, _ in unwritten):
        lines.append(("accel: no baseline was changed; the figures above are this run's", True))
    return lines
