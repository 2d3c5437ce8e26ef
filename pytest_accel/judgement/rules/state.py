"""The machine's state: the state probes (a large copy, a random gather, fresh pages) now, relative to the
reference kernel, against the range the baseline's recordings saw. Their excess bounds how much slower (or
faster) a workload bound by that resource could read without any change of code: a slowdown the bound
could explain is not judged; a smaller one is ruled out and widens the interval's slow side."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from pytest_accel.core import wording
from pytest_accel.core.measurement import FAULT_SHARE, NOT_PROBE_TIMES
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Rule, Verdict
from pytest_accel.core.stats import median
from pytest_accel.judgement.rules.case import Case, Reading, StateShift
from pytest_accel.judgement.rules.host_shared import covered_states
from pytest_accel.judgement.sight import detectable_slowdown

__all__ = ["check", "state_shift"]

FRESH = "fresh"  # the fresh-pages probe (engine/machine.py)
# Entries of a state that are not a probe's time.
_NOT_PROBES = frozenset({"compute", *NOT_PROBE_TIMES})


def _in_share(excess: float, share: float) -> float:
    """A resource's excess (log) as it moves a workload that spends ``share`` of its time on it."""
    return math.log1p(share * math.expm1(excess)) if excess > 0 else 0.0


def state_shift(
    now: Mapping[str, float], recorded: Sequence[Mapping[str, float]], noise_floor: float = 0.10
) -> StateShift:
    """Compare this run's state probes with the recordings' (see ``StateShift``).

    For each probe beside ``compute``: its time relative to the reference kernel's, now, against the same
    relative time in each recording (centred on their median). Only the excess beyond the recorded range,
    widened by ``noise_floor`` (the probes' own run-to-run noise), counts: the recordings' spread is
    already in the between-run error. Nothing to compare (no states on one side) is no shift.

    The fresh-pages probe's excess counts only in the share of the workload's time its own page faults
    took (``FAULT_SHARE``, where measured); the copy and the gather keep their whole excess: no counter
    tells how much of a workload they stand for.
    """
    if "compute" not in now:
        return StateShift()
    share = now.get(FAULT_SHARE)
    slower, faster, why_slower, why_faster, short_slower = 0.0, 0.0, "", "", ""
    for name, seconds in sorted(now.items()):
        pairs = [(s[name], s["compute"]) for s in recorded if name in s and "compute" in s]
        if name in _NOT_PROBES or not pairs or seconds <= 0 or min(p for p, _ in pairs) <= 0:
            continue
        history = [math.log(p / c) for p, c in pairs]
        centre = median(history)
        relative = math.log(seconds / now["compute"]) - centre
        low, high = min(history) - centre, max(history) - centre
        why = wording.state_moved(name, math.exp(relative), math.exp(low), math.exp(high))
        up, down = relative - high - noise_floor, low - noise_floor - relative
        if name == FRESH and share is not None:
            up, down = _in_share(up, share), _in_share(down, share)
            why += wording.state_fault_share(share)
        if up > slower:
            slower, why_slower = up, why
            short_slower = wording.state_moved_short(name, math.exp(relative))
        if down > faster:
            faster, why_faster = down, why
    return StateShift(slower, faster, why_slower, why_faster, short_slower)


def check(case: Case, reading: Reading) -> Verdict | Reading:
    """A slowdown beyond the tolerance even with the shift and the interval taken off is not the machine's
    (a flash -> math fallback read many times slower than the state could explain: docs/studies/backend-switch)."""
    if not case.normalized:
        return reading
    policy = case.policy
    current, baseline = case.current, case.baseline
    covered = covered_states(current.state, baseline.run_states, baseline.calibration, policy)
    shift = state_shift(current.state, covered, policy.state_noise_floor)
    reading = replace(reading, shift=shift)
    ratio = case.ratio
    if not (ratio > 1 + policy.tolerance and shift.slower > policy.state_limit):
        return reading
    if ratio * math.exp(-case.half_width - shift.slower) <= 1 + policy.tolerance:
        abstention = Abstention(
            wording.state_explains_short(shift.short_slower, shift.slower), wording.REMEDY[Cause.STATE],
            waits=True, cause=Cause.STATE,
        )  # fmt: skip
        return Verdict(
            Outcome.NOISY, "time", wording.state_explains(shift.why_slower, shift.slower), normalized=True,
            detectable=detectable_slowdown(shift.slower, policy.tolerance), abstention=abstention, rule=Rule.STATE,
        )  # fmt: skip
    return replace(
        reading,
        clauses=(*reading.clauses, wording.state_beyond(shift.why_slower, shift.slower)),
        ruled_out=(*reading.ruled_out, wording.state_ruled_out(shift.slower)),
    )
