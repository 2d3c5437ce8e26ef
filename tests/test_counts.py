"""The work counted under callgrind (--accel-count): the rule, the store, the fixture's use of a verdict, the
loader's variables in the counting process, and the summary lines (callgrind's files: tests/test_count_files.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_accel.core import wording
from pytest_accel.core.counts import INSTRUCTIONS, Count, moved_functions
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Rule, Verdict
from pytest_accel.engine.counting import LOADER_ENV, as_started, loader_variables
from pytest_accel.judgement.baselines import MAX_RUN_HISTORY
from pytest_accel.judgement.counts import CountGate, CountPlan, CountStore, count_key, counted
from pytest_accel.judgement.results import Recorded
from pytest_accel.judgement.rules.count import COUNTED, MISSES_FLOOR, CountVerdict, judge_count
from pytest_accel.judgement.structures import RECORD_HINT
from pytest_accel.judgement.verdict import VerdictPolicy, VerdictRecord
from pytest_accel.outputs.terminal import verdict_summary
from pytest_accel.storage.files import StoreError

POLICY = VerdictPolicy()
TEST = "perf_tests/test_attention.py::test_attention_forward[sdpa-math-b2]"
KEY = count_key("cpu-x-2c", "avx2", "3.19.0")
ACCEPT = "pytest perf_tests/test_attention.py --accel-count --accel-update"


def count(
    instructions: float,
    misses: float | None = None,
    calls: int = 1,
    functions: tuple[tuple[str, int], ...] = (),
) -> Count:
    """A count of ``calls`` calls doing ``instructions`` (and ``misses`` last-level misses) per call."""
    events = {INSTRUCTIONS: round(instructions * calls), "Dr": 7 * calls}
    if misses is not None:  # all the misses on data reads, none on fetches or writes
        events.update(ILmr=0, DLmr=round(misses * calls), DLmw=0)
    return Count(calls, events, functions, {"isa": "avx2", "torch": "2.5.1", "python": "3.11.9"})


# --- the functions that moved ----------------------------------------------------------------------


def test_the_functions_that_moved_most_come_first_per_call() -> None:
    then = count(1e6, calls=2, functions=(("gemm", 1_000_000), ("copy", 400_000), ("add", 200_000), ("same", 50)))
    now = count(1e6, calls=1, functions=(("gemm", 490_000), ("copy", 350_000), ("logf", 30_000), ("same", 25)))
    assert moved_functions(then, now, most=5) == [
        ("copy", 200_000.0, 350_000.0),  # +150,000 per call
        ("add", 100_000.0, 0.0),  # gone: below the kept few now
        ("logf", 0.0, 30_000.0),  # new
        ("gemm", 500_000.0, 490_000.0),
    ]  # "same" did the same work per call: left out
    assert moved_functions(then, now) == moved_functions(then, now, most=5)[:3]
    assert moved_functions(then, then) == []


def test_functions_that_moved_alike_are_listed_by_name() -> None:
    then = count(1e3, functions=(("b", 10), ("a", 10)))
    assert moved_functions(then, count(1e3)) == [("a", 10.0, 0.0), ("b", 10.0, 0.0)]


# --- the rule --------------------------------------------------------------------------------------


def test_nothing_recorded_is_new() -> None:
    verdict = judge_count([], count(2e6), POLICY)
    assert (verdict.outcome, verdict.instructions, verdict.misses, verdict.moved) == (Outcome.NEW, None, None, ())
    assert verdict.margin == POLICY.count_margin
    assert verdict.reason == wording.count_new(2e6)
    assert verdict.rule is Rule.COUNT and not verdict.fails


@pytest.mark.parametrize(
    ("change", "outcome"),
    [
        (1.0, Outcome.UNCHANGED),
        (1.0009, Outcome.UNCHANGED),
        (1.0011, Outcome.REGRESSED),
        (1 / 1.0009, Outcome.UNCHANGED),
        (1 / 1.0011, Outcome.IMPROVED),
        (0.5, Outcome.IMPROVED),
        (2.0, Outcome.REGRESSED),
    ],
)
def test_a_large_count_is_judged_against_the_policys_margin(change: float, outcome: Outcome) -> None:
    recorded = [count(1e8, functions=(("gemm", 90_000_000), ("copy", 10_000_000)))]
    verdict = judge_count(recorded, count(1e8 * change), POLICY)
    assert verdict.outcome is outcome
    assert verdict.fails is (outcome is Outcome.REGRESSED)
    assert verdict.instructions == pytest.approx((1e8, 1e8 * change))
    assert verdict.margin == POLICY.count_margin  # the floor: 1000 of 1e8 is 0.001%, below the margin
    assert verdict.misses is None


def test_the_floor_keeps_a_tiny_count_from_failing_on_a_few_hundred_instructions() -> None:
    tiny = [count(12_000)]
    moved = judge_count(tiny, count(12_000 * 1.009), POLICY)  # +108 instructions per call
    assert moved.outcome is Outcome.UNCHANGED
    assert moved.margin == pytest.approx(POLICY.count_floor / 12_000)
    grown = judge_count(tiny, count(12_000 + 1.2 * POLICY.count_floor), POLICY)
    assert grown.outcome is Outcome.REGRESSED
    large = judge_count([count(2e8)], count(2e8 * 1.005), POLICY)  # +1,000,000 instructions per call
    assert (large.outcome, large.margin) == (Outcome.REGRESSED, POLICY.count_margin)


def test_the_margin_is_the_floor_over_the_recordings_median() -> None:
    recorded = [count(10_000), count(10_000), count(40_000)]  # median 10,000: range 3x (3 x 30,000 / 10,000 = 9)
    assert judge_count(recorded[:2], count(10_000), POLICY).margin == pytest.approx(0.1)
    assert judge_count(recorded, count(10_000), POLICY).margin == pytest.approx(9.0)


def test_recordings_that_disagree_widen_the_margin_to_three_times_their_range() -> None:
    recorded = [count(1.00e8), count(1.01e8), count(1.005e8)]  # median 1.005e8, range 1e6
    widened = 3 * 1e6 / 1.005e8
    within = judge_count(recorded, count(1.005e8 * 1.02), POLICY)
    assert (within.outcome, within.margin) == (Outcome.UNCHANGED, pytest.approx(widened))
    assert within.instructions == pytest.approx((1.005e8, 1.005e8 * 1.02))
    assert judge_count(recorded, count(1.005e8 * 1.04), POLICY).outcome is Outcome.REGRESSED
    assert judge_count(recorded, count(1.005e8 / 1.04), POLICY).outcome is Outcome.IMPROVED
    assert judge_count(recorded[:1], count(1.005e8 * 1.02), POLICY).outcome is Outcome.REGRESSED


@pytest.mark.parametrize(
    ("then", "now", "outcome"),
    [
        pytest.param(10_000, 10_000 * 1.03, Outcome.REGRESSED, id="grown-beyond-the-miss-margin"),
        pytest.param(10_000, 10_000 * 1.01, Outcome.UNCHANGED, id="grown-within-the-miss-margin"),
        pytest.param(10_000, 5_000, Outcome.UNCHANGED, id="fewer-misses-alone-claim-nothing"),
        pytest.param(500, 600, Outcome.UNCHANGED, id="grown-below-the-floor"),
        pytest.param(MISSES_FLOOR - 1, MISSES_FLOOR + 500, Outcome.REGRESSED, id="grown-across-the-floor"),
    ],
)
def test_misses_grown_with_the_same_instructions(then: float, now: float, outcome: Outcome) -> None:
    verdict = judge_count([count(1e8, then)], count(1e8, now), POLICY)
    assert verdict.outcome is outcome
    assert verdict.misses == pytest.approx((then, now))
    assert verdict.instructions == pytest.approx((1e8, 1e8))


def test_recorded_misses_that_disagree_widen_the_miss_margin() -> None:
    recorded = [count(1e8, 10_000), count(1e8, 10_100), count(1e8, 10_050)]  # 3 x 100 / 10,050: about 3%
    assert judge_count(recorded, count(1e8, 10_050 * 1.025), POLICY).outcome is Outcome.UNCHANGED
    assert judge_count(recorded, count(1e8, 10_050 * 1.04), POLICY).outcome is Outcome.REGRESSED


def test_misses_are_not_judged_unless_both_sides_simulated_the_cache() -> None:
    assert judge_count([count(1e8)], count(1e8, 50_000), POLICY).misses is None
    assert judge_count([count(1e8, 1_000)], count(1e8), POLICY).misses is None
    assert judge_count([count(1e8), count(1e8, 4_000)], count(1e8, 4_000), POLICY).misses == (4_000, 4_000)


def test_fewer_instructions_for_more_misses_is_no_improvement() -> None:
    recorded = [count(1e8, 10_000)]
    more_misses = judge_count(recorded, count(0.9e8, 10_100), POLICY)
    assert more_misses.outcome is Outcome.UNCHANGED
    assert more_misses.moved == ()
    assert judge_count(recorded, count(0.9e8, 10_000), POLICY).outcome is Outcome.IMPROVED
    assert judge_count(recorded, count(0.9e8, 9_000), POLICY).outcome is Outcome.IMPROVED
    assert judge_count(recorded, count(0.9e8, 20_000), POLICY).outcome is Outcome.REGRESSED


def test_a_regression_names_the_functions_that_moved_against_the_latest_recording() -> None:
    older = count(1e8, functions=(("gemm", 90_000_000), ("add", 10_000_000)))
    latest = count(1e8, functions=(("gemm", 90_000_000), ("copy", 10_000_000)))
    now = count(1.1e8, functions=(("gemm", 90_000_000), ("copy", 20_000_000)))
    regressed = judge_count([older, latest], now, POLICY)
    assert regressed.outcome is Outcome.REGRESSED
    assert regressed.moved == (wording.count_moved("copy", 10_000_000, 20_000_000),)
    assert judge_count([latest], count(1e8 / 1.1, functions=(("gemm", 90_909_091),)), POLICY).moved == (
        wording.count_moved("copy", 10_000_000, 0),
        wording.count_moved("gemm", 90_000_000, 90_909_091),
    )
    unchanged = judge_count([latest], count(1e8, functions=(("gemm", 80_000_000), ("copy", 20_000_000))), POLICY)
    assert (unchanged.outcome, unchanged.moved) == (Outcome.UNCHANGED, ())


def test_the_reason_says_the_figures() -> None:
    verdict = judge_count([count(1e8, 10_000)], count(1.002e8, 10_300), POLICY)
    assert verdict.reason == wording.counted("regressed", 1e8, 1.002e8, POLICY.count_margin, (10_000, 10_300))


instructions_per_call = st.integers(min_value=1, max_value=10**12)
misses_per_call = st.none() | st.integers(min_value=1, max_value=10**9)


@given(instructions_per_call, misses_per_call, st.integers(min_value=1, max_value=10), st.integers(1, 6))
def test_a_count_judged_against_identical_recordings_is_unchanged(
    instructions: int, misses: int | None, calls: int, recordings: int
) -> None:
    now = count(instructions, misses, calls)
    verdict = judge_count([now] * recordings, now, POLICY)
    assert verdict.outcome is Outcome.UNCHANGED
    assert verdict.instructions == pytest.approx((instructions, instructions))
    assert verdict.moved == ()


@given(st.integers(min_value=1_000, max_value=10**11), st.floats(min_value=1.5, max_value=100))
def test_a_count_grown_well_beyond_its_margin_regressed_and_shrunk_improved(base: int, times: float) -> None:
    margin = max(POLICY.count_margin, POLICY.count_floor / base)
    grown = judge_count([count(base)], count(base * (1 + margin * times)), POLICY)
    assert (grown.outcome, grown.margin) == (Outcome.REGRESSED, pytest.approx(margin))
    assert judge_count([count(base)], count(base / (1 + margin * times)), POLICY).outcome is Outcome.IMPROVED


@given(st.integers(min_value=1_000, max_value=10**11), st.floats(min_value=0, max_value=0.9))
def test_a_count_moved_well_within_its_margin_is_unchanged(base: int, times: float) -> None:
    margin = max(POLICY.count_margin, POLICY.count_floor / base)
    assert judge_count([count(base)], count(base * (1 + margin * times)), POLICY).outcome is Outcome.UNCHANGED
    assert judge_count([count(base)], count(base / (1 + margin * times)), POLICY).outcome is Outcome.UNCHANGED


def test_recordings_without_a_miss_are_judged() -> None:
    """A median of 0 misses per call over two recordings: the miss margin is the policy's, no division by 0."""
    recorded = [count(1e8, 0), count(1e8, 0)]
    assert judge_count(recorded, count(1e8, 0), POLICY).outcome is Outcome.UNCHANGED


