"""Golden output of the messages a person reads: each kind, exact text, built from real runs' figures."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

from pytest_accel.commands.ab import Sitting, Track, table
from pytest_accel.commands.bisect import Bisect, BisectSettings, Reading, report
from pytest_accel.core.measurement import FOREIGN_CPU, Measurement
from pytest_accel.core.operator_table import NOTHING_MOVED
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Verdict
from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.bisection import Bisection, Finding
from pytest_accel.judgement.comparable import NO_BASELINE
from pytest_accel.judgement.conclusion import GateResult, failure_lines
from pytest_accel.judgement.confirm import FreshVerdict
from pytest_accel.judgement.paired import PairedVerdict
from pytest_accel.judgement.recorded_build import RecordedWord
from pytest_accel.judgement.results import Recorded
from pytest_accel.judgement.rules.count import CountVerdict
from pytest_accel.judgement.structures import StructureVerdict, structure_failure
from pytest_accel.judgement.verdict import RECORD, BesideRecorded, Observation, VerdictPolicy, VerdictRecord, judge_time
from pytest_accel.outputs.pages import markdown_table
from pytest_accel.outputs.terminal import sittings_line, verdict_summary

TEST = "perf_tests/test_attention.py::test_attention_forward[sdpa-flash-sd3-256px-b2]"
KEY = "cpu-intel-xeon-f6m207-2c"
# The figures of a +25% slowdown that kept the operators (a host spin after each SDPA call), beside a
# second copy of the tests after one calibration (2-core Intel VM, 2026-12-02).
FULL_REASON = (
    "time +26.9% [95% CI +16.4% .. +32.9%] relative to the reference kernel, beyond the 5% tolerance; other "
    "processes used 50% of the host's CPU time during this measurement (its baseline's recordings: at most 0%), but "
    "beside the standard neighbour (its calibration, 1 run(s), other processes at up to 51% of the host) this test "
    "was at most 1% slower: this is beyond it; confirmed by 2 re-measurement(s) (+26.7%, +27.3%)"
)
REGRESSED = Verdict(
    Outcome.REGRESSED, "time", FULL_REASON, 1.269, 1.164, 1.329, 0.001, True, 0.05,
    ruled_out=(
        "a neighbour (50% of the host; calibrated: at most 1% slower)",
        "the machine's state (up to 13%)",
    ),
    remeasured=(1.267, 1.273),
)  # fmt: skip
FRESH = FreshVerdict(
    Outcome.REGRESSED, "time +28.1% ...", Verdict(Outcome.REGRESSED, "time", "time +28.1% ...", 1.281, 1.080, 1.342)
)
ENTRY = BaselineEntry(
    TEST, "throughput", "sequences", 2.0, (0.0221,) * 20, run_medians=(11.2, 11.4, 11.3),
    provenance={"commit": "612bd91a0c3e", "date": "2026-12-02T18:40:11+00:00", "torch": "2.13.0+cpu"},
)  # fmt: skip
NOW = Measurement("sequences", 2.0, (0.0281,) * 20, device_key=KEY)


def test_a_time_regression_is_a_few_lines_headline_first() -> None:
    gate = GateResult(REGRESSED, None, (NOW,), tolerance=0.05, fresh=FRESH)
    lines = failure_lines(TEST, gate, ENTRY, "regressed", {"torch": "2.13.0+cpu"})
    assert lines == [
        "perf regressed: test_attention_forward[sdpa-flash-sd3-256px-b2]: time +26.9% [+16.4% .. +32.9%]",
        f"  beyond the 5% tolerance: 90.5 -> 71.2 sequences/s on {KEY}",
        "  believed: 2 re-measurements (+26.7%, +27.3%); a fresh process (+28.1% [+8.0% .. +34.2%])",
        "  ruled out: a neighbour (50% of the host; calibrated: at most 1% slower); the machine's state (up to 13%)",
        "  baseline: commit 612bd91a0c3e, 2026-12-02, 3 recordings, torch 2.13.0+cpu",
    ]
    assert max(len(line) for line in lines) <= 120


def test_a_regression_confirmed_beside_its_recorded_build_says_so_and_one_that_could_not_be_says_why() -> None:
    beside = RecordedWord(
        "612bd91a0c3e", "+24.8% ...", PairedVerdict(Outcome.REGRESSED, 9, 1.248, 1.190, 1.309, "slower, beyond ...")
    )
    gate = GateResult(REGRESSED, None, (NOW,), tolerance=0.05, fresh=FRESH, recorded=beside)
    lines = failure_lines(TEST, gate, ENTRY, "regressed", {"torch": "2.13.0+cpu"})
    assert lines[2:5] == [
        "  believed: 2 re-measurements (+26.7%, +27.3%); a fresh process (+28.1% [+8.0% .. +34.2%])",
        "  recorded build: commit 612bd91a0c3e beside this tree: +24.8% [+19.0% .. +30.9%], 9 pairs",
        "  ruled out: a neighbour (50% of the host; calibrated: at most 1% slower); the machine's state (up to 13%)",
    ]
    assert max(len(line) for line in lines) <= 120
    shallow = RecordedWord("", "commit 612bd91a0c3e is not in this clone (a shallow one?)")
    lines = failure_lines(TEST, replace(gate, recorded=shallow), ENTRY, "regressed", {"torch": "2.13.0+cpu"})
    assert lines[3] == "  recorded build: not measured: commit 612bd91a0c3e is not in this clone (a shallow one?)"
    changed = RecordedWord("", "the environment changed since the recordings: plugin spin_late added, PYTHONPATH "
                               "unset -> '…ies/environment-plant/../quiet-wait'")  # fmt: skip
    lines = failure_lines(TEST, replace(gate, recorded=changed), ENTRY, "regressed", {"torch": "2.13.0+cpu"})
    assert lines[3] == (
        "  recorded build: not measured: the environment changed since the recordings: plugin spin_late added…"
    )  # the whole list under -v, and in the result file
    verbose = failure_lines(TEST, replace(gate, recorded=changed), ENTRY, "regressed", {"torch": "2.13.0+cpu"}, True)
    assert verbose[3].endswith("PYTHONPATH unset -> '…ies/environment-plant/../quiet-wait'")


# The fresh recordings of docs/studies/huge-pages: three within 11 minutes, a run 1.7 hours later.
RECORDED_AT = ("2026-12-04T20:51:10+00:00", "2026-12-04T20:56:40+00:00", "2026-12-04T21:02:05+00:00")
LATER = datetime(2026, 12, 4, 22, 44, 0, tzinfo=timezone.utc)


def test_a_regression_on_recordings_minutes_apart_hours_ago_says_they_hold_no_drift() -> None:
    gate = GateResult(REGRESSED, None, (NOW,), tolerance=0.05, fresh=FRESH)
    entry = replace(ENTRY, run_times=RECORDED_AT)
    lines = failure_lines(TEST, gate, entry, "regressed", {"torch": "2.13.0+cpu"}, now=LATER)
    assert lines[-1] == (
        "  recordings: 3 within 11 minutes, the newest 1.7 hours before this run: "
        "their spread holds no drift over hours"
    )
    assert max(len(line) for line in lines) <= 120
    assert failure_lines(TEST, gate, entry, "regressed", {"torch": "2.13.0+cpu"}, now=LATER - timedelta(hours=1))[
        -1
    ].startswith("  baseline:")  # 42 minutes after the newest: nothing to say


def test_verbose_adds_the_whole_reasoning_and_nothing_else() -> None:
    gate = GateResult(REGRESSED, None, (NOW,), tolerance=0.05, fresh=FRESH)
    short = failure_lines(TEST, gate, ENTRY, "regressed", {"torch": "2.13.0+cpu"})
    verbose = failure_lines(TEST, gate, ENTRY, "regressed", {"torch": "2.13.0+cpu"}, verbose=True)
    assert verbose == [*short, f"  the whole reasoning: {FULL_REASON}"]


def test_a_memory_regression_says_the_memory_line_and_an_upgrade_since_the_baseline() -> None:
    unchanged = Verdict(Outcome.UNCHANGED, "time", "time +0.4% [95% CI -1.0% .. +1.9%], within the 5% tolerance")
    memory = Verdict(
        Outcome.REGRESSED, "memory", "peak memory 96.0 MiB -> 192.0 MiB, beyond the 10% tolerance", ratio=2.0
    )
    gate = GateResult(unchanged, memory, (NOW,), tolerance=0.05)
    assert failure_lines(TEST, gate, ENTRY, "regressed", {"torch": "2.14.0+cpu"}) == [
        "perf regressed: test_attention_forward[sdpa-flash-sd3-256px-b2]: peak memory +100.0%",
        "  memory: peak memory 96.0 MiB -> 192.0 MiB, beyond the 10% tolerance",
        "  baseline: commit 612bd91a0c3e, 2026-12-02, 3 recordings, torch 2.13.0+cpu; since then: torch 2.13.0+cpu -> "
        "2.14.0+cpu",
    ]


def test_a_noisy_figure_failed_by_strict_says_why_it_was_not_judged() -> None:
    """The state rule's own words (a large copy 1.19x as long as the recordings saw), short without -v."""
    state = {**QUIET, "memory": 3.00e-3 * 1.32}
    noisy = judge_time(_observation(0.0115, 1e-3, state), _baseline(), VerdictPolicy())
    assert noisy.outcome is Outcome.NOISY
    gate = GateResult(noisy, None, (NOW,), tolerance=0.05)
    lines = failure_lines(TEST, gate, ENTRY, "noisy (and --accel-strict is set)", {"torch": "2.13.0+cpu"})
    assert lines == [
        "perf noisy (and --accel-strict is set): test_attention_forward[sdpa-flash-sd3-256px-b2]",
        "  not judged (state: memory copy 1.32x, up to 19%); to judge it: a quieter machine",
        "  baseline: commit 612bd91a0c3e, 2026-12-02, 3 recordings, torch 2.13.0+cpu",
    ]
    verbose = failure_lines(TEST, gate, ENTRY, "noisy (and --accel-strict is set)", {"torch": "2.13.0+cpu"}, True)
    assert verbose[1] == f"  time: {noisy.reason}" and verbose[-1] == f"  the whole reasoning: {noisy.reason}"


