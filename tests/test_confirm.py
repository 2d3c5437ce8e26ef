"""The fresh-process confirmation reads its child's result file through the one strict codec.

The child is replaced by a function that writes what a child might leave behind (no pytest runs):
a verdict, no verdict, a corrupt file, no file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.engine.processes import ChildRun
from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.confirm import ChildSettings, FreshVerdict, accept_command
from pytest_accel.judgement.gate import (
    NO_LAUNCHERS,
    Gate,
    GateMode,
    Waited,
    reread,
    run_gate,
    with_fresh_confirmation,
)
from pytest_accel.judgement.results import Recorded, results_document
from pytest_accel.judgement.verdict import VerdictPolicy, VerdictRecord
from pytest_accel.judgement.weighing import apart, clear_of_the_gap
from pytest_accel.sittings import fresh as confirm_module
from pytest_accel.sittings.fresh import confirm_in_fresh_process

NODE = "perf/test_k.py::test_k"
SETTINGS = ChildSettings(device="cpu", profile="smoke", baselines=Path("baselines"), ini=())


def result_text(verdict: VerdictRecord | None, test: str = NODE) -> str:
    measured = Measurement("calls", 1.0, (0.01, 0.011, 0.012), name="latency")
    document = results_document(
        [Recorded(test, "failed", measured, verdict)],
        device_kind="cpu", device_key="cpu-k-2c", provenance={}, profile="smoke", world_size=1,
    )  # fmt: skip
    return json.dumps(document)


def child_writing(text: str | None, returncode: int = 0) -> Callable[..., ChildRun]:
    """A stand-in for ``run_child`` that writes ``text`` where the command's ``--accel-json`` points."""

    def run(command: Sequence[str], *args: Any, **kwargs: Any) -> ChildRun:
        if text is not None:
            Path(command[list(command).index("--accel-json") + 1]).write_text(text, encoding="utf-8")
        return ChildRun(returncode)

    return run


def confirm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str | None, returncode: int = 0) -> Any:
    monkeypatch.setattr(confirm_module, "run_child", child_writing(text, returncode))
    return confirm_in_fresh_process(NODE, "latency", tmp_path, SETTINGS, env={})


def test_the_childs_verdict_is_returned(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    regressed = VerdictRecord(Verdict(Outcome.REGRESSED, "time", "slower: +12.0%", ratio=1.12, low=1.05, high=1.2))
    fresh = confirm(monkeypatch, tmp_path, result_text(regressed), returncode=1)
    assert (fresh.outcome, fresh.detail) == (Outcome.REGRESSED, "slower: +12.0%")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (result_text(None), "measured no 'latency' for perf/test_k.py::test_k"),
        (result_text(None, test="perf/test_k.py::other"), "measured no 'latency' for perf/test_k.py::test_k"),
        ('{"schema": 1, "device": ', "wrote an unreadable result"),
        (json.dumps({"schema": 99, "device": {}, "results": []}), "written by a newer pytest-accel"),
        (
            result_text(VerdictRecord(Verdict(Outcome.REGRESSED, "time", "x"))).replace('"regressed"', '"worse"'),
            "unknown outcome 'worse'",
        ),
    ],
    ids=["no-verdict", "other-test", "truncated", "newer-schema", "bad-outcome"],
)
def test_an_unusable_child_result_is_no_verdict_with_its_cause(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, expected: str
) -> None:
    fresh = confirm(monkeypatch, tmp_path, text)
    assert fresh.outcome is None
    assert expected in fresh.detail