def test_a_recording_of_no_instructions_is_judged() -> None:
    """A recording of 0 instructions (a file may hold one): any work now is more, no division by 0."""
    recorded = [Count.from_json({"calls": 1, "events": {"Ir": 0}, "functions": []}, "x")]
    assert judge_count(recorded, count(10), POLICY).outcome is Outcome.REGRESSED


# --- the verdict as files keep it ------------------------------------------------------------------

REGRESSED = CountVerdict(
    Outcome.REGRESSED, "instructions per call ...: regressed", (1e8, 1.1e8), (10_000.0, 10_500.0), 0.001,
    ("copy: 10,000,000 -> 20,000,000 per call (+100.0%)",),
)  # fmt: skip


@pytest.mark.parametrize(
    "verdict",
    [
        pytest.param(REGRESSED, id="regressed"),
        pytest.param(CountVerdict(Outcome.ERROR, "not counted: valgrind is not on PATH"), id="error"),
        pytest.param(CountVerdict(Outcome.NEW, "1,000 instructions ...: new", margin=0.001), id="new"),
        pytest.param(CountVerdict(Outcome.UNCHANGED, "...", (12_000.0, 12_108.0), None, 1 / 12), id="unchanged"),
    ],
)
def test_a_count_verdict_round_trips(verdict: CountVerdict) -> None:
    assert CountVerdict.from_dict(json.loads(json.dumps(verdict.to_dict()))) == verdict
    assert verdict.outcome in COUNTED


