"""Bad paths and failed writes: a named error, the table printed, nothing lost."""

from __future__ import annotations

import json
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
    import pytest_accel.storage.entries as entries

    def refuse(path: Path, data: bytes) -> None:
        raise PermissionError(13, "Permission denied", str(path.parent / f".{path.name}.x.tmp"))

    monkeypatch.setattr(entries, "write_atomically", refuse)
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
        test_small=TWO_TESTS
        + f"\n\ndef test_c():\n    with open({str(path)!r}, 'w') as f:\n        f.write('{{\"schema\": 1, \"entr')\n"
    )
    result = perf_pytester.runpytest("--device", "cpu", "--accel-update", *FAST_OPTIONS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["*accel measurements*", f"*could not write the baselines: {path}: invalid JSON at line 1*"]
    )
    assert path.read_text() == '{"schema": 1, "entr'  # left as found, for a person to look at


def test_benchmark_disable_writes_strict_json(perf_pytester: pytest.Pytester) -> None:
    """Bare NaN figures made --accel-json unreadable to strict JSON parsers."""
    perf_pytester.makepyfile(test_small=TWO_TESTS)
    result = perf_pytester.runpytest("--device", "cpu", "--benchmark-disable", "--accel-json", "r.json", *FAST_OPTIONS)
    result.assert_outcomes(passed=2)

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in --accel-json")

    document = json.loads((perf_pytester.path / "r.json").read_text(), parse_constant=refuse)
    assert document["results"][0]["figures"]["items_per_second"] is None


def test_a_call_far_longer_than_the_budget_is_warned_about(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_accel.plugin.fixture as fixture

    monkeypatch.setattr(fixture, "SLOW_MEASUREMENT_FLOOR_SECONDS", 0.5)
    monkeypatch.setattr(fixture, "SLOW_MEASUREMENT_FACTOR", 1)
    perf_pytester.makepyfile(
        test_slow="import time\n\ndef test_nap(throughput):\n"
        "    throughput(lambda: time.sleep(0.05), items=1, unit='naps')\n"
    )
    # advice, never an error: also where the project makes warnings errors (as this one does)
    result = perf_pytester.runpytest_inprocess("--device", "cpu", "-o", "filterwarnings=error", *FAST_OPTIONS)
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*measurement 'throughput' took * s for a budget of * s: one call takes * ms*"])


def test_more_cpu_threads_than_cores_is_warned_about(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_small=TWO_TESTS)
    result = perf_pytester.runpytest(
        "--device", "cpu", "--accel-cpu-threads", "999", "-k", "test_a", "-o", "filterwarnings=error", *FAST_OPTIONS
    )
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines([f"*--accel-cpu-threads 999 is more than this host's {os.cpu_count()} cores*"])
