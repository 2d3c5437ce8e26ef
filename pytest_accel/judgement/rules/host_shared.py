"""The time verdict beside a neighbour: what another process on the host leaves a figure to say.

A figure is relative to the reference kernel, which a neighbour slows too, so a neighbour moves a
figure either way (docs/studies/huge-pages). When other processes used more of the host's CPU than in
any recording (``host_shared``), the rule asks what calibration (``--accel-calibrate``) measured of
this test beside the standard neighbour:

- no calibration run covers a neighbour this busy: not judged, whichever way the figure reads (it
  waits for quiet: ``Abstention.waits``);
- a slowdown is judged beyond the calibrated bound (``neighbour_bound``): a bound that could explain
  it leaves it unjudged; a smaller one is taken off the reading and widens the interval's slow side;
- a speedup within how far the neighbour moved the test is not claimed, and a slowdown that size could
  read as none: it widens what the verdict could see (``neighbour_reach``; the neighbour's phase
  decides which way it moves a test, so a move either way counts: docs/studies/sight, recorded-build).

``covered_states``: beside a calibrated neighbour, the states its calibration runs saw count as covered,
as the recordings' (the state rule reads them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from pytest_accel.core import wording
from pytest_accel.core.measurement import CALIBRATED, FOREIGN_CPU
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Rule, Verdict
from pytest_accel.core.stats import median
from pytest_accel.judgement.policy import VerdictPolicy
from pytest_accel.judgement.rules.case import Case, Reading

__all__ = ["check", "covered_states", "host_shared", "neighbour_bound", "neighbour_reach"]


def host_shared(now: Mapping[str, float], recorded: Sequence[Mapping[str, float]], margin: float) -> str:
    """How the host was shared beyond what the recordings saw, in words; "" when it was not, or nothing is known."""
    seen = [s[FOREIGN_CPU] for s in recorded if FOREIGN_CPU in s]
    share = now.get(FOREIGN_CPU)
    if share is None or not seen or share <= max(seen) + margin:
        return ""
    return wording.host_shared(share, max(seen))


def _covering(
    now: Mapping[str, float], calibration: Sequence[Mapping[str, float]], margin: float
) -> Sequence[Mapping[str, float]]:
    """The calibration runs that cover a neighbour as busy as now's: all of them, or none."""
    share = now.get(FOREIGN_CPU)
    seen = [c for c in calibration if FOREIGN_CPU in c and CALIBRATED in c]
    if share is None or not seen or share > max(c[FOREIGN_CPU] for c in seen) + margin:
        return ()
    return seen


def neighbour_bound(
    now: Mapping[str, float], calibration: Sequence[Mapping[str, float]], runs: Sequence[float], margin: float
) -> tuple[float, str] | None:
    """How much slower (log) a neighbour made this test in its calibration runs, and a clause that says so.

    Each calibration run's compared figure over the quiet recordings' median (``runs``) is how far the
    standard neighbour moved this test; the bound is the largest move (none: 0), and covers a neighbour up
    to the busiest calibration run's share of the host's CPU plus ``margin``. None when no calibration
    run covers a neighbour as busy as now's: its effect on this test is unknown.
    """
    seen = _covering(now, calibration, margin)
    if not seen:
        return None
    centre = median(runs)
    moved = max(0.0, *(math.log(c[CALIBRATED] / centre) for c in seen))
    return moved, wording.neighbour_bound(len(seen), max(c[FOREIGN_CPU] for c in seen), moved)


def neighbour_reach(
    now: Mapping[str, float], calibration: Sequence[Mapping[str, float]], runs: Sequence[float], margin: float
) -> tuple[float, str] | None:
    """How far (log) a neighbour moved this test's figure either way in its calibration runs, and a clause
    that says so; None when none covers now's share or none moved it. A move of either sign bounds what a
    neighbour could hide, as far the other way: which way it moves a test is the neighbour's phase."""
    seen = _covering(now, calibration, margin)
    if not seen:
        return None
    moves = [math.log(c[CALIBRATED] / median(runs)) for c in seen]
    faster, slower = max(0.0, *(-m for m in moves)), max(0.0, *moves)
    if faster == slower == 0:
        return None
    return max(faster, slower), wording.neighbour_reach(len(seen), faster, slower)