def _recorded(time: Verdict, structure: StructureVerdict | None = None) -> Recorded:
    return Recorded(TEST, "passed", NOW, VerdictRecord(time, structure=structure))


def test_the_summary_of_a_run_on_a_host_without_baselines() -> None:
    new = Verdict(Outcome.NEW, "time", "no baseline for this test on this device")
    structure = StructureVerdict(Outcome.NEW, ("no structural record for this test under cpu-avx2-torch2.13.0_cpu",))
    assert verdict_summary([_recorded(new, structure)] * 2, f"{KEY}/smoke", updating=False) == [
        f"accel: 2 new: no baseline for {KEY}/smoke: record one with `pytest <same args> --accel-update`",
        "accel: what ran: 2 new; new: record with `pytest <same args> --accel-update`",
    ]


def test_the_summary_of_an_improvement_and_an_abstention_says_what_to_do() -> None:
    improved = Verdict(Outcome.IMPROVED, "time", "time -20.1% ...: faster", 0.799, 0.78, 0.82, detectable=0.04)
    drifted = judge_time(_observation(0.01, 2.31e-3, QUIET), _baseline(), VerdictPolicy())
    assert verdict_summary([_recorded(improved), _recorded(drifted)], f"{KEY}/smoke", updating=False) == [
        "accel: NOT JUDGED: 1 of 2 figures (noisy), 1 judged: a slowdown there would pass unseen; --accel-strict "
        "fails them",
        "accel:   to judge these, re-record if that is the new normal (--accel-update):",
        "accel:     test_attention_forward[sdpa-flash-sd3-256px-b2]  reference kernel 2.31x as long",
        "accel: 1 improved: faster than the baseline: refresh it with `pytest <same args> --accel-update`",
        "accel: 1 of 1 judged figures could see a 10% slowdown",
    ]


