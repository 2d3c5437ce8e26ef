"""The first rule: something to compare. No samples on a side is "new"; state probes that could not run
leave nothing known of the machine's state: not judged."""

from __future__ import annotations

from pytest_accel.core import wording
from pytest_accel.core.measurement import UNPROBED
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Rule, Verdict
from pytest_accel.judgement.rules.case import Case, Reading

__all__ = ["NO_SAMPLES", "UNPROBED_VERDICT", "check"]


def _abstains(outcome: Outcome, reason: str, why: str, cause: Cause) -> Verdict:
    abstention = Abstention(why, wording.REMEDY[cause], cause=cause)
    return Verdict(outcome, "time", reason, abstention=abstention, rule=Rule.SAMPLES)


NO_SAMPLES = _abstains(Outcome.NEW, wording.NO_SAMPLES, wording.NO_SAMPLES_SHORT, Cause.NO_SAMPLES)
UNPROBED_VERDICT = _abstains(Outcome.NOISY, wording.UNPROBED, wording.UNPROBED_SHORT, Cause.STATE_UNPROBED)


def check(case: Case, reading: Reading) -> Verdict | Reading:
    if not case.now or not case.then:
        return NO_SAMPLES
    if case.current.state.get(UNPROBED):
        return UNPROBED_VERDICT
    return reading