@pytest.mark.parametrize(
    ("change", "named"),
    [
        pytest.param({"outcome": "noisy"}, "unknown outcome", id="noisy"),
        pytest.param({"outcome": None}, "unknown outcome", id="no-outcome"),
        pytest.param({"reason": 3}, "'reason'", id="reason"),
        pytest.param({"margin": "0.1"}, "'margin'", id="margin-text"),
        pytest.param({"margin": True}, "'margin'", id="margin-bool"),
        pytest.param({"moved": "copy"}, "'moved'", id="moved-text"),
        pytest.param({"moved": [1]}, "'moved'", id="moved-numbers"),
        pytest.param({"instructions": [1.0]}, "'instructions'", id="instructions-one"),
        pytest.param({"instructions": ["1", "2"]}, "'instructions'", id="instructions-text"),
        pytest.param({"misses": [True, 1.0]}, "'misses'", id="misses-bool"),
        pytest.param({"misses": {"then": 1}}, "'misses'", id="misses-object"),
    ],
)
def test_a_bad_count_verdict_is_refused_by_its_field(change: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        CountVerdict.from_dict({**REGRESSED.to_dict(), **change})


def test_a_count_verdict_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ValueError, match="expected an object"):
        CountVerdict.from_dict([REGRESSED.to_dict()])