def test_a_figure_the_stored_baseline_left_unjudged_and_its_sitting_judged_says_it_was_judged_there() -> None:
    """A +10% the stored comparison left unjudged (the state probes beyond the recordings') and its sitting
    judged: math prefill, an hour after the recordings (docs/studies/recorded-build, run 2); shown here
    under the file's one test name."""
    beside = RecordedWord(
        "cbd273b25879", "+10.4% ...", PairedVerdict(Outcome.REGRESSED, 3, 1.104, 1.082, 1.127, "slower, beyond ...")
    )
    judged = Verdict(Outcome.REGRESSED, "time", "the machine is in a state ...; judged beside ...", 1.104, 1.082, 1.127)
    gate = GateResult(judged, None, (NOW,), tolerance=0.05, recorded=beside, judged_beside=True)
    assert failure_lines(TEST, gate, ENTRY, "regressed", {"torch": "2.13.0+cpu"}) == [
        "perf regressed: test_attention_forward[sdpa-flash-sd3-256px-b2]: time +10.4% [+8.2% .. +12.7%]",
        f"  beyond the 5% tolerance: 90.5 -> 71.2 sequences/s on {KEY}",
        "  judged: commit cbd273b25879 beside this tree: +10.4% [+8.2% .. +12.7%], 3 pairs",
        "  baseline: commit 612bd91a0c3e, 2026-12-02, 3 recordings, torch 2.13.0+cpu",
    ]


def test_the_sittings_of_a_run_are_counted_with_their_cost() -> None:
    def sat(outcome: Outcome | None, seconds: float) -> RecordedWord:
        return RecordedWord("cbd273b25879", "...", None if outcome is None else PairedVerdict(outcome, 3), seconds)

    sittings = [sat(Outcome.REGRESSED, 41.0), sat(Outcome.UNCHANGED, 187.5), sat(Outcome.REGRESSED, 38.0)]
    assert sittings_line(sittings, 20) == [
        "accel: measured 3 figures beside the recorded build in 4.4 minutes of 20: 2 regressed, 1 unchanged"
    ]
    assert sittings_line([sat(None, 3.0)], 20) == [
        "accel: measured 1 figure beside the recorded build in 0.1 minutes of 20: 1 no answer"
    ]
    assert sittings_line([], 20) == []


