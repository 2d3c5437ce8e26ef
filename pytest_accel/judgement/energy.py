"""Energy gated like memory: energy per item that grew beyond its tolerance in every energy window taken, the
first measurement's and its re-measurements', is a regression (engine/energy.py reads the windows).

A suspect (the first window beyond the tolerance) is re-measured, as a time suspect is, until ``confirmations``
more windows were read or one reads within the tolerance; it stands only where each one agrees. A window that
could not be read (no counter, a counter that went back) gives no figure and never fails a test: the verdict is
then absent, as memory's is where a device does not know its peak. Pure: no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from pytest_accel.core import wording
from pytest_accel.core.energy import of_result
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Rule, Verdict
from pytest_accel.core.stats import median
from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.conclusion import GateResult

__all__ = ["judge_energy", "per_item", "with_energy"]


def per_item(measurement: Measurement) -> float | None:
    """The joules per item of a measurement's energy window; None where none was read."""
    energy = of_result(measurement.extra)
    return None if energy is None else energy.joules_per_item


def judge_energy(windows: Sequence[float], then: float | None, tolerance: float, needed: int) -> Verdict | None:
    """Joules per item of each window against the recorded ``then``: regressed when ``needed`` windows or more
    all read beyond ``tolerance``; None where either side has no figure."""
    if then is None or not windows:
        return None
    now = median(windows)
    beyond = len(windows) >= needed and all(window > then * (1 + tolerance) for window in windows)
    said = wording.energy(then, now, len(windows), tolerance if beyond else None)
    return Verdict(Outcome.REGRESSED if beyond else Outcome.UNCHANGED, "energy", said, ratio=now / then,
                   rule=Rule.ENERGY)  # fmt: skip


def with_energy(
    gate: GateResult,
    entry: BaselineEntry | None,
    tolerance: float,
    remeasure: Callable[[], Measurement],
    confirmations: int,
) -> GateResult:
    """``gate`` with its energy verdict: a suspect window re-measured up to ``confirmations`` times (each
    re-measurement is one more window), kept among the gate's measurements."""
    then = None if entry is None else entry.energy_per_item
    taken = list(gate.measurements)
    windows = [window for m in taken if (window := per_item(m)) is not None]
    if then is None or not windows:
        return gate
    while len(windows) < 1 + confirmations and all(window > then * (1 + tolerance) for window in windows):
        taken.append(remeasure())
        if (window := per_item(taken[-1])) is None:
            break
        windows.append(window)
    verdict = judge_energy(windows, then, tolerance, 1 + confirmations)
    return replace(gate, energy=verdict, measurements=tuple(taken))
