"""What limits a verdict's sight (judgement/sight.py): the part of the interval named, with its remedy."""

from __future__ import annotations

import math
import statistics
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_accel.core import wording
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Rule, Sight, Verdict
from pytest_accel.judgement.results import Recorded
from pytest_accel.judgement.sight import Source, Width, between_run, limited_by
from pytest_accel.judgement.verdict import Observation, VerdictPolicy, VerdictRecord, judge_time
from pytest_accel.outputs.terminal import verdict_summary

POLICY = VerdictPolicy()
# The flash decode kernel's three recordings on the 2-core AMD VM (docs/studies/sight), probe-normalised.
DECODE_RUNS = (0.6213, 0.7003, 0.6467)


def _observation(centre: float, runs: tuple[float, ...] = ()) -> Observation:
    samples = [centre * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(30)]
    return Observation(samples, [1.0] * 30, None, runs)


def test_a_figure_blind_from_its_recordings_says_so_and_what_would_narrow_it() -> None:
    verdict = judge_time(_observation(0.6467 * 0.98), _observation(0.6467, DECODE_RUNS), POLICY)
    assert verdict.outcome is Outcome.UNCHANGED and verdict.rule is Rule.INTERVAL and verdict.sight == Sight.RECORDINGS
    assert verdict.detectable == pytest.approx(0.15, abs=0.005)
    spread = statistics.stdev(math.log(r) for r in DECODE_RUNS)  # SD 6.1% between processes, of 3 recordings
    assert spread == pytest.approx(0.061, abs=5e-4)
    assert verdict.reason.endswith(wording.limited_by(Sight.RECORDINGS, spread, 0.0, 3, 0))


def test_a_figure_the_tolerance_limits_names_no_cause() -> None:
    verdict = judge_time(_observation(0.01), _observation(0.01, (0.01, 0.0101, 0.0099)), VerdictPolicy(tolerance=0.10))
    assert verdict.sight is None and verdict.detectable == pytest.approx(0.10)  # the tolerance sets it


@pytest.mark.parametrize(
    ("width", "shift", "cause"),
    [
        (Width(0.09, 0.045, "floor", 0.02, 3), 0.0, Sight.ROUNDS),
        (Width(0.01, 0.055, "floor", 0.02, 1), 0.0, Sight.RECORDINGS),  # the floor, but of one recording
        (Width(0.02, 0.09, "typical", 0.04, 3), 0.0, Sight.TYPICAL),
        (Width(0.04, 0.045, "floor", 0.02, 3), 0.0, Sight.FLOOR),
        (Width(0.02, 0.045, "floor", 0.02, 3), 0.08, Sight.STATE),
    ],
)  # fmt: skip
def test_each_cause_in_full(width: Width, shift: float, cause: Sight) -> None:
    """The cause, and its clause with the width's figures (the words: test_wording.py); the state has its own."""
    said = (
        "" if cause is Sight.STATE else wording.limited_by(cause, width.spread, width.within, width.runs, width.nights)
    )
    assert limited_by(width, shift, 0.05) == (cause, said)


def test_the_between_part_says_which_spread_set_it() -> None:
    floor, confidence = 0.02, 0.95
    assert between_run((1.0, 1.0, 1.0), None, floor, confidence)[1:] == ("floor", 0.02)
    assert between_run((1.0, 1.0, 1.0), (0.03, 8.0), floor, confidence)[1:] == ("typical", 0.03)
    half, source, spread = between_run(DECODE_RUNS, (0.015, 8.0), floor, confidence)
    assert source == "recordings" and spread == pytest.approx(0.0609, abs=1e-3)
    assert half == pytest.approx(1.96 * spread * math.sqrt(4 / 3), rel=1e-3)


parts = st.floats(0.0, 0.5)


@given(parts, parts, parts, st.sampled_from(get_args(Source)), st.integers(1, 10))
def test_a_cause_is_named_exactly_when_the_interval_sets_the_sight(
    within: float, between: float, shift: float, source: Source, runs: int
) -> None:
    width = Width(within, between, source, 0.02, runs)
    limit = limited_by(width, shift, 0.05)
    assert (limit is None) == (math.exp(width.half_width + shift) - 1 <= 0.05)
    if limit is not None and limit[0] == Sight.ROUNDS:
        assert within >= max(between, shift)


def test_the_summary_counts_what_limited_the_blind_figures() -> None:
    def recorded(detectable: float, sight: Sight | None) -> Recorded:
        verdict = Verdict(Outcome.UNCHANGED, "time", "time +1%", 1.01, 0.9, 1.1, detectable=detectable, sight=sight)
        return Recorded("t::a", "passed", Measurement("x", 1.0, (0.1,)), VerdictRecord(verdict))

    records = [
        recorded(0.06, None),
        recorded(0.15, Sight.RECORDINGS),
        recorded(0.21, Sight.RECORDINGS),
        recorded(0.12, Sight.ROUNDS),
    ]
    records.append(recorded(0.3, None))
    assert verdict_summary(records, "cpu-k/smoke", updating=False)[-1] == (
        "accel: 1 of 5 judged figures could see a 10% slowdown; 4 only 12%-30% or more, limited by its recordings' "
        "spread (2), this run's rounds (1), its tolerance (1)"  # a 30% tolerance (an ini's) sets the last one's
    )


def test_the_cause_survives_a_result_file_and_a_bad_one_is_refused() -> None:
    verdict = Verdict(Outcome.UNCHANGED, "time", "time +1%", 1.01, 0.9, 1.1, detectable=0.15, sight=Sight.RECORDINGS)
    assert Verdict.from_dict(verdict.to_dict(), "time").sight == Sight.RECORDINGS
    assert "sight" not in Verdict(Outcome.UNCHANGED, "time", "time +1%").to_dict()
    assert verdict.to_dict()["sight"] == "its recordings' spread"  # as the summary says it
    with pytest.raises(ValueError, match=r"time verdict: 'sight' must be one of \[.*\] or absent, got 3"):
        Verdict.from_dict({**verdict.to_dict(), "sight": 3}, "time")