def test_the_summary_names_a_figure_its_recorded_build_read_the_same_and_asks_to_record_again() -> None:
    """Unchanged math decode, 8 minutes after three recordings (docs/studies/recorded-build, run 1)."""
    reason = (
        "time +16.7% [95% CI +5.1% .. +22.8%] ...; confirmed in a fresh process: ...; the recorded build, measured "
        "beside this one, read the same (commit cbd273b25879): +0.1% [-3.5% .. +3.8%], unchanged after 30 pairs "
        "(within ±5%): not the code: the host moved since the recordings (the environment is as recorded)"
    )
    moved = Verdict(Outcome.UNCHANGED, "time", reason, 1.158, 1.051, 1.228, detectable=0.05)
    sitting = BesideRecorded("cbd273b25879", Outcome.UNCHANGED, "+0.1% [-3.5% .. +3.8%], unchanged after 30 pairs")
    record = _named("test_attention_forward[sdpa-math-llama70b-decode-kv384]", moved)
    records = [replace(record, verdict=VerdictRecord(moved, beside_recorded=sitting))]
    assert verdict_summary(records, f"{KEY}/smoke", updating=False) == [
        "accel: 1 unchanged",
        "accel: 1 slower than the stored figure, not than the recorded build beside it: not the code",
        "accel:   the host moved since the recordings (the environment is as recorded): record again (--accel-update):",
        "accel:     test_attention_forward[sdpa-math-llama70b-decode-kv384]  +15.8%",
        "accel: 1 of 1 judged figures could see a 10% slowdown",
    ]


def test_a_figure_whose_recorded_build_read_the_same_while_other_operators_ran_is_not_called_the_host() -> None:
    """The flash -> math switch by an environment variable: both builds beside each other run math, so the
    sitting reads the same; but a host does not change what runs, so the summary does not ask to record
    again (docs/examples/operator-diff, 2026-12-05: +43.2% and the structure changed)."""
    moved = Verdict(Outcome.UNCHANGED, "time", "...: not the code: ...", 1.432, 1.35, 1.52, detectable=0.05)
    sitting = BesideRecorded("1d2dc2f0a1b2", Outcome.UNCHANGED, "+0.4% [-2.0% .. +2.9%], unchanged after 6 pairs")
    ran = StructureVerdict(Outcome.CHANGED, ("aten::_scaled_dot_product_flash_attention_for_cpu gone",))
    drifted = _named("test_attention_forward[sdpa-math-llama70b-decode-kv384]", moved)
    switched = _named("test_attention_block", moved)
    records = [
        replace(drifted, verdict=VerdictRecord(moved, beside_recorded=sitting)),
        replace(switched, verdict=VerdictRecord(moved, beside_recorded=sitting, structure=ran)),
    ]
    changed = "accel: what ran: 1 changed (a different set of operations ran: see the failures or warnings above)"
    assert verdict_summary(records, f"{KEY}/smoke", updating=False) == [
        "accel: 1 regressed: slower (or fatter) than the baseline, confirmed by re-measurement: see the failures above",
        "accel: 1 unchanged",
        "accel: 1 slower than the stored figure, not than the recorded build beside it: not the code",
        "accel:   the host moved since the recordings (the environment is as recorded): record again (--accel-update):",
        "accel:     test_attention_forward[sdpa-math-llama70b-decode-kv384]  +43.2%",
        "accel: 1 slower than the stored figure and its recorded build alike, yet other operators ran:",
        "accel:   not the host: the environment changed (a variable, a plugin, a library): regressed, see what ran:",
        "accel:     test_attention_block  +43.2%",
        "accel: 2 of 2 judged figures could see a 10% slowdown",
        changed,
    ]
    assert verdict_summary(records[1:], f"{KEY}/smoke", updating=False)[1:4] == [
        "accel: 1 slower than the stored figure and its recorded build alike, yet other operators ran:",
        "accel:   not the host: the environment changed (a variable, a plugin, a library): regressed, see what ran:",
        "accel:     test_attention_block  +43.2%",
    ]


# The state of a quiet recording, and the figures of a +10% slowdown beside an uncalibrated second copy of
# the suite (2-core Intel VM, 2026-12-02: 9 of 12 noisy, 2 of them after two suspects were refuted).
QUIET = {"compute": 1.00e-3, "memory": 3.00e-3, "latency": 1.00e-3, FOREIGN_CPU: 0.0}


def _observation(centre: float, probe: float, state: dict[str, float]) -> Observation:
    samples = [centre * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(30)]
    return Observation(samples, [probe] * 30, None, (), state)


def _baseline() -> Observation:
    then = _observation(0.01, 1e-3, {})
    return Observation(then.samples, then.probe_samples, None, (10.0, 10.0, 10.0), {}, (QUIET,) * 3)


def _named(test: str, time: Verdict) -> Recorded:
    return Recorded(f"perf_tests/test_attention.py::{test}", "passed", NOW, VerdictRecord(time))


