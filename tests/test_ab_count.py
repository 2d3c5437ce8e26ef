"""``ab --count``: each side's counting run read into one verdict per test (commands/abcount.py), pure, the runs'
result files built here as the plugin writes them; then whole sittings under real valgrind (long)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_ab import KERNEL, SELECTION, ab, assert_nothing_left, own_tmpdir, repo  # noqa: F401 (fixtures)

from pytest_accel.commands.abcount import counted_tests, instructions
from pytest_accel.commands.absides import ProcessRun
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.judgement.results import ResultFile
from pytest_accel.judgement.rules.count import CountVerdict
from pytest_accel.judgement.verdict import VerdictRecord

A, B = "t.py::test_a", "t.py::test_b"
NOT_TIMED = Verdict(Outcome.NEW, "time", "not timed")


def run(counts: dict[str, CountVerdict | None], failed: tuple[str, ...] = (), log: str = "side.log") -> ProcessRun:
    """A side's run: each test measured (untimed) with its count verdict, ``failed`` as pytest reported them."""
    keys = {(test, "throughput"): Measurement("calls", 1.0, (), name="throughput") for test in counts}
    verdicts = {(test, "throughput"): VerdictRecord(NOT_TIMED, count=count) for test, count in counts.items()}
    results = ResultFile(Path("r.json"), "cpu-x", "smoke", "", {}, keys, verdicts)
    return ProcessRun(1 if failed else 0, results, frozenset(failed), Path(log), 1.0)


def count(outcome: Outcome, then: float = 1e6, now: float = 1e6, moved: tuple[str, ...] = ()) -> CountVerdict:
    return CountVerdict(outcome, f"instructions per call {then:,.0f} -> {now:,.0f}", (then, now), moved=moved)


RECORDED = CountVerdict(Outcome.NEW, "recorded")  # the base's run: --accel-update, nothing to judge against


def test_each_test_takes_the_count_rules_verdict_with_the_ratio_of_its_instructions() -> None:
    grown = count(Outcome.REGRESSED, 1e6, 1.03e6, ("add: 0 -> 30,000 per call (new)",))
    tests = counted_tests(run({A: RECORDED, B: RECORDED}), run({A: grown, B: count(Outcome.UNCHANGED)}, failed=(A,)))
    a, b = tests[(A, "throughput")], tests[(B, "throughput")]
    assert a.verdict.outcome is Outcome.REGRESSED and a.verdict.ratio == pytest.approx(1.03) and a.count is grown
    assert a.failed_on == "" and a.verdict.low == a.verdict.high == a.verdict.ratio  # exact: no interval
    assert b.verdict.outcome is Outcome.UNCHANGED and b.verdict.pairs == 1
    assert instructions(a.count) == {"base": "1,000,000 instr/call", "head": "1,030,000 instr/call", "change": "+3.0%"}


def test_a_test_that_failed_otherwise_is_an_error_of_its_side_never_a_pass() -> None:
    tests = counted_tests(run({A: RECORDED}), run({A: count(Outcome.UNCHANGED)}, failed=(A,), log="head.log"))
    assert tests[(A, "throughput")].verdict.outcome is Outcome.ERROR
    assert tests[(A, "throughput")].failed_on == "head" and "head.log" in tests[(A, "throughput")].verdict.reason
    base_failed = counted_tests(run({A: RECORDED}, failed=(A,)), run({A: count(Outcome.UNCHANGED)}))
    assert base_failed[(A, "throughput")].failed_on == "base"


def test_a_count_missing_on_either_side_is_not_judged_with_its_reason() -> None:
    base_missing = CountVerdict(Outcome.ERROR, "not counted: valgrind crashed")
    tests = counted_tests(run({A: base_missing}), run({A: CountVerdict(Outcome.NEW, "new")}))
    assert tests[(A, "throughput")].verdict.outcome is Outcome.ERROR
    assert tests[(A, "throughput")].verdict.reason == "base: not counted: valgrind crashed"
    head_missing = CountVerdict(Outcome.ERROR, "not counted: the counting process did not count it")
    tests = counted_tests(run({A: RECORDED}), run({A: head_missing}))
    assert tests[(A, "throughput")].verdict.reason == "head: not counted: the counting process did not count it"
    assert instructions(head_missing) == {"base": "-", "head": "-", "change": "-"}


def test_a_test_only_one_side_has_is_new_or_gone() -> None:
    tests = counted_tests(run({A: RECORDED}), run({B: CountVerdict(Outcome.NEW, "new")}))
    assert tests[(A, "throughput")].verdict.outcome is Outcome.GONE
    assert tests[(B, "throughput")].verdict.outcome is Outcome.NEW


needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")


@pytest.mark.long
@needs_valgrind
def test_count_of_the_same_code_on_both_sides_is_unchanged(repo: Path) -> None:  # noqa: F811 (the fixture)
    same = ab(repo, "--count", "--base", "good", *SELECTION, timeout=600)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "| unchanged |" in same.stdout and "instr/call" in same.stdout
    assert "after one counting run per side" in same.stdout


@pytest.mark.long  # two counting runs under valgrind; CI's slow set counts for real in tests/test_counting.py
@needs_valgrind
def test_count_decides_by_the_work_counted_in_one_run_per_side(repo: Path) -> None:  # noqa: F811 (the fixture)
    (repo / "kernel.py").write_text(KERNEL.format(slow=3))  # three times the work: the same Python, counted
    grown = ab(repo, "--count", "--base", "good", *SELECTION, timeout=600)
    assert grown.returncode == 1, grown.stdout + grown.stderr
    assert "| regressed |" in grown.stdout and "functions that moved most (base -> head)" in grown.stdout
    assert "builtin_sum" in grown.stdout  # the function whose count grew, by name
    comparison = json.loads((repo / ".pytest-accel-ab" / "comparison.json").read_text())
    assert comparison["by"] == "count" and comparison["pairs"] == 1
    [test] = comparison["tests"]
    before, after = test["count"]["instructions"]
    assert test["outcome"] == "regressed" and 2.5 < after / before < 3.5
    assert sorted(p.name for p in (repo / ".pytest-accel-ab" / "runs").iterdir()) == [
        "base-count.json", "base-count.log", "head-count.json", "head-count.log",
    ]  # fmt: skip
    assert_nothing_left(repo)
