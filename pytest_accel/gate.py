"""The regression gate: a measurement against its baseline entry, with re-measurement of suspects.

No pytest here: the fixture turns a failing ``GateResult`` into a test failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, final

from pytest_accel.baselines import BaselineEntry
from pytest_accel.result import Measurement
from pytest_accel.verdict import Observation, Outcome, Verdict, VerdictPolicy, combine, judge_memory, judge_time

__all__ = ["COMPARABLE_PROVENANCE", "GateResult", "run_gate"]

# Provenance fields that change what a figure means: a baseline that differs in one is not compared.
COMPARABLE_PROVENANCE = ("cpu_threads",)
# Provenance fields shown when they changed since the baseline (an upgrade explains a shift).
_SHOWN_PROVENANCE = ("torch", "cuda_runtime", "cuda_driver", "habana_torch_plugin", "device_model")


@final
@dataclass(frozen=True)
class GateResult:
    """The time verdict, the memory verdict (when memory is known) and the measurements taken."""

    time: Verdict
    memory: Verdict | None
    measurements: tuple[Measurement, ...]  # the first measurement, then any re-measurements

    @property
    def outcome(self) -> Outcome:
        """The worst outcome: a memory regression counts like a time regression."""
        if self.memory is not None and self.memory.outcome is Outcome.REGRESSED:
            return Outcome.REGRESSED
        return self.time.outcome

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary for reports."""
        return {
            "outcome": self.outcome.value,
            "time": _verdict_dict(self.time),
            "memory": None if self.memory is None else _verdict_dict(self.memory),
            "remeasurements": len(self.measurements) - 1,
        }


def _verdict_dict(verdict: Verdict) -> dict[str, Any]:
    return {
        "outcome": verdict.outcome.value,
        "reason": verdict.reason,
        "ratio": verdict.ratio,
        "low": verdict.low,
        "high": verdict.high,
        "p_value": verdict.p_value,
        "normalized": verdict.normalized,
    }


def _observation(source: Measurement | BaselineEntry) -> Observation:
    return Observation(source.samples, source.probe_samples, source.peak_memory_bytes)


def _incomparable(measurement: Measurement, entry: BaselineEntry, provenance: Mapping[str, str]) -> str | None:
    if entry.unit != measurement.unit or entry.items_per_call != measurement.items_per_call:
        return (
            f"the baseline measured {entry.items_per_call:g} {entry.unit} per call, this run "
            f"{measurement.items_per_call:g} {measurement.unit}: the workload changed"
        )
    for key in COMPARABLE_PROVENANCE:
        then, now = entry.provenance.get(key), provenance.get(key)
        if then is not None and now is not None and then != now:
            return f"the baseline was taken with {key}={then}, this run has {key}={now}"
    return None


def provenance_changes(entry: BaselineEntry, provenance: Mapping[str, str]) -> str:
    """'torch 2.13.0 -> 2.14.1' for the shown fields that differ; '' when none do."""
    changes = [
        f"{key} {entry.provenance[key]} -> {provenance[key]}"
        for key in _SHOWN_PROVENANCE
        if key in entry.provenance and key in provenance and entry.provenance[key] != provenance[key]
    ]
    return ", ".join(changes)


def run_gate(
    measurement: Measurement,
    entry: BaselineEntry | None,
    policy: VerdictPolicy,
    provenance: Mapping[str, str],
    remeasure: Callable[[], Measurement],
    confirmations: int,
    gate_memory: bool = True,
) -> GateResult:
    """Judge ``measurement``; re-measure up to ``confirmations`` times while it looks regressed."""
    if entry is None:
        return GateResult(
            Verdict(Outcome.NEW, "time", "no baseline for this test on this device"), None, (measurement,)
        )
    reason = _incomparable(measurement, entry, provenance)
    if reason is not None:
        return GateResult(Verdict(Outcome.NEW, "time", f"not compared: {reason}"), None, (measurement,))
    if entry.tolerance is not None or entry.memory_tolerance is not None:
        policy = replace(
            policy,
            tolerance=entry.tolerance if entry.tolerance is not None else policy.tolerance,
            memory_tolerance=entry.memory_tolerance if entry.memory_tolerance is not None else policy.memory_tolerance,
        )
    baseline = _observation(entry)
    first = judge_time(_observation(measurement), baseline, policy)
    taken = [measurement]
    again: list[Verdict] = []
    while first.outcome is Outcome.REGRESSED and len(again) < confirmations:
        taken.append(remeasure())
        again.append(judge_time(_observation(taken[-1]), baseline, policy))
        if again[-1].outcome is not Outcome.REGRESSED:
            break
    memory = judge_memory(_observation(measurement), baseline, policy) if gate_memory else None
    return GateResult(combine(first, again), memory, tuple(taken))