def test_the_summary_beside_a_neighbour_names_each_unjudged_figure_under_what_would_judge_it() -> None:
    policy = VerdictPolicy()
    refuted = Verdict(
        Outcome.NOISY, "time", "time +10.1% ...; not judged: 2 earlier suspects ...", 1.101,
        abstention=Abstention("2 suspects refuted by fresh processes", "run them again in a new process "
                              "(pytest <same args> -k <test>)", cause=Cause.BIASED_PROCESS),
    )  # fmt: skip
    records = [
        _named("test_attention_forward[sdpa-flash-sd3-128px-b2]",
               judge_time(_observation(0.0110, 1e-3, {**QUIET, FOREIGN_CPU: 0.51}), _baseline(), policy)),
        _named("test_attention_forward[sdpa-flash-sd3-256px-b2]", refuted),
        _named("test_attention_forward_backward[sdpa-math-sd3-128px-b2]",
               judge_time(_observation(0.01062, 1e-3, {**QUIET, FOREIGN_CPU: 0.50}), _baseline(), policy)),
        _named("test_attention_forward[sdpa-math-sd3-128px-b2]",
               judge_time(_observation(0.0100, 1e-3, QUIET), _baseline(), policy)),
    ]  # fmt: skip
    lines = verdict_summary(records, f"{KEY}/smoke", updating=False)
    assert lines == [
        "accel: NOT JUDGED: 3 of 4 figures (noisy), 1 judged: a slowdown there would pass unseen; --accel-strict "
        "fails them",
        "accel:   to judge these, calibrate beside a neighbour (--accel-calibrate):",
        "accel:     test_attention_forward[sdpa-flash-sd3-128px-b2]          +10.0%  a neighbour at 51%, uncalibrated",
        "accel:     test_attention_forward_backward[sdpa-math-sd3-128px-b2]   +6.2%  a neighbour at 50%, uncalibrated",
        "accel:   to judge these, run them again in a new process (pytest <same args> -k <test>):",
        "accel:     test_attention_forward[sdpa-flash-sd3-256px-b2]          +10.1%  2 suspects refuted by fresh "
        "processes",
        "accel: 1 unchanged",
        "accel: 1 of 1 judged figures could see a 10% slowdown",
    ]
    assert max(len(line) for line in lines) <= 120


def test_the_summary_of_new_figures_says_why_each_was_not_compared() -> None:
    """One without a baseline, one whose baseline was timed in another mode (both from a real run's figures)."""
    missing = Verdict(
        Outcome.NEW, "time", "no baseline ...", abstention=Abstention(NO_BASELINE, RECORD, cause=Cause.NO_BASELINE)
    )
    graph = Verdict(
        Outcome.NEW, "time", "not compared: ...",
        abstention=Abstention("timing graph -> eager", f"re-{RECORD}", cause=Cause.NOT_COMPARED),
    )  # fmt: skip
    records = [_named("test_attention_forward[sdpa-math-sd3-128px-b2]", missing), _named("test_add", graph)]
    assert verdict_summary(records, f"{KEY}/smoke", updating=False) == [
        f"accel: 1 new: no baseline for {KEY}/smoke: record one with `pytest <same args> --accel-update`",
        "accel: 1 new: not compared with the baseline (other hardware, workload or mode)",
        "accel:   to judge these, re-record a baseline: pytest <same args> --accel-update:",
        "accel:     test_add  timing graph -> eager",
    ]


def test_a_structural_change_names_each_change_and_the_command_that_accepts_it() -> None:
    """A flash -> math fallback (tests/test_structure.py's planted one), as its failure prints it."""
    lines = (
        "aten::_scaled_dot_product_flash_attention_for_cpu gone (was 1 call(s) per call)",
        "aten::bmm new (2 call(s) per call)",
    )
    accept = "pytest test_attn.py::test_attention --device cpu --accel-update"
    verdict = StructureVerdict(Outcome.CHANGED, lines)
    assert structure_failure("test_attn.py::test_attention", "cpu-avx2-torch2.13.0_cpu", verdict, accept) == (
        "perf structure changed: test_attention (under cpu-avx2-torch2.13.0_cpu)\n"
        "  aten::_scaled_dot_product_flash_attention_for_cpu gone (was 1 call(s) per call)\n"
        "  aten::bmm new (2 call(s) per call)\n"
        f"  if intended, accept it: {accept}"
    )