# --- the store and the gate ------------------------------------------------------------------------


def test_the_count_key_names_the_device_the_isa_and_valgrind() -> None:
    assert KEY == "cpu-x-2c-avx2-valgrind3.19.0"


def test_the_store_round_trips_and_keeps_other_entries(tmp_path: Path) -> None:
    store = CountStore(tmp_path)
    first = (count(1e6, 2_000, functions=(("gemm", 900_000),)), count(1.0001e6, 2_010))
    written = store.update(KEY, "smoke", 1, [(TEST, "time", first)])
    assert written == tmp_path / "counts" / KEY / "smoke.json" == store.path_for(KEY, "smoke")
    assert store.load(KEY, "smoke") == {(TEST, "time"): first}
    other = (count(5e5),)
    store.update(KEY, "smoke", 1, [(f"{TEST}-other", "time", other)])
    assert store.load(KEY, "smoke") == {(TEST, "time"): first, (f"{TEST}-other", "time"): other}
    store.update(KEY, "smoke", 1, [(TEST, "time", first[1:])])
    assert store.load(KEY, "smoke") == {(TEST, "time"): first[1:], (f"{TEST}-other", "time"): other}
    assert store.load(KEY, "smoke", 2) == {} and store.load(count_key("cpu-y", "avx2", "3.19.0"), "smoke") == {}
    assert store.update(KEY, "smoke", 2, [(TEST, "time", other)]).name == "smoke-w2.json"


