"""The time verdict beside a neighbour: what another process on the host leaves a figure to say.

Pure logic, no torch, no pytest. A figure is relative to the reference kernel, which a neighbour slows
too, so a neighbour moves a figure either way: beside a looping MMDiT perf job, uncalibrated,
unchanged code read faster or slower and an exact planted slowdown read as less than the tolerance for
three math kernels (docs/studies/huge-pages). ``weigh_neighbour`` says what the verdict may say then,
by what calibration (``--accel-calibrate``) measured of this test beside the standard neighbour:

- no calibration run covers a neighbour this busy: not judged, whichever way the figure reads (it
  waits for quiet: ``Abstention.waits``);
- a slowdown is judged beyond the calibrated bound (``state.neighbour_bound``);
- a speedup within how far the neighbour moved it is not claimed, and a slowdown that size could read
  as none: it widens what the verdict could see (``state.neighbour_reach``; the neighbour's phase
  decides which way it moves a test, so a move either way counts).

``covered_states``: beside a calibrated neighbour, the states its calibration runs saw count as
covered, as the recordings'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import final

from pytest_accel.core.measurement import FOREIGN_CPU
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Verdict
from pytest_accel.core.units import format_percent_change as _percent
from pytest_accel.judgement.policy import VerdictPolicy
from pytest_accel.judgement.state import (
    StateShift,
    host_shared,
    neighbour_bound,
    neighbour_reach,
    neighbour_ruled_out,
)

__all__ = ["QUIETER", "Beside", "covered_states", "weigh_neighbour"]

# What would let a figure the machine's state or a neighbour left unjudged be judged.
QUIETER = "a quieter machine"


def _uncalibrated(now: Mapping[str, float], ratio: float, shared: str) -> Verdict:
    """Not judged: a neighbour that no calibration run of this test covers, whichever way the figure reads
    (before this rule, the three math kernels above were called "unchanged" with a planted slowdown)."""
    reason = (
        f"time {_percent(ratio)}, but {shared}, and no calibration run of this test saw a neighbour this busy "
        "(record one with --accel-calibrate): a neighbour slows the reference kernel too, so it can hide a "
        "slowdown as well as make one: not judged"
    )
    why = f"a neighbour at {now.get(FOREIGN_CPU, 0.0):.0%}, uncalibrated"
    abstention = Abstention(
        why, "calibrate beside a neighbour (--accel-calibrate)", waits=True, cause=Cause.UNCALIBRATED
    )
    return Verdict(Outcome.NOISY, "time", reason, ratio=ratio, abstention=abstention)


def _beyond_bound(
    now: Mapping[str, float],
    bound: tuple[float, str],
    estimate: tuple[float, float],
    shift: StateShift,
    shared: str,
    policy: VerdictPolicy,
) -> Verdict | Beside:
    """A slowdown on a shared host, beside a neighbour its calibration covers (``bound``: the log move
    and clause of ``state.neighbour_bound``): the noisy verdict when the bound could explain it, else
    what it leaves to judge (Beside)."""
    ratio, half_width = estimate
    moved, why_moved = bound
    # Like the state shift, the neighbour bound is a bias, not a random error, and gets the state
    # shift's rule. A bound beyond the tolerance (state_limit) could make the whole slowdown: it must
    # clear the tolerance with the interval and the bound taken off (the larger of the two biases:
    # both see the same neighbour, the state probes through memory, calibration whole). A smaller one
    # is taken off the reading, which must still clear the tolerance, and widens the interval's slow
    # side, which must still clear no change (judge_time): requiring the strict check there too missed
    # most exact plants beside a neighbour whose bound was small (docs/studies/sight).
    widened = max(moved, shift.slower)
    if widened > policy.state_limit and ratio * math.exp(-half_width - widened) <= 1 + policy.tolerance:
        low, high = ratio * math.exp(-half_width), ratio * math.exp(half_width)
        reason = (
            f"time {_percent(ratio)} [{policy.confidence:.0%} CI {_percent(low)} .. {_percent(high)}], but "
            f"{shared}; {why_moved}, so a neighbour explains up to {math.expm1(widened) * 100:.0f}%; with that "
            f"and the interval taken off, the slowdown is within the {policy.tolerance:.0%} tolerance: not judged"
        )
        detectable = (1 + policy.tolerance) * math.exp(half_width + widened) - 1
        why = f"a neighbour at {now.get(FOREIGN_CPU, 0.0):.0%} explains {math.expm1(widened):.0%}"
        abstention = Abstention(why, QUIETER, waits=True, cause=Cause.NEIGHBOUR)
        return Verdict(Outcome.NOISY, "time", reason, ratio=ratio, detectable=detectable, abstention=abstention)
    clause = f"; {shared}, but {why_moved}: this is beyond it"
    short = neighbour_ruled_out(now, moved)
    if moved > shift.slower:  # the neighbour's bound is the larger bias: it is what widens the interval
        shift = replace(shift, slower=moved, why_slower=why_moved, short_slower=short)
    return Beside(shift, moved, clause, short)


@final
@dataclass(frozen=True)
class Beside:
    """What a calibrated neighbour leaves to judge: the state shift widened by its bound, the part of
    the reading it explains (log: taken off before the tolerance), what a regression says of it, and
    what it could hide."""

    shift: StateShift
    explained: float = 0.0
    clause: str = ""
    short: str = ""
    masked: float = 0.0  # how large a slowdown (log) the neighbour could make read as none
    hidden: str = ""  # the clause that says so, for "could see"


def weigh_neighbour(
    now: Mapping[str, float],
    calibration: Sequence[Mapping[str, float]],
    runs: Sequence[float],
    estimate: tuple[float, float],
    shift: StateShift,
    shared: str,
    policy: VerdictPolicy,
) -> Verdict | Beside:
    """A figure read while the host was shared (``shared``: ``state.host_shared``'s clause; ``estimate``:
    the ratio and the log half-width of its interval): the noisy verdict when no calibration covers the
    neighbour or its bound could explain the slowdown, else what the neighbour leaves to judge."""
    ratio = estimate[0]
    bound = neighbour_bound(now, calibration, runs, policy.foreign_cpu_margin)
    if bound is None:  # the neighbour's effect on this test is unknown, either way
        return _uncalibrated(now, ratio, shared)
    reach = neighbour_reach(now, calibration, runs, policy.foreign_cpu_margin)
    beside = Beside(shift)
    if ratio > 1 + policy.tolerance:
        judged = _beyond_bound(now, bound, estimate, shift, shared, policy)
        if isinstance(judged, Verdict):
            return judged
        beside = judged
    elif ratio < 1 / (1 + policy.tolerance) and reach is not None and reach[0] > shift.faster:
        # a speedup the neighbour could explain is not claimed, as the state's
        beside = Beside(replace(shift, faster=reach[0], why_faster=reach[1]))
    if reach is None:
        return beside
    # And a slowdown that size could read as none: beside a calibrated neighbour, exact planted
    # slowdowns were called "unchanged" while claiming a sight finer than the plant (docs/studies/sight,
    # calibrated-neighbour-intel*), before it widened what the verdict could see; and so were planted
    # slowdowns of a kernel the neighbour had moved only slower in calibration (docs/studies/
    # recorded-build), before a move either way counted.
    hidden = f"widened by {math.expm1(reach[0]) * 100:.1f}%, what a neighbour could hide: {reach[1]}"
    if beside.explained > 0 and reach[0] == bound[0]:  # the bound's clause already said how far, and where from
        hidden = f"and by {math.expm1(reach[0]) * 100:.1f}% more: a neighbour's phase can move it as far the other way"
    return replace(beside, masked=reach[0], hidden=hidden)


def covered_states(
    now: Mapping[str, float],
    recorded: Sequence[Mapping[str, float]],
    calibration: Sequence[Mapping[str, float]],
    policy: VerdictPolicy,
) -> Sequence[Mapping[str, float]]:
    """The states a baseline covers (``recorded``: its recordings'; ``calibration``: its calibration
    runs'): the recordings', and beside a calibrated neighbour the calibration runs' too.

    A calibration run measured this test beside the standard neighbour, with the state probes: the state
    that neighbour puts the machine in is already in its figure, and so in the neighbour bound. Without
    this, a confirmation that met the neighbour's page faults made a slowdown beyond the calibrated
    bound "noisy" on the 2-core VM (docs/sensitivity.md). Only when the host is shared now, and no
    busier than the calibration saw: otherwise the recordings alone.
    """
    shared = host_shared(now, recorded, policy.foreign_cpu_margin)
    if not shared or not calibration:
        return recorded
    busiest = max((c[FOREIGN_CPU] for c in calibration if FOREIGN_CPU in c), default=-1.0)
    if now.get(FOREIGN_CPU, math.inf) > busiest + policy.foreign_cpu_margin:
        return recorded
    return (*recorded, *calibration)