def test_what_ran_is_one_line_when_the_operator_diff_already_names_the_change() -> None:
    """The flash -> math fallback under a timed regression: the operator diff names the operators that
    moved, in one line; the structural record then adds only what the diff cannot say (a graph break),
    and lists everything under -v."""
    from test_operators import table

    from pytest_accel.core.operator_table import explain, in_one_line
    from pytest_accel.plugin.fixture import _what_ran_changed

    diff = [
        "operators (host self time per call, 10 and 10 calls profiled): total 4.73 ms -> 8.28 ms (+3.55 ms)",
        "  aten::_scaled_dot_product_flash_attention_for_cpu: 4.67 ms (1 call) -> gone",
        "  aten::bmm: new 4.17 ms (2 calls)",
        "  aten::_softmax: new 1.69 ms (1 call)",
    ]
    assert in_one_line(diff) == (
        "operators (+3.55 ms per call): aten::…product_flash_attention_for_cpu: 4.67 ms (1 call) -> gone; 2 more (-v)"
    )
    # Where the line has room, the largest change keeps its operator's whole name.
    assert in_one_line(diff[:2]) == (
        "operators (+3.55 ms per call): aten::_scaled_dot_product_flash_attention_for_cpu: 4.67 ms (1 call) -> gone"
    )
    # The largest change is named even when it and the count of the others pass the width; a name too
    # long for the line keeps its namespace and its last words, where a family's kernels differ.
    longer = [
        "operators (host self time per call, 10 and 10 calls profiled): total 2.63 ms -> 8.15 ms (+5.52 ms)",
        "  aten::_scaled_dot_product_flash_attention_for_cpu: 2.6 ms -> 7.99 ms (+5.39 ms, calls 1 -> 3)",
        "  aten::empty: 30 us -> 160 us (+130 us, calls 3 -> 9)",
    ]
    assert in_one_line(longer) == (
        "operators (+5.52 ms per call): aten::…product_flash_attention_for_cpu: 2.6 ms -> 7.99 ms (+5.39 ms, "
        "calls 1 -> 3); 1 more (-v)"
    )
    nothing = ["operators (host self time per call, 10 and 10 calls profiled): total 6.1 ms -> 6.12 ms (+20 us)",
               f"  {NOTHING_MOVED}"]  # fmt: skip
    assert in_one_line(nothing) == "operators (+20 us per call): no operator moved enough to name (-v)"
    other_way = explain(table(("aten::bmm", 1, 11600.0)), table(("aten::bmm", 1, 9600.0)), measured=1.123)
    assert in_one_line(other_way) == "operators (-2 ms per call): the profile moved the other way (-v)"
    counts = ("graph breaks 0 -> 1", "aten::mul calls per call 4 -> 8", "... and 17 more change(s)")
    assert _what_ran_changed(counts, diff) == ["what ran changed too: graph breaks 0 -> 1"]
    assert _what_ran_changed(counts[1:], diff) == []  # the diff said it all
    assert _what_ran_changed(counts, diff, verbose=True) == ["what ran changed too:", *(f"  {c}" for c in counts)]
    absent = ("operators: no diff (the baseline entry has no operator table: record it again with --accel-update)",)
    assert _what_ran_changed(counts, absent) == [
        "what ran changed: graph breaks 0 -> 1; aten::mul calls per call 4 -> 8; ... and 17 more change(s)"
    ]


# A sitting's figures (docs/studies/ab-pr: a +10% slowdown beside a second suite, 38 pairs; an A/A test that
# stayed undecided), a test only the head has, and a peak-memory regression planted on the first.
def _sides(seconds: float, pairs: int, peak: int | None = None) -> list[Measurement]:
    return [Measurement("sequences", 2.0, (seconds,) * 10, peak_memory_bytes=peak)] * pairs


AB_FILE = "perf_tests/test_attention.py::test_attention_forward"
AB_TRACKS = [
    Track((f"{AB_FILE}[sdpa-flash-llama70b-decode-kv384]", "throughput"),
          _sides(0.00312, 38, 96 * 2**20), _sides(0.00340, 38, 192 * 2**20), [0.0] * 38,
          PairedVerdict(Outcome.REGRESSED, 38, 1.0897, 1.0192, 1.1651, "slower, beyond the 5% tolerance")),
    Track((f"{AB_FILE}[sdpa-flash-sd3-256px-b2]", "throughput"), _sides(0.0221, 4), _sides(0.0218, 4), [0.0] * 4,
          PairedVerdict(Outcome.UNCHANGED, 4, 0.9848, 0.9673, 1.0027, "within ±5%")),
    Track((f"{AB_FILE}[sdpa-math-llama70b-prefill-512]", "throughput"), _sides(0.362, 40), _sides(0.379, 40),
          [0.0] * 40, PairedVerdict(Outcome.INCONCLUSIVE, 40, 1.0458, 0.8687, 1.2591,
                                    "straddles the ±5% band; about 95 pairs at this noise would decide")),
    Track((f"{AB_FILE}[sdpa-flash-sd3-512px-b2]", "throughput"), [], _sides(0.0905, 1), [],
          PairedVerdict(Outcome.NEW, 0, reason="only the head has this test")),
]  # fmt: skip


def test_the_ab_table_says_each_figure_once_and_its_notes_say_what_the_table_cannot() -> None:
    sitting = SimpleNamespace(
        sides={"base": SimpleNamespace(label="main 612bd91"), "head": SimpleNamespace(label="612bd91 + changes")},
        tracks={t.key: t for t in AB_TRACKS},
        settings=SimpleNamespace(count=False),
    )
    name = "| perf_tests/test_attention.py::test_attention_forward"
    assert markdown_table(*table(sitting)).splitlines() == [
        "| test | base: main 612bd91 | head: 612bd91 + changes | head vs base | pairs | verdict | peak memory |",
        "|---|---|---|---|---|---|---|",
        f"{name}[sdpa-flash-llama70b-decode-kv384] | 641 sequences/s | 588 sequences/s | +9.0% [+1.9% .. +16.5%] | 38 "
        "| regressed | +100.0% (regressed) |",
        f"{name}[sdpa-flash-sd3-256px-b2] | 90.5 sequences/s | 91.7 sequences/s | -1.5% [-3.3% .. +0.3%] | 4 "
        "| unchanged | - |",
        f"{name}[sdpa-math-llama70b-prefill-512] | 5.52 sequences/s | 5.28 sequences/s | +4.6% [-13.1% .. +25.9%] "
        "| 40 | inconclusive | - |",
        f"{name}[sdpa-flash-sd3-512px-b2] | - | 22.1 sequences/s | - | 0 | new | - |",
    ]
    notes = Sitting.notes(sitting)
    assert notes == [
        "PEAK MEMORY REGRESSED: test_attention_forward[sdpa-flash-llama70b-decode-kv384]: peak memory 96.0 MiB -> "
        "192.0 MiB, beyond the 10% tolerance",
        "NOT COMPARED: test_attention_forward[sdpa-flash-sd3-512px-b2]: only the head has this test",
        "INCONCLUSIVE: test_attention_forward[sdpa-math-llama70b-prefill-512]: straddles the ±5% band; about 95 pairs "
        "at this noise would decide",
    ]


