"""What the gate concluded for one measurement (``GateResult``), and the block a person reads when it
fails its test (``failure_lines``): the headline, then one fact a line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import final

from pytest_accel.core.measurement import Measurement, display_name, pooled
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.core.units import format_change, format_percent_change, format_rate
from pytest_accel.judgement.baselines import BaselineEntry, provenance_changes
from pytest_accel.judgement.confirm import FreshVerdict
from pytest_accel.judgement.recorded_build import RecordedWord
from pytest_accel.judgement.spans import unseen_drift
from pytest_accel.judgement.verdict import VerdictRecord

__all__ = ["GateResult", "failure_lines"]


@final
@dataclass(frozen=True)
class GateResult:
    """What the gate concluded for one measurement: the time verdict, the memory verdict (when memory
    is known), the measurements taken, and the failure message when it fails its test."""

    time: Verdict
    memory: Verdict | None
    measurements: tuple[Measurement, ...]  # the first measurement, then any re-measurements
    group: int = 1  # how many measurements each verdict pooled (run_gate's extension of an undecided suspect)
    failure: str | None = None  # the test's failure message (Gate.judge); None: it passes
    baseline: BaselineEntry | None = None  # the entry judged against (its operator table explains a regression)
    tolerance: float | None = None  # the slowdown tolerance judged by (the entry's own, else the suite's)
    fresh: FreshVerdict | None = None  # the fresh process's word on a suspect, when one was asked
    recorded: RecordedWord | None = None  # the recorded build's sitting beside this one, when one was asked
    judged_beside: bool = False  # the stored figure left it unjudged, and that sitting judged it
    energy: Verdict | None = None  # energy per item against its recording (judgement/energy.py), where both are read

    @property
    def record(self) -> VerdictRecord:
        """The typed verdict reports carry."""
        beside = None if self.recorded is None else self.recorded.kept()
        return VerdictRecord(
            self.time, self.memory, len(self.measurements) - 1, beside_recorded=beside, energy=self.energy
        )

    @property
    def outcome(self) -> Outcome:
        """The worst outcome: a memory regression counts like a time regression."""
        return self.record.outcome

    @property
    def reported(self) -> Measurement:
        """The measurement the report shows: the last (group of) re-measurement(s) of a regression, else the
        first (group): all the rounds its verdict judged."""
        regressed = self.outcome is Outcome.REGRESSED
        return pooled(self.measurements[-self.group :] if regressed else self.measurements[: self.group])


def failure_lines(
    test: str,
    gate: GateResult,
    entry: BaselineEntry | None,
    why: str,
    provenance: Mapping[str, str],
    verbose: bool = False,
    now: datetime | None = None,
) -> list[str]:
    """A failing test's block, a fact a line, at most 120 characters each (the accept command apart). The
    headline: the test (by its name: pytest's own header and the accept command give its file) and what
    changed with its interval; then against what (the tolerance, before -> after in the test's unit),
    why it is believed, what could have explained it and did not, and the baseline (with, when its
    recordings were all taken within an hour and over an hour before ``now``, that they hold no drift).
    The whole reasoning (``Verdict.reason``) is in the result file, and here under ``-v``.
    """
    result, time = gate.reported, gate.time
    name = display_name(test.rpartition("::")[2], result.name)
    memory = gate.memory if gate.memory is not None and gate.memory.outcome is Outcome.REGRESSED else None
    if time.outcome is Outcome.REGRESSED and time.ratio is not None and time.low is not None:
        lines = [f"perf {why}: {name}: time {format_change(time.ratio, time.low, time.high or time.ratio)}"]
        against = f"  beyond the {gate.tolerance:.0%} tolerance" if gate.tolerance is not None else "  against"
        if entry is not None:
            against += f": {format_rate(entry.items_per_second)} -> {format_rate(result.items_per_second)} "
            against += f"{result.unit}/s"
        lines.append(f"{against} on {result.device_key}")
        if not gate.judged_beside:
            lines.append(f"  believed: {_believed(time, gate.fresh)}")
        if gate.recorded is not None:
            beside = f"  {'judged' if gate.judged_beside else 'recorded build'}: {_beside(gate.recorded)}"
            lines.append(beside if verbose else _clipped(beside))
        if time.ruled_out:
            lines.append(f"  ruled out: {'; '.join(time.ruled_out)}")
    else:
        headline = f"perf {why}: {name}"
        if memory is not None and memory.ratio is not None:
            headline += f": peak memory {format_percent_change(memory.ratio)}"
        elif (energy := gate.energy) is not None and energy.outcome is Outcome.REGRESSED and energy.ratio is not None:
            headline += f": energy per item {format_percent_change(energy.ratio)}"
        lines = [headline]
        if time.outcome is not Outcome.UNCHANGED and time.abstention is not None and not verbose:
            short = time.abstention
            lines.append(f"  not judged ({short.why}); to judge it: {short.remedy}")
        elif time.outcome is not Outcome.UNCHANGED or verbose:
            lines.append(f"  time: {time.reason}")
    shown = memory if memory is not None or not verbose else gate.memory
    if shown is not None:
        lines.append(f"  memory: {shown.reason}")
    if gate.energy is not None and (gate.energy.outcome is Outcome.REGRESSED or verbose):
        lines.append(f"  energy: {gate.energy.reason}")
    if entry is not None:
        recorded = entry.provenance
        runs = len(entry.run_medians) or 1
        baseline = f"  baseline: commit {recorded.get('commit', '?')}, {recorded.get('date', '?')[:10]}"
        baseline += f", {runs} recording{'s' if runs > 1 else ''}, torch {recorded.get('torch', '?')}"
        if changes := provenance_changes(entry, provenance):
            baseline += f"; since then: {changes}"
        lines.append(baseline)
        if unseen := unseen_drift(entry.run_times, runs, now or datetime.now(timezone.utc)):
            lines.append(f"  recordings: {unseen}")
    if verbose and time.outcome is not Outcome.UNCHANGED:
        lines.append(f"  the whole reasoning: {time.reason}")
    return lines


# A failure line's width: a longer one is cut at its last phrase that fits (the whole line under -v and in the
# result file).
_WIDTH = 120


def _clipped(line: str) -> str:
    if len(line) <= _WIDTH:
        return line
    cut = line[: _WIDTH - 1]
    at = max(cut.rfind(", "), cut.rfind(": "))
    return (cut[:at] if at > _WIDTH // 2 else cut) + "…"


def _believed(time: Verdict, fresh: FreshVerdict | None) -> str:
    """Why a regression is believed: the re-measurements that confirmed it, and the fresh process's word."""
    parts = []
    if time.remeasured:
        shown = ", ".join(format_percent_change(ratio) for ratio in time.remeasured)
        parts.append(f"{len(time.remeasured)} re-measurement{'s' if len(time.remeasured) > 1 else ''} ({shown})")
    child = fresh.verdict if fresh is not None else None
    if child is not None and child.ratio is not None:
        if child.low is not None and child.high is not None:
            parts.append(f"a fresh process ({format_change(child.ratio, child.low, child.high)})")
        else:
            parts.append(f"a fresh process ({format_percent_change(child.ratio)})")
    elif fresh is not None:
        parts.append(f"no fresh process's word: {fresh.detail}")
    return "; ".join(parts) or "one measurement (no re-measurement was asked: --accel-confirmations 0)"


def _beside(recorded: RecordedWord) -> str:
    """What the sitting of the recorded build beside this tree said, or why there was none."""
    paired = recorded.verdict
    if paired is None:
        return f"not measured: {recorded.detail}"
    said = f"commit {recorded.commit} beside this tree"
    if paired.ratio is not None and paired.low is not None and paired.high is not None:
        said += f": {format_change(paired.ratio, paired.low, paired.high)}"
    return f"{said}, {paired.pairs} pairs"