def test_a_child_in_another_environment_confirms_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A plugin object given to ``pytest.main`` reaches no child: its reading is of other code."""
    regressed = VerdictRecord(Verdict(Outcome.UNCHANGED, "time", "time +0.4%", ratio=1.004))
    document = json.loads(result_text(regressed))
    document["provenance"] = {"environment": "child0000000000a"}
    monkeypatch.setattr(confirm_module, "run_child", child_writing(json.dumps(document)))
    fresh = confirm_in_fresh_process(NODE, "latency", tmp_path, SETTINGS, env={}, environment="parent000000000a")
    assert fresh.outcome is None
    assert fresh.detail.startswith("the confirmation process ran in another environment (digest child0000000000a, "
                                   "this run's parent000000000a")  # fmt: skip
    same = confirm_in_fresh_process(NODE, "latency", tmp_path, SETTINGS, env={}, environment="child0000000000a")
    assert same.outcome is Outcome.UNCHANGED


def test_a_child_that_wrote_nothing_says_its_exit_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fresh = confirm(monkeypatch, tmp_path, None, returncode=4)
    assert fresh.outcome is None
    assert "wrote no results (exit 4)" in fresh.detail


@pytest.mark.parametrize(
    ("args", "paths", "expected"),
    [
        (
            ["perf_tests", "--device", "cpu"],
            ["perf_tests"],
            "pytest 'perf_tests/t.py::test[a b]' --device cpu --accel-x",
        ),
        (["-k", "flash", "perf_tests", "-q"], ["perf_tests"], "pytest 'perf_tests/t.py::test[a b]' -q --accel-x"),
        (["-kflash", "-m", "not slow", "--accel-update"], [], "pytest 'perf_tests/t.py::test[a b]' --accel-x"),
        (
            ["--accel-baselines", "bl", "bl"],
            ["bl"],
            "pytest 'perf_tests/t.py::test[a b]' --accel-baselines bl --accel-x",
        ),
    ],
)
def test_the_accept_command_keeps_the_users_options_and_names_the_test(
    args: list[str], paths: list[str], expected: str, tmp_path: Path
) -> None:
    """Selection (paths, -k, -m) and recording flags give way to the test's id; the rest is kept, quoted."""
    assert accept_command("perf_tests/t.py::test[a b]", args, paths, tmp_path, tmp_path, "--accel-x") == expected


def test_the_accept_command_names_the_test_from_where_pytest_was_started(tmp_path: Path) -> None:
    command = accept_command("perf_tests/t.py::test", [], [], tmp_path / "perf_tests", tmp_path, "--accel-update")
    assert command == "pytest t.py::test --accel-update"


# The fresh process's word, weighed (gate.with_fresh_confirmation). The figures are run 6's in
# docs/studies/quiet-wait: a planted +10% that the fresh process read smaller, or could not tell.
def _suspect(ratio: float, low: float, high: float, outcome: Outcome = Outcome.REGRESSED) -> Verdict:
    return Verdict(outcome, "time", f"time {ratio}", ratio=ratio, low=low, high=high)


def _child(ratio: float, low: float, high: float, outcome: Outcome = Outcome.UNCHANGED) -> FreshVerdict:
    side = "within" if outcome is Outcome.UNCHANGED else "beyond"
    said = f"time {ratio} [{low} .. {high}], {side} the 5% tolerance"
    verdict = Verdict(outcome, "time", said, ratio, low, high)
    return FreshVerdict(outcome, verdict.reason, verdict)


@pytest.mark.parametrize(
    ("suspect", "child", "outcome"),
    [
        # slower in the fresh process too, clear of no change; the two together +8.1%: it stands
        (_suspect(1.090, 1.034, 1.173), _child(1.072, 1.011, 1.136), Outcome.REGRESSED),
        # the fresh process reaches both no change and this process's +17.3%: it could not tell
        (_suspect(1.173, 1.010, 1.334), _child(1.093, 0.951, 1.255), Outcome.NOISY),
        # the two together +4.5%: within the tolerance
        (_suspect(1.0585, 1.010, 1.118), _child(1.031, 0.974, 1.092), Outcome.UNCHANGED),
        # the fresh process reads no change and rules out this process's +20%: a process-level bias
        (_suspect(1.20, 1.12, 1.29), _child(1.003, 0.95, 1.06), Outcome.UNCHANGED),
        # slower, but the fresh process is sure it is within the tolerance
        (_suspect(1.20, 1.12, 1.29), _child(1.02, 1.005, 1.04), Outcome.UNCHANGED),
        # the same rule for a speedup, mirrored
        (_suspect(0.90, 0.85, 0.95, Outcome.IMPROVED), _child(0.93, 0.88, 0.99), Outcome.IMPROVED),
        (_suspect(0.90, 0.85, 0.95, Outcome.IMPROVED), _child(0.99, 0.94, 1.04), Outcome.UNCHANGED),
        # a confirmation stands only at a level near this process's (weighing.apart): the studies'
        # closest confirmed pair, a planted +10% that read +17.7% here and +10.0% there
        (_suspect(1.177, 1.175, 1.300), _child(1.100, 1.047, 1.155, Outcome.REGRESSED), Outcome.REGRESSED),
        # a planted +10% that read +21.4% here and +78.6% there
        (_suspect(1.214, 1.128, 1.280), _child(1.786, 1.668, 1.914, Outcome.REGRESSED), Outcome.NOISY),
        # a fresh "unchanged" clear of no change agrees only when it is not that far off either
        (_suspect(1.20, 1.12, 1.29), _child(1.04, 1.01, 1.07), Outcome.NOISY),
    ],
    ids=[
        "agrees",
        "cannot-tell",
        "together-within",
        "rules-out",
        "sure-within",
        "faster-agrees",
        "faster-refuted",
        "near-confirms",
        "far-regressed",
        "far-agrees",
    ],
)
def test_a_fresh_process_is_weighed_with_this_one(suspect: Verdict, child: FreshVerdict, outcome: Outcome) -> None:
    assert with_fresh_confirmation(suspect, child, 0.05).outcome is outcome