def _bisect_answer(findings: dict[str, list[Finding]], whole: dict[str, Reading]) -> tuple[Bisect, Bisection]:
    """A bisect of six commits (c0 good, c6 bad) whose sittings have run: the page is all that is left."""
    commits = [f"{i}" * 40 for i in range(7)]
    subjects = {sha: f"change {i}" if i else "good" for i, sha in enumerate(commits)}
    bisect = Bisect(BisectSettings(("perf_tests/test_attention.py",), "good", "HEAD"), Path("."), commits, subjects)
    bisect.tests, bisect.whole = tuple(sorted(whole)), whole
    bisect.started -= 25 * 60  # the page says the minutes it cost
    bisect.log.sittings = [{"pairs": 11}] * 8
    bisection = Bisection(commits, [t for t, r in whole.items() if r.outcome is Outcome.REGRESSED])
    bisection.searches, bisection.findings = {}, findings
    return bisect, bisection


def test_the_bisect_page_names_the_culprit_its_own_change_and_what_did_not_move() -> None:
    """Figures of a real trial (docs/studies/bisect, quiet 1): a +15% host spin after each SDPA call."""
    flash, math_ = (
        "t.py::test_attention_forward[sdpa-flash-sd3-256px-b2]",
        "t.py::test_attention_forward[sdpa-math-llama70b-decode-kv384]",
    )
    whole = {
        flash: Reading(Outcome.REGRESSED, 1.154, 1.117, 1.192, 3),
        math_: Reading(Outcome.REGRESSED, 1.223, 1.075, 1.391, 7),
        "t.py::test_other": Reading(Outcome.UNCHANGED, 1.01, 0.99, 1.03, 4),
    }
    findings = {flash: [Finding(0, 3, (4,), "good")], math_: [Finding(0, 3, (4,), "good")]}
    bisect, bisection = _bisect_answer(findings, whole)
    bisect.evidence = {
        (flash, 4): (Reading(Outcome.REGRESSED, 1.154, 1.028, 1.295, 3),
                     ("operators: total 31.5 ms -> 31.1 ms", f"  {NOTHING_MOVED}")),
        (math_, 4): (Reading(Outcome.REGRESSED, 1.194, 1.102, 1.295, 7),
                     ("operators: total 5.78 ms -> 5.48 ms (-296 us)", "  aten::bmm: 2.51 ms -> 2.11 ms (-396 us)")),
    }  # fmt: skip
    assert report(bisect, bisection, 1) == (
        'pytest-accel bisect: 6 commit(s) after good 000000000 "good", up to bad 666666666 "change 6"\n'
        "\n"
        'culprit: 444444444 "change 4", for 2 test(s):\n'
        "| test | good -> bad | the culprit alone (its parent -> it) | of the change |\n"
        "|---|---|---|---|\n"
        "| test_attention_forward[sdpa-flash-sd3-256px-b2] | +15.4% [+11.7% .. +19.2%] | +15.4% [+2.8% .. +29.5%]"
        " | the whole change |\n"
        "| test_attention_forward[sdpa-math-llama70b-decode-kv384] | +22.3% [+7.5% .. +39.1%] | +19.4% [+10.2% .. "
        "+29.5%] | the whole change |\n"
        "operators of test_attention_forward[sdpa-math-llama70b-decode-kv384] (parent -> culprit):\n"
        "    operators: total 5.78 ms -> 5.48 ms (-296 us)\n"
        "      aten::bmm: 2.51 ms -> 2.11 ms (-396 us)\n"
        f"operators: {NOTHING_MOVED}, in 1 test(s): test_attention_forward[sdpa-flash-sd3-256px-b2]\n"
        "\n"
        "not searched: 1 other test(s) did not get slower over the range (see bisect.json)\n"
        "cost: 8 sitting(s), 88 pair(s), 25.0 minutes; exit 1\n"
    )  # fmt: skip


