"""The statistics and the verdict rules: pure logic, exhaustively."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_accel.core import wording
from pytest_accel.core.measurement import UNPROBED, Measurement
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Rule, Verdict
from pytest_accel.core.stats import mann_whitney_p, quantile, ratio_confidence_interval, relative_spread
from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.gate import run_gate
from pytest_accel.judgement.rules import unsteady
from pytest_accel.judgement.rules.case import Case, Reading
from pytest_accel.judgement.verdict import Observation, VerdictPolicy, combine, judge_memory, judge_time

positive = st.floats(min_value=1e-6, max_value=1e3, allow_nan=False, allow_infinity=False)
samples = st.lists(positive, min_size=2, max_size=40)


def noisy(centre: float, spread: float, n: int = 30, seed: int = 0) -> list[float]:
    """n samples around centre with a relative Gaussian spread."""
    rng = random.Random(seed)
    return [centre * (1 + rng.gauss(0, spread)) for _ in range(n)]


# -- statistics ---------------------------------------------------------------------------------


@given(samples, st.floats(min_value=0, max_value=1))
def test_quantile_lies_within_the_samples(values: list[float], q: float) -> None:
    assert min(values) <= quantile(values, q) <= max(values)


@given(samples)
def test_quantiles_are_monotone(values: list[float]) -> None:
    levels = [quantile(values, q) for q in (0.0, 0.25, 0.5, 0.75, 1.0)]
    assert levels == sorted(levels)


def test_quantile_rejects_empty_and_out_of_range() -> None:
    with pytest.raises(ValueError, match="no samples"):
        quantile([], 0.5)
    with pytest.raises(ValueError, match="outside"):
        quantile([1.0], 1.5)


@given(samples, samples)
@settings(max_examples=60)
def test_ratio_interval_contains_its_estimate(now: list[float], then: list[float]) -> None:
    estimate, low, high = ratio_confidence_interval(now, then, 0.95)
    assert low <= estimate * (1 + 1e-9) and estimate <= high * (1 + 1e-9)


@given(samples, samples, st.floats(min_value=0.1, max_value=10))
@settings(max_examples=60)
def test_ratio_scales_with_the_current_samples(now: list[float], then: list[float], factor: float) -> None:
    base, _, _ = ratio_confidence_interval(now, then)
    scaled, _, _ = ratio_confidence_interval([x * factor for x in now], then)
    assert scaled == pytest.approx(base * factor, rel=1e-9)


@given(samples, samples)
@settings(max_examples=60)
def test_mann_whitney_is_symmetric_and_a_probability(a: list[float], b: list[float]) -> None:
    p = mann_whitney_p(a, b)
    assert 0.0 <= p <= 1.0
    assert p == pytest.approx(mann_whitney_p(b, a))


def test_mann_whitney_matches_a_known_shift() -> None:
    assert mann_whitney_p(noisy(1.0, 0.02), noisy(1.1, 0.02, seed=1)) < 1e-6
    assert mann_whitney_p([1.0] * 10, [1.0] * 10) == 1.0


def test_ratio_interval_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="positive"):
        ratio_confidence_interval([0.0, 1.0], [1.0])
    with pytest.raises(ValueError, match="confidence"):
        ratio_confidence_interval([1.0], [1.0], 0.5)


# -- verdict rules --------------------------------------------------------------------------------

POLICY = VerdictPolicy()


def observation(centre: float, spread: float = 0.02, seed: int = 0, probe: float | None = 1e-3) -> Observation:
    times = noisy(centre, spread, seed=seed)
    probes = [probe] * len(times) if probe is not None else []
    return Observation(times, probes)


@pytest.mark.parametrize(
    "slowdown, expected",
    [(1.0, Outcome.UNCHANGED), (1.02, Outcome.UNCHANGED), (1.10, Outcome.REGRESSED), (0.85, Outcome.IMPROVED)],
)
def test_time_verdicts(slowdown: float, expected: Outcome) -> None:
    verdict = judge_time(observation(0.01 * slowdown, seed=1), observation(0.01), POLICY)
    assert verdict.outcome is expected and verdict.rule is Rule.INTERVAL
    assert verdict.normalized


def test_nothing_to_compare_is_new_and_unprobed_state_probes_are_not_judged() -> None:
    empty = judge_time(Observation([]), observation(0.01), POLICY)
    assert (empty.outcome, empty.rule) == (Outcome.NEW, Rule.SAMPLES)
    assert empty.abstention is not None and empty.abstention.cause is Cause.NO_SAMPLES
    unprobed = Observation(observation(0.02).samples, [1e-3] * 30, state={UNPROBED: 1.0})
    verdict = judge_time(unprobed, observation(0.01), POLICY)
    assert (verdict.outcome, verdict.rule) == (Outcome.NOISY, Rule.SAMPLES)
    assert verdict.abstention is not None and verdict.abstention.cause is Cause.STATE_UNPROBED


def test_a_change_within_tolerance_is_not_a_regression_even_if_significant() -> None:
    verdict = judge_time(observation(0.0104, 0.002, seed=1), observation(0.01, 0.002), POLICY)
    assert verdict.p_value is not None and verdict.p_value < 0.01
    assert verdict.outcome is Outcome.UNCHANGED


def test_a_large_but_insignificant_change_is_not_a_regression() -> None:
    now = Observation([0.01, 0.02, 0.013, 0.009] * 3, [1e-3] * 12)
    then = Observation([0.01, 0.012, 0.008, 0.015] * 3, [1e-3] * 12)
    assert judge_time(now, then, VerdictPolicy(noisy_spread_floor=10.0)).outcome is Outcome.UNCHANGED


def test_machine_drift_cancels_through_the_probe() -> None:
    # The whole machine runs 30% slower: workload and probe alike. Not a regression.
    now = Observation([t * 1.3 for t in noisy(0.01, 0.02, seed=3)], [1.3e-3] * 30)
    assert judge_time(now, observation(0.01), POLICY).outcome is Outcome.UNCHANGED


def test_without_probe_raw_samples_are_compared() -> None:
    verdict = judge_time(observation(0.012, probe=None, seed=2), observation(0.01, probe=None), POLICY)
    assert verdict.outcome is Outcome.REGRESSED and not verdict.normalized


def test_a_spread_far_above_the_baseline_is_noisy() -> None:
    verdict = judge_time(observation(0.01, spread=0.5, seed=4), observation(0.01), POLICY)
    assert verdict.outcome is Outcome.NOISY and verdict.rule is Rule.UNSTEADY
    assert verdict.abstention is not None and verdict.abstention.cause is Cause.UNSTEADY and verdict.abstention.waits


def test_a_slowdown_that_also_widened_the_spread_is_regressed_not_noisy() -> None:
    # A kernel that fell back from flash to math: 3x slower and ±35% from round to round, on a
    # machine that stayed steady. Every round is beyond the baseline's slow end: not the machine.
    now, then = observation(0.03, spread=0.35, seed=4), observation(0.01)
    verdict = judge_time(now, then, POLICY)
    assert verdict.outcome is Outcome.REGRESSED and verdict.rule is Rule.INTERVAL, verdict.reason
    # the spread rule found the run unsteady, and let it through for a slowdown that clears the interval
    reading = unsteady.check(Case(now, then, POLICY), Reading())
    assert isinstance(reading, Reading) and reading.unsteady is not None and reading.unsteady.rule is Rule.UNSTEADY
    assert verdict.ratio is not None and verdict.ratio > 2.5


def test_bursts_that_slow_most_rounds_but_not_the_fast_quarter_stay_noisy() -> None:
    # A neighbour's bursts hit 60% of the rounds (1.3-2x): the median moved far beyond the
    # tolerance, but the fast rounds are as they were, so the machine, not the code, is suspect.
    rng = random.Random(5)
    times = [0.01 * (rng.uniform(1.3, 2.0) if index % 5 < 3 else 1 + rng.gauss(0, 0.02)) for index in range(30)]
    verdict = judge_time(Observation(times, [1e-3] * 30), observation(0.01), POLICY)
    assert verdict.outcome is Outcome.NOISY and verdict.rule is Rule.UNSTEADY


def test_the_slow_end_includes_a_slower_recorded_run() -> None:
    # The latest recording was fast, an earlier one 40% slower: a run 1.3x the latest is within
    # what the baseline has seen, so a wide spread there stays noisy.
    then = Observation(noisy(0.01, 0.02), [1e-3] * 30, run_medians=(10.0, 14.0, 10.2))
    now = Observation(noisy(0.013, 0.4, seed=6), [1e-3] * 30)
    verdict = judge_time(now, then, POLICY)
    assert verdict.outcome is Outcome.NOISY and verdict.rule is Rule.UNSTEADY


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(min_value=1.0, max_value=20.0), min_size=4, max_size=40),
    st.integers(min_value=0, max_value=1000),
)
def test_a_wide_spread_with_a_quarter_of_rounds_untouched_is_never_regressed(bursts: list[float], seed: int) -> None:
    """Whatever a neighbour does to the other rounds, if a third of them ran at the baseline's
    centre, a run whose spread is above the limit is noisy, never regressed."""
    untouched = len(bursts) // 2 + 2  # a third or more of all rounds
    times = [0.01 * factor for factor in bursts] + [0.01] * untouched
    random.Random(seed).shuffle(times)
    now = Observation(times, [1e-3] * len(times))
    then = observation(0.01)
    verdict = judge_time(now, then, POLICY)
    limit = max(POLICY.noisy_spread_floor, POLICY.noisy_spread_factor * relative_spread(then.normalized))
    if relative_spread(now.normalized) > limit:
        assert verdict.outcome is Outcome.NOISY and verdict.rule is Rule.UNSTEADY
        assert verdict.abstention is not None and verdict.abstention.cause is Cause.UNSTEADY


def test_a_probe_far_off_its_baseline_is_noisy() -> None:
    verdict = judge_time(observation(0.01, probe=3e-3), observation(0.01, probe=1e-3), POLICY)
    assert verdict.outcome is Outcome.NOISY and verdict.rule is Rule.PROBE_DRIFT
    assert verdict.abstention is not None and verdict.abstention.cause is Cause.PROBE_DRIFT
    assert verdict.reason == wording.probe_drift(3.0)  # the reference kernel's drift, 3e-3 s against 1e-3 s


@pytest.mark.parametrize(
    "now, then, expected",
    [
        (110 * 2**20, 100 * 2**20, Outcome.UNCHANGED),
        (120 * 2**20, 100 * 2**20, Outcome.REGRESSED),
        (6 * 2**20, 1 * 2**20, Outcome.UNCHANGED),
    ],
)
def test_memory_verdicts(now: int, then: int, expected: Outcome) -> None:
    verdict = judge_memory(
        Observation([1.0], peak_memory_bytes=now), Observation([1.0], peak_memory_bytes=then), POLICY
    )
    assert verdict is not None and verdict.outcome is expected and verdict.rule is Rule.MEMORY
    assert verdict.ratio == pytest.approx(now / then)


def test_memory_unknown_on_either_side_gives_no_verdict() -> None:
    assert judge_memory(Observation([1.0]), Observation([1.0], peak_memory_bytes=1), POLICY) is None


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="tolerance"):
        VerdictPolicy(tolerance=math.nan)
    with pytest.raises(ValueError, match="probe_drift_limit"):
        VerdictPolicy(probe_drift_limit=1.0)


REGRESSED = Verdict(Outcome.REGRESSED, "time", "slower", ratio=1.2)
UNCHANGED = Verdict(Outcome.UNCHANGED, "time", "same", ratio=1.01)
NOISY = Verdict(Outcome.NOISY, "time", "unsteady")


@pytest.mark.parametrize(
    "confirmations, expected",
    [
        ([], Outcome.REGRESSED),
        ([REGRESSED, REGRESSED], Outcome.REGRESSED),
        ([REGRESSED, UNCHANGED], Outcome.UNCHANGED),
        ([UNCHANGED], Outcome.UNCHANGED),
        ([NOISY], Outcome.NOISY),
    ],
)
def test_a_regression_stands_only_if_confirmed(confirmations: list[Verdict], expected: Outcome) -> None:
    combined = combine(REGRESSED, confirmations)
    assert combined.outcome is expected
    confirmed = expected is Outcome.REGRESSED and bool(confirmations)
    assert combined.remeasured == (tuple(v.ratio for v in confirmations) if confirmed else ())


# -- the gate -------------------------------------------------------------------------------------


def measurement(centre: float, seed: int = 0, items: float = 2.0) -> Measurement:
    times = tuple(noisy(centre, 0.02, seed=seed))
    return Measurement(unit="images", items_per_call=items, samples=times, probe_samples=(1e-3,) * len(times))


def entry(centre: float, **provenance: str) -> BaselineEntry:
    base = measurement(centre, seed=99)
    return BaselineEntry(
        test="t::x",
        metric="throughput",
        unit="images",
        items_per_call=2.0,
        samples=base.samples,
        probe_samples=base.probe_samples,
        peak_memory_bytes=None,
        tolerance=None,
        memory_tolerance=None,
        provenance=provenance,
    )


def test_gate_remeasures_a_suspect_and_keeps_a_confirmed_regression() -> None:
    taken: list[Measurement] = []

    def again() -> Measurement:
        taken.append(measurement(0.012, seed=len(taken) + 10))
        return taken[-1]

    result = run_gate(measurement(0.012, seed=1), entry(0.01), POLICY, {}, again, confirmations=2)
    assert result.outcome is Outcome.REGRESSED
    assert len(taken) == 2 and len(result.measurements) == 3
    assert len(result.time.remeasured) == 2  # confirmed by both re-measurements


def test_gate_drops_a_regression_that_does_not_reproduce() -> None:
    result = run_gate(measurement(0.012, seed=1), entry(0.01), POLICY, {}, lambda: measurement(0.01, seed=5), 2)
    assert result.outcome is Outcome.UNCHANGED
    # not confirmed: the verdict is the re-measurement's (+0%), not the first's (+20%)
    assert not result.time.remeasured and result.time.ratio == pytest.approx(1.0, abs=0.01)
    assert len(result.measurements) == 2  # stopped after the first non-confirming re-measurement


def test_gate_remeasures_an_improvement_once_and_drops_it_when_it_does_not_reproduce() -> None:
    # A false "improved" asks for a baseline refresh from a biased run: it is checked once too.
    taken: list[Measurement] = []

    def again(centre: float) -> Callable[[], Measurement]:
        def measure_again() -> Measurement:
            taken.append(measurement(centre, seed=len(taken) + 10))
            return taken[-1]

        return measure_again

    dropped = run_gate(measurement(0.0085, seed=1), entry(0.01), POLICY, {}, again(0.01), confirmations=2)
    assert dropped.outcome is Outcome.UNCHANGED and not dropped.time.remeasured
    assert dropped.time.ratio == pytest.approx(1.0, abs=0.02)  # the re-measurement's figure, not the first's -15%
    kept = run_gate(measurement(0.0085, seed=1), entry(0.01), POLICY, {}, again(0.0085), confirmations=2)
    assert kept.outcome is Outcome.IMPROVED and len(kept.time.remeasured) == 1
    assert len(taken) == 2  # one re-measurement each, not two
    assert run_gate(measurement(0.0085, seed=1), entry(0.01), POLICY, {}, again(0.01), 0).outcome is Outcome.IMPROVED


def test_a_fresh_process_that_says_the_opposite_makes_it_noisy_never_regressed() -> None:
    from pytest_accel.judgement.confirm import FreshVerdict
    from pytest_accel.judgement.gate import with_fresh_confirmation

    improved = judge_time(observation(0.0085, seed=1), observation(0.01), POLICY)
    assert improved.outcome is Outcome.IMPROVED
    flipped = with_fresh_confirmation(improved, FreshVerdict(Outcome.REGRESSED, "time +12%"), 0.05)
    assert flipped.outcome is Outcome.NOISY and "said the opposite" in flipped.reason
    dropped = with_fresh_confirmation(improved, FreshVerdict(Outcome.UNCHANGED, "time -1%"), 0.05)
    assert dropped.outcome is Outcome.UNCHANGED and "did not confirm it" in dropped.reason


def test_gate_never_remeasures_what_is_not_suspect() -> None:
    def fail() -> Measurement:
        raise AssertionError("re-measured an unchanged result")

    assert run_gate(measurement(0.01, seed=1), entry(0.01), POLICY, {}, fail, 2).outcome is Outcome.UNCHANGED


def test_gate_says_new_without_baseline_or_for_another_workload_and_not_judged_for_another_thread_count() -> None:
    def never() -> Measurement:
        raise AssertionError

    assert run_gate(measurement(0.01), None, POLICY, {}, never, 2).outcome is Outcome.NEW
    other = run_gate(measurement(0.01, items=4.0), entry(0.01), POLICY, {}, never, 2)
    assert other.outcome is Outcome.NEW and "workload changed" in other.time.reason
    threads = run_gate(measurement(0.01), entry(0.01, cpu_threads="2"), POLICY, {"cpu_threads": "1"}, never, 2)
    assert threads.outcome is Outcome.NOISY and "cpu_threads=2" in threads.time.reason  # a setup, not a workload
    assert threads.time.abstention is not None and threads.time.abstention.setup


def test_gate_uses_the_tolerance_stored_with_the_baseline() -> None:
    loose = BaselineEntry(**{**entry(0.01).__dict__, "tolerance": 0.5})
    result = run_gate(measurement(0.012, seed=1), loose, POLICY, {}, lambda: measurement(0.012), 2)
    assert result.outcome is Outcome.UNCHANGED and result.tolerance == 0.5
    assert result.time.detectable == pytest.approx(0.5)  # the interval was judged against the entry's 50%


def test_a_few_slow_rounds_do_not_move_the_verdict() -> None:
    """Medians, not means: three rounds at 10x (a neighbour's burst) leave an unchanged kernel unchanged."""
    then = observation(0.01, 0.0005)
    burst = list(observation(0.01, 0.0005, seed=3).samples)
    burst[2] = burst[9] = burst[15] = 0.1
    now = Observation(burst, [1e-3] * len(burst))
    verdict = judge_time(now, then, POLICY)
    assert verdict.outcome is Outcome.UNCHANGED
    assert verdict.ratio is not None and abs(verdict.ratio - 1) < 0.02


def test_between_run_spread_widens_the_interval() -> None:
    now, then = observation(0.0107, 0.01, seed=5), observation(0.01, 0.01)
    steady = Observation(then.samples, then.probe_samples, run_medians=(10.0, 10.0, 10.0))
    wobbly = Observation(then.samples, then.probe_samples, run_medians=(9.0, 10.0, 11.0))
    tight = judge_time(now, steady, POLICY)
    loose = judge_time(now, wobbly, POLICY)
    assert tight.low is not None and loose.low is not None and tight.high is not None and loose.high is not None
    assert loose.high / loose.low > tight.high / tight.low


def test_two_recordings_that_disagree_widen_the_interval_too() -> None:
    # Two recordings 18% apart: their centre could be 9% off. Unchanged code near the lower one must
    # not read as a sure speedup (nor, near the higher, as a sure slowdown).
    then = Observation(noisy(0.011, 0.01), [1e-3] * 30, run_medians=(10.0, 12.0))
    verdict = judge_time(observation(0.01, 0.01, seed=6), then, POLICY)
    assert verdict.outcome is Outcome.UNCHANGED, verdict.reason
    agreeing = Observation(noisy(0.011, 0.01), [1e-3] * 30, run_medians=(11.0, 11.0))
    assert judge_time(observation(0.01, 0.01, seed=6), agreeing, POLICY).outcome is Outcome.IMPROVED


def test_the_ratio_is_taken_against_the_centre_of_the_recorded_runs() -> None:
    # The latest samples say 10.0 (normalised), but three recordings centre on 8.0: now is +25%.
    then = Observation(noisy(0.01, 0.01), [1e-3] * 30, run_medians=(8.0, 8.1, 7.9))
    verdict = judge_time(observation(0.01, 0.01, seed=6), then, POLICY)
    assert verdict.ratio == pytest.approx(1.25, rel=0.03)


def test_run_history_keeps_every_comparable_run_until_reset() -> None:
    from pytest_accel.judgement.baselines import MAX_RUN_HISTORY, run_history

    base = BaselineEntry(**{**entry(0.01).__dict__, "run_medians": (10.0, 10.1)})
    same = measurement(0.01, seed=3)
    history = run_history(base, same, {}, reset=False)
    assert history[:2] == (10.0, 10.1) and len(history) == 3
    drifted = run_history(base, measurement(0.02, seed=3), {}, reset=False)
    assert len(drifted) == 3  # a moved recording is kept: it is the machine's spread, or a change
    assert len(run_history(base, measurement(0.02, seed=3), {}, reset=True)) == 1  # an accepted change
    full = BaselineEntry(**{**entry(0.01).__dict__, "run_medians": (10.0,) * MAX_RUN_HISTORY})
    assert len(run_history(full, same, {}, reset=False)) == MAX_RUN_HISTORY
    assert run_history(None, same, {}, reset=False) == (pytest.approx(10.0, rel=0.1),)


def test_provenance_changes_names_the_shown_fields_that_moved() -> None:
    from pytest_accel.judgement.baselines import provenance_changes

    base = BaselineEntry(**{**entry(0.01).__dict__, "provenance": {"torch": "2.13.0", "commit": "a", "python": "3.11"}})
    assert provenance_changes(base, {"torch": "2.14.1", "commit": "b", "python": "3.12"}) == "torch 2.13.0 -> 2.14.1"
    assert provenance_changes(base, {"torch": "2.13.0"}) == ""


def test_a_regression_against_one_recording_says_its_spread_between_processes_was_assumed() -> None:
    slower = observation(0.013, 0.01, seed=6)
    once = Observation(noisy(0.01, 0.01), [1e-3] * 30, run_medians=(10.0,))
    verdict = judge_time(slower, once, POLICY)
    assert verdict.outcome is Outcome.REGRESSED, verdict.reason
    assumed = wording.assumed_spread(POLICY.between_run_floor)  # the floor, 2%, said assumed
    assert assumed in verdict.reason
    twice = Observation(noisy(0.01, 0.01), [1e-3] * 30, run_medians=(10.0, 10.1))
    assert assumed not in judge_time(slower, twice, POLICY).reason
    pooled = Observation(noisy(0.01, 0.01), [1e-3] * 30, run_medians=(10.0,), pooled_spread=(0.03, 4.0))
    assert assumed not in judge_time(slower, pooled, POLICY).reason  # the file's other entries measured it


def test_an_abstention_travels_through_a_result_file_and_a_bad_one_is_named() -> None:
    """A confirmation child's noisy verdict reaches the parent's summary with its short form."""

    noisy = Verdict(
        Outcome.NOISY,
        "time",
        "...",
        1.1,
        abstention=Abstention("a neighbour at 51%, uncalibrated", "x", cause=Cause.UNCALIBRATED),
    )
    assert Verdict.from_dict(noisy.to_dict(), "time").abstention == noisy.abstention
    assert "abstention" not in Verdict(Outcome.UNCHANGED, "time", "...").to_dict()
    with pytest.raises(ValueError, match="time verdict: 'abstention' must be an object"):
        Verdict.from_dict({**noisy.to_dict(), "abstention": {"why": 3}}, "time")


@pytest.mark.parametrize("cause", list(Cause))
def test_an_abstention_keeps_its_rule_through_a_result_file(cause: Cause) -> None:
    verdict = Verdict(Outcome.NOISY, "time", "...", abstention=Abstention("why", "remedy", True, cause=cause))
    again = Verdict.from_dict(json.loads(json.dumps(verdict.to_dict())), "time")
    assert again.abstention == verdict.abstention and again.abstention is not None
    assert again.abstention.setup is (cause is Cause.SETUP)


@pytest.mark.parametrize(("kept", "cause"), [({"setup": True}, Cause.SETUP), ({}, Cause.UNNAMED)])
def test_a_file_written_before_causes_were_kept_reads_what_it_said(kept: dict[str, bool], cause: Cause) -> None:
    data = {"outcome": "noisy", "reason": "...", "abstention": {"why": "w", "remedy": "r", "waits": False, **kept}}
    verdict = Verdict.from_dict(data, "time")
    assert verdict.abstention is not None and verdict.abstention.cause is cause


def test_an_unknown_cause_is_named() -> None:
    data = {"outcome": "noisy", "reason": "...", "abstention": {"why": "w", "remedy": "r", "cause": "ghosts"}}
    with pytest.raises(ValueError, match=r"time verdict: 'abstention'\['cause'\]: unknown cause 'ghosts'"):
        Verdict.from_dict(data, "time")
