"""The reference kernel's own speed: when it runs far faster or slower than when the baseline was recorded,
the machine (or torch's matmul) is in another state, and figures relative to it are not judged."""

from __future__ import annotations

from pytest_accel.core import wording
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Rule, Verdict
from pytest_accel.core.stats import median
from pytest_accel.judgement.rules.case import Case, Reading

__all__ = ["check"]


def check(case: Case, reading: Reading) -> Verdict | Reading:
    if not case.normalized:
        return reading
    drift = median(case.current.probe_samples) / median(case.baseline.probe_samples)
    limit = case.policy.probe_drift_limit
    if 1 / limit <= drift <= limit:
        return reading
    abstention = Abstention(
        wording.probe_drift_short(drift), wording.REMEDY[Cause.PROBE_DRIFT], cause=Cause.PROBE_DRIFT
    )
    reason = wording.probe_drift(drift)
    return Verdict(Outcome.NOISY, "time", reason, normalized=True, abstention=abstention, rule=Rule.PROBE_DRIFT)
