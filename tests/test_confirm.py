"""The fresh-process confirmation reads its child's result file through the one strict codec.

The child is replaced by a function that writes what a child might leave behind (no pytest runs):
a verdict, no verdict, a corrupt file, no file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.engine.processes import ChildRun
from pytest_accel.judgement import confirm as confirm_module
from pytest_accel.judgement.confirm import ChildSettings, accept_command, confirm_in_fresh_process
from pytest_accel.judgement.results import Recorded, results_document
from pytest_accel.judgement.verdict import VerdictRecord

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