def test_the_bisect_page_of_two_steps_a_narrowed_search_and_a_skipped_commit() -> None:
    test = "t.py::test_k"
    whole = {test: Reading(Outcome.REGRESSED, 1.166, 1.12, 1.21, 4)}
    findings = {test: [Finding(0, 1, (2,), "bad"), Finding(2, 3, (4, 5), "good")]}
    bisect, bisection = _bisect_answer(findings, whole)
    bisection.unmeasurable = {4: "head (...): pytest could not collect (exit 2)"}
    bisect.evidence = {(test, 2): (Reading(Outcome.REGRESSED, 1.081, 1.04, 1.12, 5), ())}
    assert report(bisect, bisection, 1) == (
        'pytest-accel bisect: 6 commit(s) after good 000000000 "good", up to bad 666666666 "change 6"\n'
        "\n"
        'culprit: 222222222 "change 2", for 1 test(s):\n'
        "| test | good -> bad | the culprit alone (its parent -> it) | of the change |\n"
        "|---|---|---|---|\n"
        "| test_k | +16.6% [+12.0% .. +21.0%] | +8.1% [+4.0% .. +12.0%] | part of it: a later step follows |\n"
        "\n"
        "narrowed to 2 commits, 444444444 .. 555555555 (some could not be judged), for 1 test(s):\n"
        "| test | good -> bad | the culprit alone (its parent -> it) | of the change |\n"
        "|---|---|---|---|\n"
        "| test_k | +16.6% [+12.0% .. +21.0%] | - | the rest of the change |\n"
        "\n"
        'skipped 444444444 "change 4": could not be measured (head (...): pytest could not collect (exit 2))\n'
        "cost: 8 sitting(s), 88 pair(s), 25.0 minutes; exit 1\n"
    )  # fmt: skip


def test_the_bisect_page_of_a_range_that_did_not_get_slower() -> None:
    whole = {"t.py::test_k": Reading(Outcome.UNCHANGED, 0.99, 0.96, 1.02, 6)}
    bisect, _ = _bisect_answer({}, whole)
    assert report(bisect, None, 0).splitlines()[1:] == [
        "no slowdown over the range: 1 test(s), none slower beyond 5% (no culprit)",
        "cost: 8 sitting(s), 88 pair(s), 25.0 minutes; exit 0",
    ]


def test_the_summary_groups_unjudged_figures_by_the_rule_that_abstained_not_by_its_words() -> None:
    """Two rules that happen to advise alike are two groups; one rule's figures with one remedy are one group, and
    with another remedy (a setting to restore, a commit to sit beside) a group of their own."""
    quieter = "a quieter machine"

    def noisy(why: str, remedy: str, cause: Cause) -> Verdict:
        return Verdict(Outcome.NOISY, "time", "...", abstention=Abstention(why, remedy, cause=cause))

    records = [
        _named("test_a", noisy("w1", quieter, Cause.STATE)),
        _named("test_b", noisy("w2", quieter, Cause.UNSTEADY)),
        _named("test_c", noisy("w3", quieter, Cause.STATE)),
        _named("test_d", noisy("w4", "cool it", Cause.STATE)),
    ]  # fmt: skip
    lines = verdict_summary(records, f"{KEY}/smoke", updating=False)
    leads = [line for line in lines if line.startswith("accel:   to judge these")]
    assert leads == [f"accel:   to judge these, {q}:" for q in (quieter, quieter, "cool it")]
    first_group = lines[lines.index(leads[0]) + 1 : lines.index(leads[0]) + 3]
    assert [line.split()[1] for line in first_group] == ["test_a", "test_c"]


def test_the_ab_count_table_gives_each_sides_instructions_and_the_change() -> None:
    grew = CountVerdict(Outcome.REGRESSED, "grew", (435_639_731.0, 450_231_854.0))
    same = CountVerdict(Outcome.UNCHANGED, "same", (8_979_974.0, 8_979_980.0))
    tracks = [
        Track((f"{AB_FILE}[sdpa-math-sd3-128px-b2]", "throughput"), verdict=PairedVerdict(Outcome.REGRESSED, 1),
              count=grew),
        Track((f"{AB_FILE}[sdpa-flash-llama70b-decode-kv384]", "throughput"),
              verdict=PairedVerdict(Outcome.UNCHANGED, 1), count=same),
    ]  # fmt: skip
    sitting = SimpleNamespace(
        sides={"base": SimpleNamespace(label="main 612bd91"), "head": SimpleNamespace(label="612bd91 + changes")},
        tracks={t.key: t for t in tracks},
        settings=SimpleNamespace(count=True),
    )
    name = "| perf_tests/test_attention.py::test_attention_forward"
    assert markdown_table(*table(sitting)).splitlines() == [
        "| test | base: main 612bd91 | head: 612bd91 + changes | head vs base | verdict (work counted) |",
        "|---|---|---|---|---|",
        f"{name}[sdpa-math-sd3-128px-b2] | 435,639,731 instr/call | 450,231,854 instr/call | +3.3% | regressed |",
        f"{name}[sdpa-flash-llama70b-decode-kv384] | 8,979,974 instr/call | 8,979,980 instr/call | +0.0% | unchanged |",
    ]
