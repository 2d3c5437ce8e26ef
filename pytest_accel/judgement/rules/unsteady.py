"""The spread rule: a run whose rounds spread far wider than the floor and the baseline's is not judged,
unless its fastest quarter lies beyond the baseline's slow end by more than the tolerance: an unsteady
machine slows some rounds, a workload that became slower (and more variable) moves them all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pytest_accel.core import wording
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Rule, Verdict
from pytest_accel.core.stats import quantile, relative_spread
from pytest_accel.judgement.rules.case import Case, Reading

__all__ = ["check", "separated"]


def separated(now: Sequence[float], then: Sequence[float], runs: Sequence[float], tolerance: float) -> bool:
    """Whether this run's fast quartile lies beyond the baseline's slow end (its latest recording's slow
    quartile, or a slower recorded run's median) by more than the tolerance (docs/measurements.md)."""
    slow_end = max((quantile(then, 0.75), *runs))
    return quantile(now, 0.25) > slow_end * (1 + tolerance)


def check(case: Case, reading: Reading) -> Verdict | Reading:
    policy = case.policy
    spread_now, spread_then = relative_spread(case.now), relative_spread(case.then)
    limit = max(policy.noisy_spread_floor, policy.noisy_spread_factor * spread_then)
    if spread_now <= limit:
        return reading
    clause = wording.unsteady(spread_now, limit, spread_then)
    abstention = Abstention(
        wording.unsteady_short(spread_now, limit), wording.REMEDY[Cause.UNSTEADY], waits=True, cause=Cause.UNSTEADY
    )
    too_unsteady = Verdict(
        Outcome.NOISY, "time", wording.too_unsteady(clause), normalized=case.normalized, abstention=abstention,
        rule=Rule.UNSTEADY,
    )  # fmt: skip
    if not separated(case.now, case.then, case.runs, policy.tolerance):
        return too_unsteady
    said = wording.unsteady_but_separated(clause, policy.tolerance)
    return replace(reading, unsteady=too_unsteady, clauses=(*reading.clauses, said))