def test_a_bad_stored_count_is_named_by_its_place(tmp_path: Path) -> None:
    store = CountStore(tmp_path)
    path = store.update(KEY, "smoke", 1, [(TEST, "time", (count(1e6),))])
    document = json.loads(path.read_text())
    document["entries"][TEST]["time"][0]["calls"] = 0
    path.write_text(json.dumps(document))
    with pytest.raises(StoreError, match=re.escape(f"entries[{TEST!r}]['time'][0].calls")):
        store.load(KEY, "smoke")
    document["entries"][TEST]["time"] = []
    path.write_text(json.dumps(document))
    with pytest.raises(StoreError, match="non-empty list of counts"):
        store.load(KEY, "smoke")


def test_the_gate_says_why_a_measurement_was_not_counted() -> None:
    missing = {(TEST, "memory"): "the counting process failed: exit 1"}
    gate = CountGate({(TEST, "time"): count(1e6)}, dict, missing, None)
    assert gate.judge(TEST, "memory", POLICY) == "the counting process failed: exit 1"
    assert gate.judge(f"{TEST}-other", "time", POLICY) == "the counting process did not count it"
    refused = CountGate({}, dict, missing, "valgrind is not on PATH")
    assert refused.judge(TEST, "memory", POLICY) == "valgrind is not on PATH"
    assert refused.verdicts == {}


def test_the_gate_judges_each_count_against_its_recordings() -> None:
    now = {(TEST, "time"): count(1.1e6), (f"{TEST}-new", "time"): count(1e6)}
    gate = CountGate(now, lambda: {(TEST, "time"): (count(1e6),)}, {}, None)
    regressed = gate.judge(TEST, "time", POLICY)
    new = gate.judge(f"{TEST}-new", "time", POLICY)
    assert isinstance(regressed, CountVerdict) and isinstance(new, CountVerdict)
    assert (regressed.outcome, new.outcome) == (Outcome.REGRESSED, Outcome.NEW)
    assert gate.verdicts == {(TEST, "time"): regressed, (f"{TEST}-new", "time"): new}


def test_recording_again_appends_and_keeps_the_newest() -> None:
    history = tuple(count(1e6 + i) for i in range(MAX_RUN_HISTORY))
    now = {(TEST, "time"): count(2e6), (f"{TEST}-new", "time"): count(3e6)}
    gate = CountGate(now, lambda: {(TEST, "time"): history, (f"{TEST}-gone", "time"): history}, {}, None)
    again = {(test, metric): recordings for test, metric, recordings in gate.recorded_again()}
    assert again == {
        (TEST, "time"): (*history[1:], count(2e6)),
        (f"{TEST}-new", "time"): (count(3e6),),
    }  # what this run did not count is not rewritten
    assert len(again[(TEST, "time")]) == MAX_RUN_HISTORY


# --- what a test's fixture does with the verdict ---------------------------------------------------

UNCHANGED_TIME = Verdict(Outcome.UNCHANGED, "time", "time +0.4% ..., within the 5% tolerance", 1.004, 0.99, 1.02)
REGRESSED_TIME = Verdict(Outcome.REGRESSED, "time", "time +26.9% ..., beyond the 5% tolerance", 1.269, 1.16, 1.33)


def plan(verdict: CountVerdict | str | None, strict: str | None = None) -> CountPlan:
    judge = None if verdict is None else (lambda metric: verdict)
    return CountPlan(TEST, judge, key=KEY, accept=ACCEPT, strict=strict)