def covered_states(
    now: Mapping[str, float],
    recorded: Sequence[Mapping[str, float]],
    calibration: Sequence[Mapping[str, float]],
    policy: VerdictPolicy,
) -> Sequence[Mapping[str, float]]:
    """The states a baseline covers: its recordings', and beside a calibrated neighbour (the host shared
    now, no busier than calibration saw) its calibration runs' too: the state that neighbour puts the
    machine in is already in the neighbour bound (docs/sensitivity.md)."""
    if not host_shared(now, recorded, policy.foreign_cpu_margin) or not calibration:
        return recorded
    busiest = max((c[FOREIGN_CPU] for c in calibration if FOREIGN_CPU in c), default=-1.0)
    if now.get(FOREIGN_CPU, math.inf) > busiest + policy.foreign_cpu_margin:
        return recorded
    return (*recorded, *calibration)


def _abstains(case: Case, reason: str, why: str, cause: Cause, detectable: float | None = None) -> Verdict:
    abstention = Abstention(why, wording.REMEDY[cause], waits=True, cause=cause)
    return Verdict(
        Outcome.NOISY, "time", reason, ratio=case.ratio, normalized=case.normalized, detectable=detectable,
        abstention=abstention, rule=Rule.NEIGHBOUR,
    )  # fmt: skip


def check(case: Case, reading: Reading) -> Verdict | Reading:
    policy, current, baseline = case.policy, case.current, case.baseline
    shared = host_shared(current.state, baseline.run_states, policy.foreign_cpu_margin) if case.normalized else ""
    if not shared:
        return reading
    share = current.state.get(FOREIGN_CPU, 0.0)
    runs = case.runs or (median(case.then),)
    ratio, half_width, shift = case.ratio, case.half_width, reading.shift
    bound = neighbour_bound(current.state, baseline.calibration, runs, policy.foreign_cpu_margin)
    if bound is None:  # the neighbour's effect on this test is unknown, either way
        return _abstains(
            case, wording.uncalibrated(ratio, shared), wording.uncalibrated_short(share), Cause.UNCALIBRATED
        )
    reach = neighbour_reach(current.state, baseline.calibration, runs, policy.foreign_cpu_margin)
    reading = replace(reading, shared=shared)
    moved, why_moved = bound
    if ratio > 1 + policy.tolerance:
        # Like the state shift, the bound is a bias, not a random error. Beyond the tolerance it could make the
        # whole slowdown, which must then clear the tolerance with the interval and the larger of the two
        # biases taken off; a smaller one is taken off the reading and widens the slow side (docs/studies/sight).
        widened = max(moved, shift.slower)
        if widened > policy.state_limit and ratio * math.exp(-half_width - widened) <= 1 + policy.tolerance:
            low, high = ratio * math.exp(-half_width), ratio * math.exp(half_width)
            band = wording.band(ratio, low, high, policy.confidence, normalized=False)
            reason = wording.neighbour_explains(band, shared, why_moved, widened, policy.tolerance)
            detectable = (1 + policy.tolerance) * math.exp(half_width + widened) - 1
            why = wording.neighbour_explains_short(share, widened)
            return _abstains(case, reason, why, Cause.NEIGHBOUR, detectable)
        short = wording.neighbour_ruled_out(share, moved)
        if moved > shift.slower:  # the bound is the larger bias: it is what widens the interval
            shift = replace(shift, slower=moved, why_slower=why_moved, short_slower=short)
        clauses = (*reading.clauses, wording.neighbour_beyond(shared, why_moved))
        reading = replace(reading, shift=shift, explained=moved, clauses=clauses, ruled_out=(*reading.ruled_out, short))
    elif ratio < 1 / (1 + policy.tolerance) and reach is not None and reach[0] > shift.faster:
        # a speedup the neighbour could explain is not claimed, as the state's
        reading = replace(reading, shift=replace(shift, faster=reach[0], why_faster=reach[1]))
    if reach is None:
        return reading
    # And a slowdown that size could read as none (docs/studies/sight, recorded-build).
    hidden = wording.neighbour_hides(reach[0], reach[1], bound_said=reading.explained > 0 and reach[0] == moved)
    return replace(reading, masked=reach[0], hidden=hidden)
