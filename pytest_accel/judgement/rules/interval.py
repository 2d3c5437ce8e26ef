"""The last rule: the ratio's interval against the tolerance, with what the earlier rules found.

The ratio of this run's median to the recorded runs' (``Case.estimate``), on probe-normalised samples
where both sides have them, with an interval that adds the within-run and between-run errors; the
state shift (or a calibrated bound of a shared host) widens its own side linearly, and the part it explains
is taken off before the tolerance:

    ratio beyond the tolerance and the interval clear of 1      -> REGRESSED
    ratio below 1 / (1 + tolerance) and the interval clear of 1 -> IMPROVED
    otherwise                                                   -> UNCHANGED

Why both: on the 2-core VM the within-run interval is far narrower than the run-to-run drift, so
significance alone flags that drift; the tolerance alone flags a noisy run whose median wandered
(docs/sensitivity.md). Every verdict carries the smallest slowdown it could have called (``detectable``)
and, when its interval rather than the tolerance set it, what limited it (``judgement/sight.py``).
"""

from __future__ import annotations

import math

from pytest_accel.core import wording
from pytest_accel.core.outcomes import Outcome, Rule, Verdict
from pytest_accel.core.stats import mann_whitney_p
from pytest_accel.judgement.rules.case import Case, Reading
from pytest_accel.judgement.sight import detectable_slowdown, limited_by

__all__ = ["assumed_spread", "decide"]


def assumed_spread(case: Case) -> bool:
    """Whether the between-run spread was assumed, not measured: a baseline of one recording in a file
    without any entry of two (a tiny call moved far more than the floor: docs/studies/test-stability)."""
    return len(case.runs) < 2 and case.pooled is None


def _could_see(detectable: float, reading: Reading, limit: str) -> str:
    """The clause an unchanged verdict ends with: the smallest slowdown it could have called, and why."""
    shift = reading.shift
    sees = wording.could_see(detectable, limit)
    if shift.slower > 0:
        sees += wording.sight_widened(shift.slower, shift.why_slower)
    if reading.hidden:
        sees += f" ({reading.hidden})"
    if reading.shared:
        sees += wording.sight_shared(reading.shared)
    if shift.faster > 0:  # a speedup the machine's state could explain is not claimed, nor a slowdown it hides
        sees += wording.speedup_not_claimed(shift.faster, shift.why_faster, hides=not reading.hidden)
    return sees


def decide(case: Case, reading: Reading) -> Verdict:
    policy, tolerance = case.policy, case.policy.tolerance
    (ratio, width), half_width = case.estimate, case.half_width
    shift, explained, masked = reading.shift, reading.explained, reading.masked
    # A shift is a bound on a bias, not a random error: it widens its own side of the interval linearly.
    low, high = ratio * math.exp(-half_width - shift.slower), ratio * math.exp(half_width + shift.faster)
    hides = max(masked, shift.faster)  # a faster state hides a slowdown its size (studies/spaced-recordings)
    detectable = detectable_slowdown(half_width + shift.slower + hides, tolerance, explained + hides)
    p_value = mann_whitney_p(case.now, case.then)
    band = wording.band(ratio, low, high, policy.confidence, case.normalized)
    sight = limited_by(width, shift.slower, tolerance, masked, shift.faster)
    if ratio * math.exp(-explained) > 1 + tolerance and low > 1:
        assumed = wording.assumed_spread(policy.between_run_floor) if assumed_spread(case) else ""
        outcome, text = Outcome.REGRESSED, wording.regressed(band, tolerance, "".join(reading.clauses) + assumed)
    elif ratio < 1 / (1 + tolerance) and high < 1:
        outcome, text = Outcome.IMPROVED, wording.improved(band)
    else:
        sees = _could_see(detectable, reading, "" if sight is None else sight[1])
        outcome, text = Outcome.UNCHANGED, wording.unchanged(band, tolerance, explained, sees)
    if reading.unsteady is not None and outcome is not Outcome.REGRESSED:
        return reading.unsteady  # the wide spread was let through only for a slowdown that clears the interval
    kept = reading.ruled_out if outcome is Outcome.REGRESSED else ()
    limit = None if sight is None else sight[0]
    return Verdict(
        outcome, "time", text, ratio, low, high, p_value, case.normalized, detectable, kept, sight=limit,
        rule=Rule.INTERVAL,
    )  # fmt: skip