def test_a_fresh_process_reading_it_too_says_so_with_the_two_together() -> None:
    weighed = with_fresh_confirmation(_suspect(1.090, 1.034, 1.173), _child(1.072, 1.011, 1.136), 0.05)
    assert weighed.reason == (
        "time 1.09; a fresh process read it too: time 1.072 [1.011 .. 1.136], within the 5% tolerance; "
        "the two processes together +8.1% [+3.9% .. +12.4%]"
    )
    assert (weighed.ratio, weighed.low, weighed.high) == (1.090, 1.034, 1.173)  # this process's figures stand


def test_a_fresh_process_that_could_not_tell_abstains_and_says_how_to_judge_it() -> None:
    weighed = with_fresh_confirmation(_suspect(1.173, 1.010, 1.334), _child(1.093, 0.951, 1.255), 0.05)
    assert weighed.reason == (
        "this process said time 1.173; a fresh process could not tell: time 1.093 [0.951 .. 1.255], within the 5% "
        "tolerance; the two processes together +13.2% [+2.2% .. +25.4%]; not judged"
    )
    assert weighed.abstention is not None and weighed.abstention.why == "a fresh process could not tell"


# Unchanged code, the math decode kernel an hour after its recordings (docs/studies/first-in-process):
# +13.4% in the run, +58.0% in the fresh process that was to confirm it.
def test_a_fresh_process_too_far_from_this_one_confirms_nothing_and_says_why() -> None:
    weighed = with_fresh_confirmation(
        _suspect(1.134, 1.059, 1.200), _child(1.580, 1.486, 1.679, Outcome.REGRESSED), 0.05
    )
    assert weighed.outcome is Outcome.NOISY
    assert weighed.reason == (
        "this process said time 1.134; a fresh process read it too far from this one: time 1.58 [1.486 .. 1.679], "
        "beyond the 5% tolerance; the figure's level moves between processes by more than its recordings "
        "showed; not judged"
    )
    assert weighed.abstention is not None
    assert weighed.abstention.why == "a fresh process read it too far from this one"
    assert weighed.abstention.remedy.startswith("record it at other times (--accel-update keeps up to 10")
    assert (weighed.ratio, weighed.detectable) == (1.134, None)  # this process's figure, for the report


_HALF = st.floats(0.001, 0.5)


@given(st.floats(0.5, 2.0), _HALF, st.floats(0.5, 2.0), _HALF, st.floats(0.5, 2.0))
def test_apart_is_symmetric_scale_free_and_never_true_of_one_reading(
    first: float, first_half: float, second: float, second_half: float, scale: float
) -> None:
    """Whether two readings are apart does not depend on their order or on the baseline they share."""

    def reading(ratio: float, half: float) -> Verdict:
        return _suspect(ratio * scale, ratio * scale / (1 + half), ratio * scale * (1 + half))

    one, other = reading(first, first_half), reading(second, second_half)
    assume(abs(abs(math.log(first / second)) - math.hypot(math.log1p(first_half), math.log1p(second_half))) > 1e-9)
    assert apart(one, other) == apart(other, one)
    assert apart(one, other) == apart(
        _suspect(first, first / (1 + first_half), first * (1 + first_half)),
        _suspect(second, second / (1 + second_half), second * (1 + second_half)),
    )
    assert not apart(one, one)


