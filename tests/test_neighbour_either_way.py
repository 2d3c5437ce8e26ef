"""A neighbour moves a figure either way: uncalibrated, nothing is judged; calibrated, what it could hide
widens what an unchanged verdict could see (judgement/neighbour.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_neighbour import POLICY, QUIET, SHARED, baseline, beside, observation

from pytest_accel.core import wording
from pytest_accel.core.measurement import FOREIGN_CPU
from pytest_accel.core.outcomes import Cause, Outcome, Rule, Sight
from pytest_accel.judgement.verdict import judge_time


@given(st.floats(min_value=0.5, max_value=3.0))
def test_beside_an_uncalibrated_neighbour_no_reading_is_judged_whichever_way_it_reads(moved: float) -> None:
    """A neighbour slows the reference kernel too, so it moves a figure either way: beside one, an exact
    +10% read +0.9% .. +4.5% for three math kernels (2-core Intel VM) and was called unchanged."""
    verdict = judge_time(observation(0.01 * moved, SHARED), baseline(), POLICY)
    assert verdict.outcome is Outcome.NOISY and verdict.rule is Rule.NEIGHBOUR, verdict.reason
    assert verdict.abstention is not None and verdict.abstention.waits
    assert verdict.abstention.cause is Cause.UNCALIBRATED
    assert verdict.abstention.why == wording.uncalibrated_short(0.45)  # the neighbour's share of the host


def test_a_reading_within_the_tolerance_beside_an_uncalibrated_neighbour_says_why_it_was_not_judged() -> None:
    """The +2.4% of an exact +10% slowdown, beside a neighbour at 50% (golden: the reason a person reads)."""
    verdict = judge_time(observation(0.01024, {**QUIET, FOREIGN_CPU: 0.50}), baseline(), POLICY)
    assert verdict.reason == (
        "time +2.4%, but other processes used 50% of the host's CPU time during this measurement (its "
        "baseline's recordings: at most 2%), and no calibration run of this test saw a neighbour this busy "
        "(record one with --accel-calibrate): a neighbour slows the reference kernel too, so it can hide a "
        "slowdown as well as make one: not judged"
    )
    assert verdict.normalized and verdict.ratio == pytest.approx(1.024)


def test_an_unchanged_reading_beside_a_neighbour_that_made_the_test_look_faster_sees_less_and_says_why() -> None:
    """A neighbour that made the test read 26% faster in calibration could hide a slowdown of 35%: the
    verdict is unchanged, but what it could see is widened by that (golden), and the summary counts
    the cause."""
    verdict = judge_time(observation(0.0104, SHARED), baseline((beside(0.74), beside(1.02))), POLICY)
    assert verdict.outcome is Outcome.UNCHANGED
    assert verdict.reason == (
        "time +4.0% [95% CI -0.7% .. +8.9%] relative to the reference kernel, within the 5% tolerance; could "
        "see a slowdown of 42% or more (widened by 35.1%, what a neighbour could hide: beside the standard "
        "neighbour (its calibration, 2 run(s)) this test's time read up to 26% shorter); the host was shared: "
        "other processes used 45% of the host's CPU time during this measurement (its baseline's recordings: "
        "at most 2%)"
    )
    assert verdict.detectable == pytest.approx(1.05 / 0.74 - 1)
    assert verdict.sight is Sight.HIDDEN


def test_a_neighbour_that_only_slowed_the_test_in_calibration_could_hide_as_much() -> None:
    """Which way a neighbour moves a test is its phase: a math decode kernel read +14% and +18% in two
    calibration runs, then an exact +10% beside the same neighbour read +3.3% and +1.8% and was called
    unchanged claiming a sight of 10% and 7% (2-core AMD VM, docs/studies/recorded-build)."""
    verdict = judge_time(observation(0.0104, SHARED), baseline((beside(1.18), beside(1.14))), POLICY)
    assert verdict.outcome is Outcome.UNCHANGED, verdict.reason
    assert verdict.detectable == pytest.approx(1.05 * 1.18 - 1)
    assert verdict.sight is Sight.HIDDEN
    # what it could hide: the 18% its calibration read longer, said as the neighbour's reach (2 runs, slower)
    reach = math.log(1.18)
    assert wording.neighbour_hides(reach, wording.neighbour_reach(2, 0.0, reach), bound_said=False) in verdict.reason
