"""The regression gate: a measurement against its baseline entry, with re-measurement of suspects.

No pytest here: the fixture turns a failing ``GateResult`` into a test failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, final

from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.confirm import FreshVerdict
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.stats import median
from pytest_accel.judgement.verdict import Observation, Outcome, Verdict, VerdictPolicy, combine, judge_memory, judge_time

__all__ = [
    "COMPARABLE_PROVENANCE",
    "MAX_RUN_HISTORY",
    "GateResult",
    "run_gate",
    "run_history",
    "with_fresh_confirmation",
]

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
    runs = source.run_medians if isinstance(source, BaselineEntry) else ()
    return Observation(source.samples, source.probe_samples, source.peak_memory_bytes, runs)


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


# Recorded runs kept per baseline entry: enough for a stable spread, few enough that a baseline
# follows slow, accepted drift (each --accel-update drops the oldest).
MAX_RUN_HISTORY = 10


def run_history(
    previous: BaselineEntry | None, measurement: Measurement, provenance: Mapping[str, str], reset: bool
) -> tuple[float, ...]:
    """The run medians to store with a new recording: the previous ones plus this run's, when comparable.

    Every recording is kept (up to MAX_RUN_HISTORY), also one that moved: a machine whose kernels
    drift between sessions must show that spread, or the gate flags the drift. ``reset``
    (--accel-reset-history) starts the history anew, for an accepted change of the code.
    """
    current = median(_observation(measurement).compared)
    if reset or previous is None or _incomparable(measurement, previous, provenance) is not None:
        return (current,)
    if bool(previous.probe_samples) != bool(measurement.probe_samples):
        return (current,)  # normalised and raw figures do not mix
    earlier = previous.run_medians or (median(_observation(previous).compared),)
    return (*earlier, current)[-MAX_RUN_HISTORY:]


def with_fresh_confirmation(first: Verdict, fresh: FreshVerdict) -> Verdict:
    """A regressed time verdict after a fresh process re-measured it (see pytest_accel.judgement.confirm)."""
    if fresh.outcome is None:
        return replace(first, reason=f"{first.reason}; no fresh-process confirmation: {fresh.detail}")
    if fresh.outcome == Outcome.REGRESSED.value:
        return replace(first, reason=f"{first.reason}; confirmed in a fresh process: {fresh.detail}")
    return Verdict(
        Outcome(fresh.outcome),
        "time",
        f"this process said {first.reason}; a fresh process did not confirm it: {fresh.detail}",
        normalized=first.normalized,
    )


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
