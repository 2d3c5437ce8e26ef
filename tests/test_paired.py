"""The A/B stopping rule (pure logic) and the Student-t quantile it rests on."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_accel.core.outcomes import Outcome
from pytest_accel.core.stats import t_cdf, t_quantile
from pytest_accel.judgement.paired import (
    PairedVerdict,
    SequentialPlan,
    calibrated_level,
    judge_pairs,
    look_schedule,
)


@pytest.mark.parametrize(
    ("p", "df", "expected"),  # R's qt()
    [(0.975, 1, 12.706205), (0.975, 10, 2.228139), (0.995, 5, 4.032143), (0.999, 30, 3.385185), (0.9, 3, 1.637744)],
)
def test_t_quantile_matches_tables(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=1e-5)
    assert t_quantile(1 - p, df) == pytest.approx(-expected, abs=1e-5)


def test_t_quantile_tends_to_normal() -> None:
    assert t_quantile(0.975, 1e7) == pytest.approx(1.959964, abs=1e-5)


@given(st.floats(-50, 50), st.integers(1, 200))
def test_t_cdf_and_quantile_invert(t: float, df: int) -> None:
    p = t_cdf(t, df)
    if 1e-9 < p < 1 - 1e-9:
        assert t_quantile(p, df) == pytest.approx(t, abs=1e-6 * max(1.0, abs(t)))


def test_t_quantile_refuses_bad_levels() -> None:
    with pytest.raises(ValueError, match="outside"):
        t_quantile(1.0, 5)
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_cdf(1.0, 0)


def test_looks_grow_geometrically_to_the_maximum() -> None:
    assert look_schedule(3, 40) == (3, 4, 5, 7, 9, 12, 15, 19, 24, 30, 38, 40)
    assert look_schedule(3, 3) == (3,)


@given(st.integers(2, 30), st.integers(0, 200))
def test_looks_are_increasing_and_bounded(first: int, extra: int) -> None:
    looks = look_schedule(first, first + extra)
    assert looks[0] == first and looks[-1] == first + extra
    assert all(a < b for a, b in itertools.pairwise(looks))
    assert len(looks) <= 3 + math.log(first + extra) / math.log(1.25)


@pytest.mark.parametrize(("low", "high"), [(1, 5), (4, 3)])
def test_bad_pair_counts_are_refused(low: int, high: int) -> None:
    with pytest.raises(ValueError, match="pairs"):
        SequentialPlan(min_pairs=low, max_pairs=high)


def test_a_doubling_is_regressed_at_the_first_look() -> None:
    verdict = judge_pairs([math.log(2.0), math.log(2.1), math.log(1.9)], SequentialPlan())
    assert verdict.outcome is Outcome.REGRESSED
    assert verdict.low is not None and verdict.low > 1.05
    assert verdict.reason == "slower, beyond the 5% tolerance"


def test_no_claim_between_looks() -> None:
    plan = SequentialPlan()
    assert 6 not in plan.looks
    assert judge_pairs([math.log(2.0)] * 6, plan).outcome is Outcome.PENDING
    assert judge_pairs([math.log(2.0)] * 6, plan, last=True).outcome is Outcome.REGRESSED


def test_identical_builds_with_little_noise_are_unchanged() -> None:
    verdict = judge_pairs([0.004, -0.003, 0.001], SequentialPlan())
    assert verdict.outcome is Outcome.UNCHANGED


def test_a_straddling_interval_at_the_last_look_is_inconclusive_and_says_what_would_decide() -> None:
    rng = random.Random(3)
    ratios = [math.log(1.06) + rng.gauss(0, 0.2) for _ in range(5)]
    verdict = judge_pairs(ratios, SequentialPlan(max_pairs=5))
    assert verdict.outcome is Outcome.INCONCLUSIVE
    assert "straddles" in verdict.reason and "pairs at this noise would decide" in verdict.reason


def test_too_few_pairs_at_the_end_are_inconclusive() -> None:
    verdict = judge_pairs([0.5], SequentialPlan(), last=True)
    assert verdict.outcome is Outcome.INCONCLUSIVE and "too few" in verdict.reason


def test_non_finite_ratios_are_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        judge_pairs([0.1, math.nan, 0.0], SequentialPlan())


@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=40), st.booleans())
def test_claims_follow_the_interval_and_mirror(ratios: list[float], last: bool) -> None:
    plan = SequentialPlan()
    verdict = judge_pairs(ratios, plan, last=last)
    limit = 1 + plan.tolerance
    if verdict.outcome is Outcome.REGRESSED:
        assert verdict.low is not None and verdict.low > 1 and verdict.ratio is not None and verdict.ratio > limit
    if verdict.outcome is Outcome.UNCHANGED:
        assert verdict.low is not None and verdict.high is not None
        assert 1 / limit <= verdict.low <= verdict.high <= limit
    mirrored = judge_pairs([-x for x in ratios], plan, last=last).outcome
    swap = {Outcome.REGRESSED: Outcome.IMPROVED, Outcome.IMPROVED: Outcome.REGRESSED}
    assert mirrored is swap.get(verdict.outcome, verdict.outcome)


def test_verdict_round_trips_through_json() -> None:
    verdict = judge_pairs([math.log(2.0)] * 3, SequentialPlan())
    assert PairedVerdict.from_dict(verdict.to_dict()) == verdict


@settings(deadline=None, max_examples=1)
@given(st.just(0))
def test_repeated_looks_keep_the_false_alarm_rate_and_catch_a_tenth(_: int) -> None:
    """Unchanged builds (A/A) are called regressed at most alpha / 2 = 1% of the time over every
    scheduled look; a build 10% slower is caught in nearly every sitting, within 12 pairs mostly.

    Normal per-pair noise of 7% (the SD measured on the CI VM, docs/sensitivity.md); 2,000 whole
    sittings each.
    """
    plan, rng = SequentialPlan(), random.Random(7)

    def sittings(shift: float) -> tuple[float, list[int]]:
        regressed, pairs = 0, []
        for _ in range(2000):
            ratios: list[float] = []
            while True:
                ratios.append(shift + rng.gauss(0, 0.07))
                verdict = judge_pairs(ratios, plan, last=len(ratios) == plan.max_pairs)
                if verdict.outcome is not Outcome.PENDING:
                    break
            regressed += verdict.outcome is Outcome.REGRESSED
            pairs.append(len(ratios))
        return regressed / 2000, sorted(pairs)

    false_alarms, _ = sittings(0.0)
    caught, pairs = sittings(math.log(1.10))
    assert false_alarms <= plan.alpha / 2
    assert caught >= 0.95 and pairs[len(pairs) // 2] <= 12


def test_the_calibrated_level_spends_the_whole_budget_that_bonferroni_only_bounds() -> None:
    """Fresh simulated sittings (another seed than the calibration's): normal pairs' intervals miss
    the truth at some look in about alpha of them at the calibrated level, and in clearly fewer at
    Bonferroni's alpha / looks; the level lies between the two bounds, the same at every call."""
    plan = SequentialPlan()
    level = plan.alpha_per_look
    assert plan.alpha / len(plan.looks) < level < plan.alpha
    assert calibrated_level(plan.looks, plan.alpha) == level  # seeded: the same each time

    calibrated = {n: t_quantile(1 - level / 2, n - 1) for n in plan.looks}
    bonferroni = {n: t_quantile(1 - plan.alpha / len(plan.looks) / 2, n - 1) for n in plan.looks}
    rng, sittings, misses = random.Random(99), 4000, {"calibrated": 0, "bonferroni": 0}
    for _ in range(sittings):
        total = squares = 0.0
        worst = {"calibrated": False, "bonferroni": False}
        for n in range(1, plan.max_pairs + 1):
            x = rng.gauss(0.0, 2.0)  # the true mean 0, any spread: the t statistic is free of both
            total, squares = total + x, squares + x * x
            if n in calibrated:
                t = abs(total / n) / math.sqrt((squares - total * total / n) / (n - 1) / n)
                worst["calibrated"] |= t > calibrated[n]
                worst["bonferroni"] |= t > bonferroni[n]
        for name, missed in worst.items():
            misses[name] += missed
    assert 0.012 <= misses["calibrated"] / sittings <= 0.028  # alpha = 0.02; 4,000 sittings: SE 0.0022
    assert misses["bonferroni"] < misses["calibrated"]  # the same sittings: Bonferroni's misses are a subset (1.5%)


def test_a_schedule_too_long_to_simulate_falls_back_to_bonferroni() -> None:
    looks = look_schedule(3, 1000)
    assert calibrated_level(looks, 0.02) == 0.02 / len(looks)


def test_a_bisect_step_is_good_once_no_slowdown_of_half_the_change_fits_the_interval() -> None:
    """A bisect step's question is one-sided: pairs of an unchanged commit read 0.99 [0.93 .. 1.06]: too
    wide for "within ±5%" both ways, but its slow end lies within half a known +15% change (+7.2%); a
    slowdown is regressed as always."""
    pairs = [math.log(r) for r in (1.01, 0.96, 1.0, 0.97, 1.01)]
    plain, step = SequentialPlan(min_pairs=5), SequentialPlan(min_pairs=5, not_slower_than=math.sqrt(1.15) - 1)
    _, low, high = plain.interval(pairs)
    assert low < 1 / 1.05 and high < 1.072
    assert judge_pairs(pairs, plain).outcome is Outcome.PENDING
    verdict = judge_pairs(pairs, step)
    assert verdict.outcome is Outcome.UNCHANGED and verdict.reason == "no slowdown beyond +7.2%"
    slower = [value + math.log(1.15) for value in pairs]
    assert judge_pairs(slower, step).outcome is judge_pairs(slower, plain).outcome is Outcome.REGRESSED
    with pytest.raises(ValueError, match="not_slower_than must be a number >= the tolerance"):
        SequentialPlan(not_slower_than=0.01)