@pytest.mark.parametrize(
    ("before", "tests"), [("perf/test_k.py::test_j", ["perf/test_k.py::test_j", NODE]), (None, [NODE]), (NODE, [NODE])]
)
def test_the_child_measures_the_test_before_the_suspect_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, before: str | None, tests: list[str]
) -> None:
    """Where the recordings measured it: after another test (docs/studies/first-in-process)."""
    commands: list[list[str]] = []
    writing = child_writing(result_text(None))

    def run(command: Sequence[str], *args: Any, **kwargs: Any) -> ChildRun:
        commands.append(list(command))
        return writing(command, *args, **kwargs)

    monkeypatch.setattr(confirm_module, "run_child", run)
    confirm_in_fresh_process(NODE, "latency", tmp_path, SETTINGS, env={}, before=before)
    assert commands[0][3 : 3 + len(tests) + 1] == [*tests, "-q"]


def test_the_gate_names_the_test_it_judged_before_the_suspect(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str | None] = []

    def answering(
        test: str, metric: str, rootdir: Path, settings: ChildSettings, before: str | None, environment: str | None
    ) -> FreshVerdict:
        asked.append(before)
        return FreshVerdict(Outcome.REGRESSED, "time +50%")

    launchers = replace(NO_LAUNCHERS, fresh=answering)
    base = Measurement("x", 1.0, tuple(0.01 * (1 + 0.01 * (i % 3)) for i in range(30)), probe_samples=(1e-3,) * 30)
    slow = Measurement("x", 1.0, tuple(s * 1.5 for s in base.samples), probe_samples=(1e-3,) * 30)
    entries = {
        (test, "throughput"): BaselineEntry(test, "throughput", "x", 1.0, base.samples, base.probe_samples)
        for test in ("t::a", "t::b")
    }
    mode = GateMode(confirmations=0, fresh_process=SETTINGS)
    gate = Gate(lambda: entries, {}, mode, Path("."), gate_memory=False, launchers=launchers)
    for test in ("t::a", "t::b"):
        assert gate.judge(test, slow, VerdictPolicy(), lambda: slow).outcome is Outcome.REGRESSED
    assert asked == [None, "t::a"]


