"""Bad paths and failed writes (issue 15, cases 6-8): a named error, the table printed, nothing lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import FAST_OPTIONS

TWO_TESTS = """
def test_a(throughput):
    throughput(lambda: sum(range(2000)), items=1, unit="calls")

def test_b(throughput):
    throughput(lambda: sum(range(3000)), items=1, unit="calls")
"""


def _baseline_file(pytester: pytest.Pytester) -> Path:
    (path,) = (pytester.path / "baselines").glob("*/smoke.json")
    return path


def test_a_file_given_as_the_baseline_folder_is_a_usage_error(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_small=TWO_TESTS)
    (perf_pytester.path / "afile").write_text("")
    result = perf_pytester.runpytest("--device", "cpu", "--accel-baselines", "afile", *FAST_OPTIONS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot read the baselines: */afile/*/smoke.json: cannot read: Not a directory*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("kind", ["folder", "link loop"])
def test_a_baseline_path_that_is_not_a_file_is_a_usage_error(perf_pytester: pytest.Pytester, kind: str) -> None:
    perf_pytester.makepyfile(test_small=TWO_TESTS)
    perf_pytester.runpytest("--device", "cpu", "--accel-update", *FAST_OPTIONS).assert_outcomes(passed=2)
    path = _baseline_file(perf_pytester)
    path.unlink()
    if kind == "folder":
        path.mkdir()
    else:
        os.symlink(path.name, path)  # points at itself
    result = perf_pytester.runpytest("--device", "cpu", *FAST_OPTIONS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    reason = "Is a directory" if kind == "folder" else "Too many levels of symbolic links"
    result.stderr.fnmatch_lines([f"*{path}: cannot read: {reason}*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_an_unwritable_baseline_folder_keeps_the_table_and_names_the_file(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """chattr +i on the device folder, as root sees it: the temporary file cannot be created."""
    import pytest_accel.judgement.baselines as baselines

    def refuse(path: Path, data: bytes) -> None:
        raise PermissionError(13, "Permission denied", str(path.parent / f".{path.name}.x.tmp"))

    monkeypatch.setattr(baselines, "_write_atomically", refuse)
    perf_pytester.makepyfile(test_small=TWO_TESTS)
    result = perf_pytester.runpytest_inprocess(
        "--device", "cpu", "--accel-update", "--accel-json", "r.json", *FAST_OPTIONS
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "*accel measurements*",
            "*test_small.py::test_a*calls/s*",
            "*accel: could not write the baselines: *smoke.json.x.tmp: Permission denied",
            "*accel: no baseline was changed; the figures above are this run's",
        ]
    )
    assert (perf_pytester.path / "r.json").exists()  # the other outputs are still written
    assert "Traceback" not in result.stdout.str()


def test_a_baseline_corrupted_during_the_run_is_not_overwritten(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_small=TWO_TESTS)
    perf_pytester.runpytest("--device", "cpu", "--accel-update", *FAST_OPTIONS).assert_outcomes(passed=2)
    path = _baseline_file(perf_pytester)
    # test_b runs after test_a has loaded the baselines, and truncates the file meanwhile
    perf_pytester.makepyfile(
        test_small=TWO_TESTS + f"\n\ndef test_c():\n    open({str(path)!r}, 'w').write('{{\"schema\": 1, \"entr')\n"
    )
    result = perf_pytester.runpytest("--device", "cpu", "--accel-update", *FAST_OPTIONS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["*accel measurements*", f"*could not write the baselines: {path}: invalid JSON at line 1*"]
    )
    assert path.read_text() == '{"schema": 1, "entr'  # left as found, for a person to look at