def test_nothing_asked_changes_nothing() -> None:
    record = VerdictRecord(UNCHANGED_TIME)
    assert counted(None, "time", record, None) == (record, None)
    assert counted(plan(None), "time", record, "time failed") == (record, "time failed")


def test_a_measurement_not_counted_is_an_error_and_fails_only_when_strict() -> None:
    record, failure = counted(plan("valgrind is not on PATH"), "time", VerdictRecord(UNCHANGED_TIME), None)
    assert record.count is not None and record.count.outcome is Outcome.ERROR
    assert record.count.reason == wording.not_counted("valgrind is not on PATH")
    assert (failure, record.outcome, record.time) == (None, Outcome.UNCHANGED, UNCHANGED_TIME)
    strict = plan("valgrind is not on PATH", strict="--accel-strict is set")
    record, failure = counted(strict, "time", VerdictRecord(UNCHANGED_TIME), None)
    assert failure is not None and record.count is not None
    assert record.count.reason in failure and "--accel-strict is set" in failure
    _, joined = counted(strict, "time", VerdictRecord(REGRESSED_TIME), "perf regressed: ...")
    assert joined is not None and joined.startswith("perf regressed: ...\n") and failure in joined


def test_a_count_that_grew_fails_even_where_time_passed() -> None:
    verdict = judge_count(
        [count(1e8, functions=(("copy", 10**7),))], count(1.1e8, functions=(("copy", 2 * 10**7),)), POLICY
    )
    record, failure = counted(plan(verdict), "time", VerdictRecord(UNCHANGED_TIME), None)
    assert record.count == verdict and verdict.outcome is Outcome.REGRESSED and verdict.moved
    assert (record.time.outcome, record.outcome) == (Outcome.UNCHANGED, Outcome.REGRESSED)
    grew = wording.count_grew("test_attention_forward[sdpa-math-b2]", KEY, verdict.reason, verdict.moved)
    assert failure == f"{grew}\n  {RECORD_HINT}: {ACCEPT}"
    _, both = counted(plan(verdict), "time", VerdictRecord(REGRESSED_TIME), "perf regressed: time")
    assert both == f"perf regressed: time\n{failure}"


def test_a_count_that_grew_while_recording_is_reported_not_enforced() -> None:
    verdict = judge_count([count(1e8)], count(1.1e8), POLICY)
    recording = CountPlan(TEST, lambda metric: verdict, key=KEY, accept=ACCEPT, recording=True)
    record, failure = counted(recording, "time", VerdictRecord(UNCHANGED_TIME), None)
    assert (record.count, failure) == (verdict, None)
    missing = CountPlan(TEST, lambda metric: "why", strict="--accel-strict is set", recording=True)
    assert counted(missing, "time", VerdictRecord(UNCHANGED_TIME), None)[1] is None


def test_a_time_regression_with_the_same_work_says_so_and_still_fails() -> None:
    same = judge_count([count(1e8)], count(1e8), POLICY)
    record, failure = counted(plan(same), "time", VerdictRecord(REGRESSED_TIME), "perf regressed: time")
    assert failure == f"perf regressed: time\n{wording.count_same_work(same.reason)}"
    assert (record.outcome, record.count) == (Outcome.REGRESSED, same)
    assert counted(plan(same), "time", VerdictRecord(UNCHANGED_TIME), None)[1] is None
    assert counted(plan(same), "time", VerdictRecord(UNCHANGED_TIME), "noisy, strict")[1] == "noisy, strict"
    improved = judge_count([count(1e8)], count(0.5e8), POLICY)
    assert counted(plan(improved), "time", VerdictRecord(REGRESSED_TIME), "perf regressed: time")[1] == (
        "perf regressed: time"
    )


@pytest.mark.parametrize("verdict", [REGRESSED, CountVerdict(Outcome.ERROR, "not counted: why"), None])
def test_a_verdict_record_keeps_its_count(verdict: CountVerdict | None) -> None:
    record = VerdictRecord(UNCHANGED_TIME, count=verdict)
    data = json.loads(json.dumps(record.to_dict()))
    assert ("count" in data) is (verdict is not None)
    again = VerdictRecord.from_dict(data)
    assert again == record and again.count == verdict
    assert data["outcome"] == ("regressed" if verdict is REGRESSED else "unchanged")