def test_the_child_is_told_the_budget_left_and_its_wait_counts_against_it(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[ChildSettings] = []

    def answering(
        test: str, metric: str, rootdir: Path, settings: ChildSettings, before: str | None, environment: str | None
    ) -> FreshVerdict:
        asked.append(settings)
        return FreshVerdict(Outcome.REGRESSED, "time +12%", waited=30.0)

    launchers = replace(NO_LAUNCHERS, fresh=answering)
    base = Measurement("x", 1.0, tuple(0.01 * (1 + 0.01 * (i % 3)) for i in range(30)), probe_samples=(1e-3,) * 30)
    slow = Measurement("x", 1.0, tuple(s * 1.5 for s in base.samples), probe_samples=(1e-3,) * 30)
    entries = {("t::a", "throughput"): BaselineEntry("t::a", "throughput", "x", 1.0, base.samples, base.probe_samples)}
    settings = ChildSettings("cpu", "smoke", Path("."), (("accel_quiet_wait_seconds", "9"),), 1)
    mode = GateMode(confirmations=0, fresh_process=settings, quiet_wait_seconds=100)
    quiet = lambda *a: (True, 0.0)  # noqa: E731
    gate = Gate(lambda: entries, {}, mode, Path("."), gate_memory=False, quiet=quiet, launchers=launchers)
    gate.waits.append(Waited("t::earlier", 40.0, Outcome.UNCHANGED))
    assert gate.judge("t::a", slow, VerdictPolicy(), lambda: slow).outcome is Outcome.REGRESSED
    assert asked[0].ini == (("accel_quiet_wait_seconds", "60"),)  # 100 s, less the 40 s waited, replaces 9
    assert gate.waits[-1] == Waited("t::a", 30.0, Outcome.REGRESSED)


def test_a_childs_wait_travels_in_its_result_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    regressed = VerdictRecord(Verdict(Outcome.REGRESSED, "time", "slower: +12.0%", ratio=1.12, low=1.05, high=1.2))
    text = json.dumps({**json.loads(result_text(regressed)), "quiet_waited_seconds": 12.5})
    assert confirm(monkeypatch, tmp_path, text).waited == 12.5
    assert confirm(monkeypatch, tmp_path, result_text(regressed)).waited == 0.0


def test_a_child_takes_one_reading_and_never_re_measures_a_decided_suspect() -> None:
    base = Measurement("x", 1.0, tuple(0.01 * (1 + 0.01 * (i % 3)) for i in range(30)), probe_samples=(1e-3,) * 30)
    slow = Measurement("x", 1.0, tuple(s * 1.5 for s in base.samples), probe_samples=(1e-3,) * 30)
    entry = BaselineEntry("t::a", "throughput", "x", 1.0, base.samples, base.probe_samples)

    def never() -> Measurement:
        raise AssertionError("a confirmation child re-measured a decided suspect")

    result = run_gate(slow, entry, VerdictPolicy(), {}, never, confirmations=2, reconfirm=False)
    assert result.outcome is Outcome.REGRESSED and len(result.measurements) == 1


@pytest.mark.parametrize(
    ("again", "outcome"),
    [
        (_child(1.135, 0.988, 1.305).verdict, Outcome.NOISY),  # run 8's flash decode: reaches +0% and +17.8%
        (_child(1.04, 1.01, 1.07).verdict, Outcome.REGRESSED),  # slower clear of no change, +10.4% together
        (_child(1.00, 0.97, 1.03).verdict, Outcome.UNCHANGED),  # no change, sure of it: refutes
        (Verdict(Outcome.REGRESSED, "time", "x", 1.2, 1.1, 1.3), Outcome.REGRESSED),  # said the same: as read
    ],
    ids=["cannot-tell", "agrees", "refutes", "same"],
)
def test_an_in_process_re_measurement_is_weighed_as_the_fresh_process_is(
    again: Verdict | None, outcome: Outcome
) -> None:
    assert again is not None
    first = _suspect(1.178, 1.05, 1.32)
    assert reread(first, again, 0.05).outcome is outcome


def test_a_re_measurement_that_could_not_tell_leaves_the_suspect_noisy_not_unchanged() -> None:
    from pytest_accel.judgement.verdict import combine

    again = reread(_suspect(1.178, 1.05, 1.32), _child(1.135, 0.988, 1.305).verdict, 0.05)  # type: ignore[arg-type]
    assert again.reason == (
        "time 1.135 [0.988 .. 1.305], within the 5% tolerance; with the first, +15.6% [+5.7% .. +26.5%]: "
        "it could not tell"
    )
    combined = combine(_suspect(1.178, 1.05, 1.32), [again])
    assert combined.outcome is Outcome.NOISY
    assert combined.abstention is not None and combined.abstention.why == "a re-measurement could not tell"


# A planted threefold slowdown (tests/test_gate_plugin.py), quiet: +199% in the run, its fresh process at another level.
@pytest.mark.parametrize(
    ("child", "outcome"), [((2.10, 2.00, 2.20), Outcome.REGRESSED), ((1.30, 1.22, 1.38), Outcome.NOISY)]
)
def test_two_levels_of_one_slowdown_confirm_it_when_it_clears_the_tolerance_with_their_gap_taken_off(
    child: tuple[float, float, float], outcome: Outcome
) -> None:
    """At 3.0x and 2.1x the gap (a factor 1.42) leaves 2.0 / 1.42 = 1.4x: regressed. At 3.0x and 1.3x it leaves
    1.22 / 2.3 = 0.53x, past no change: not judged, as the levels say nothing of the level."""
    weighed = with_fresh_confirmation(_suspect(2.99, 2.80, 3.20), _child(*child, Outcome.REGRESSED), 0.05)
    assert weighed.outcome is outcome
    if outcome is Outcome.REGRESSED:
        assert "confirmed in a fresh process at another level, and beyond the tolerance with the gap" in weighed.reason
        assert (weighed.ratio, weighed.low) == (2.99, 2.80)


@given(st.floats(1.2, 4.0), st.floats(1.2, 4.0), st.floats(0.01, 0.2))
def test_clear_of_the_gap_never_confirms_readings_whose_gap_reaches_no_change(a: float, b: float, half: float) -> None:
    first = _suspect(a, a * math.exp(-half), a * math.exp(half))
    second = _child(b, b * math.exp(-half), b * math.exp(half), Outcome.REGRESSED)
    assert second.verdict is not None
    gap = abs(math.log(a / b))
    # The nearer low end, moved towards no change by the gap: confirmed exactly when it clears the tolerance.
    assert clear_of_the_gap(first, second.verdict, 0.05) is (min(a, b) * math.exp(-half - gap) > 1.05)