# --- the loader's variables in the counting process ------------------------------------------------

VALGRIND = {"LD_PRELOAD": "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so", "LD_LIBRARY_PATH": "/vg"}


def test_the_counting_process_restores_its_parents_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOADER_ENV, raising=False)
    told = loader_variables({"LD_LIBRARY_PATH": "/opt/lib", "HOME": "/home/me", "LD_BIND_NOW": "1"})
    assert set(told) == {LOADER_ENV} and json.loads(told[LOADER_ENV]) == {"LD_LIBRARY_PATH": "/opt/lib"}
    started = as_started({"PATH": "/bin", **VALGRIND, **told})
    assert started["LD_LIBRARY_PATH"] == "/opt/lib" and "LD_PRELOAD" not in started
    assert started["PATH"] == "/bin"
    both = loader_variables({"LD_PRELOAD": "/lib/libjemalloc.so", "LD_LIBRARY_PATH": "/opt/lib"})
    assert {k: as_started({**VALGRIND, **both})[k] for k in VALGRIND} == {
        "LD_PRELOAD": "/lib/libjemalloc.so",
        "LD_LIBRARY_PATH": "/opt/lib",
    }


def test_a_parent_without_a_loader_leaves_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOADER_ENV, raising=False)
    started = as_started({"PATH": "/bin", **VALGRIND, **loader_variables({"PATH": "/bin"})})
    assert not set(VALGRIND) & set(started) and started["PATH"] == "/bin"


def test_the_counting_process_reads_its_own_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOADER_ENV, json.dumps({"LD_PRELOAD": "/lib/libtcmalloc.so"}))
    assert as_started({"PATH": "/bin", **VALGRIND}) == {"PATH": "/bin", "LD_PRELOAD": "/lib/libtcmalloc.so"}


def test_elsewhere_the_variables_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOADER_ENV, raising=False)
    given_variables = {"PATH": "/bin", **VALGRIND}
    started = as_started(given_variables)
    assert started == given_variables and started is not given_variables


# --- the summary -----------------------------------------------------------------------------------

NOW = Measurement("sequences", 2.0, (0.0281,) * 20, device_key="cpu-x-2c")


def recorded(count_verdict: CountVerdict | None, time: Verdict = UNCHANGED_TIME, test: str = TEST) -> Recorded:
    return Recorded(test, "passed", NOW, VerdictRecord(time, count=count_verdict))


def count_verdict(outcome: Outcome) -> CountVerdict:
    return CountVerdict(outcome, f"... {outcome.value}", (1e6, 1e6))


def test_the_summary_counts_the_work_by_outcome() -> None:
    records = [
        recorded(count_verdict(Outcome.UNCHANGED)),
        recorded(count_verdict(Outcome.UNCHANGED)),
        recorded(count_verdict(Outcome.REGRESSED)),
        recorded(count_verdict(Outcome.IMPROVED)),
        recorded(None),
    ]
    lines = verdict_summary(records, "cpu-x-2c/smoke", updating=False)
    assert "accel: work counted: 1 improved, 1 regressed, 2 unchanged" in lines
    assert not any("NOT JUDGED" in line for line in lines)
    assert any(line.startswith("accel: 1 regressed") for line in lines)  # the count failed its test


def test_the_summary_says_loudly_what_was_not_counted() -> None:
    error = CountVerdict(Outcome.ERROR, wording.not_counted("valgrind is not on PATH"))
    records = [recorded(count_verdict(Outcome.NEW)), recorded(error), recorded(error)]
    lines = verdict_summary(records, "cpu-x-2c/smoke", updating=False)
    assert lines[-2:] == [
        "accel: NOT JUDGED: the work of 2 measurement(s): not counted: valgrind is not on PATH",
        "accel: work counted: 1 new; new: record with `pytest <same args> --accel-count --accel-update`",
    ]
    updating = verdict_summary(records, "cpu-x-2c/smoke", updating=True)
    assert "accel: work counted: 1 new" in updating
    assert verdict_summary([recorded(None)], "cpu-x-2c/smoke", updating=False) == ["accel: 1 unchanged"]
