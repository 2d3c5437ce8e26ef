"""End-to-end runs of the regression gate: baselines recorded, then compared, through pytester."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import FAST_OPTIONS, SPREAD_UNJUDGED, STEADINESS_UNJUDGED

from pytest_accel.judgement.confirm import inherited_options

# A CPU-bound workload whose amount of work a file controls ("0.001" -> 10 matmuls, about 1 ms), so
# "0.003" is 3x the work. CPU-bound on purpose: the verdict normalises by a matmul probe, which a
# sleep would not track.
SLEEPER = """
import pathlib, pytest, torch

a = torch.randn(128, 128)

def test_sleep(throughput):
    reps = round(float(pathlib.Path("duration.txt").read_text()) * 10_000)
    def work():
        for _ in range(reps):
            out = a @ a
        return out
    throughput(work, items=1, unit="naps")

# A bystander, there to show that one test's slowdown fails that test only. Its own verdict is not what
# these tests check, so it is judged at 2x: on the shared CI VM an unchanged kernel read +7.7% against a
# recording made seconds before (confirmed in a fresh process), which at 5% would flip the outcome counts.
@pytest.mark.perf(tolerance=1.0)
def test_other(throughput):
    throughput(lambda: a @ a, items=1, unit="naps")
"""
# The machine state is not what these tests check: with one 0.05 s recording the copy probe alone
# varies by up to 19% between processes here, and a developer's box may run something beside them
# (tests/test_state.py checks the state and host-share rules). Nor is what ran: a slowdown planted as
# more matmuls is a structural change too, which the structural verdict would fail by itself
# (tests/test_structure.py): these tests judge the timing gate alone.
OPTIONS = (
    "--device", "cpu", "--accel-baselines", "bl", "--accel-structure=off",
    "-o", "accel_state_noise_floor=1.0", "-o", "accel_foreign_cpu_margin=1.0", *FAST_OPTIONS,
)  # fmt: skip


def baseline_file(pytester: pytest.Pytester) -> Path:
    (folder,) = (path for path in (pytester.path / "bl").iterdir() if path.name not in ("environment", "structure"))
    return folder / "smoke.json"


def sleep_result(pytester: pytest.Pytester) -> dict[str, Any]:
    """test_sleep's result in the run's ``--accel-json out.json``."""
    (sleep,) = [
        r for r in json.loads((pytester.path / "out.json").read_text())["results"] if r["test"].endswith("::test_sleep")
    ]
    return sleep


def assert_refuted_by_a_fresh_process(reason: str) -> None:
    """The child refuted the suspect: within the tolerance ("did not confirm it"), or reading the
    other way ("said the opposite": noisy)."""
    assert "a fresh process did not confirm it" in reason or "a fresh process said the opposite" in reason, reason


@pytest.fixture
def recorded(perf_pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with a baseline recorded twice for both tests at 1 ms.

    Twice, as the README asks: a single recording taken in a slow moment (±22% spread, 689 us for
    the 1 ms-nominal nap, seen in CI) is a biased baseline that the unchanged code in a fresh process
    then "confirms" as improved; two recordings that disagree widen the between-run error instead.
    """
    perf_pytester.makepyfile(test_sleepy=SLEEPER)
    (perf_pytester.path / "duration.txt").write_text("0.001")
    for said in ("one recording each", "recordings within * s"):
        # A recording that reads slower than the one before is not merged (a recording does not absorb a
        # slowdown): in CI, beside the other stream's callgrind and device-check jobs, the second one read the
        # matmuls +15.2% against the first, seconds apart. Recorded again, as the refusal says to.
        for _ in range(3):
            result = perf_pytester.runpytest(*OPTIONS, "--accel-update")
            if "accel: not recorded:" not in result.stdout.str():
                break
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(
            [
                "accel: wrote 2 baseline entries to *smoke.json",
                f"accel: {said}: record again an hour or more from now, so the spread they hold includes*",
            ]
        )
    return perf_pytester


def test_first_run_says_new_and_how_to_record(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_sleepy=SLEEPER)
    (perf_pytester.path / "duration.txt").write_text("0.001")
    result = perf_pytester.runpytest(*OPTIONS)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*test_sleep *naps/s*new", "accel: 2 new: no baseline for cpu-*/smoke: record one with*"]
    )


def test_require_baseline_fails_new_measurements(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_sleepy=SLEEPER)
    (perf_pytester.path / "duration.txt").write_text("0.001")
    result = perf_pytester.runpytest(*OPTIONS, "--accel-require-baseline")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*perf no baseline (and --accel-require-baseline is set)*"])


@pytest.mark.slow
def test_a_recording_of_a_slowdown_is_not_merged_and_the_next_run_still_fails(recorded: pytest.Pytester) -> None:
    """``--accel-update`` (from addopts, say) while a slowdown is in: the figure reads regressed against its own
    recordings, so it is not one more sample of their level; the old entry stays and the next run fails."""
    before = baseline_file(recorded).read_bytes()
    (recorded.path / "duration.txt").write_text("0.003")
    result = recorded.runpytest(*OPTIONS, *STEADINESS_UNJUDGED, "--accel-update")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "accel: not recorded: test_sleepy.py::test_sleep reads +*% against its own recordings: a recording does not "
        "absorb a slowdown (the old entry stays); to record a new level on purpose: pytest <same args> "
        "--accel-reset-history -k 'test_sleep'",
    ])  # fmt: skip
    kept = json.loads(before)["entries"]["test_sleepy.py::test_sleep"]
    assert json.loads(baseline_file(recorded).read_bytes())["entries"]["test_sleepy.py::test_sleep"] == kept
    again = recorded.runpytest(*OPTIONS, *STEADINESS_UNJUDGED)
    assert again.ret == pytest.ExitCode.TESTS_FAILED
    again.stdout.fnmatch_lines(["*perf regressed: test_sleep: time +*"])


def test_timing_disabled_by_pytest_benchmark_is_not_judged_and_fails_under_strict(
    perf_pytester: pytest.Pytester,
) -> None:
    perf_pytester.makepyfile(test_sleepy=SLEEPER)
    (perf_pytester.path / "duration.txt").write_text("0.001")
    result = perf_pytester.runpytest(*OPTIONS, "--benchmark-disable")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["accel: NOT JUDGED: 2 figures not measured: timing is disabled (--benchmark-disable*"])
    strict = perf_pytester.runpytest(*OPTIONS, "--benchmark-disable", "--accel-strict")
    strict.assert_outcomes(failed=2)
    strict.stdout.fnmatch_lines(
        ["*perf not judged: throughput: timing is disabled (--benchmark-disable), and --accel-strict is set*"]
    )


def test_perf_tests_skipped_by_pytest_benchmark_are_said_and_refused_under_strict(
    perf_pytester: pytest.Pytester,
) -> None:
    perf_pytester.makepyfile(test_sleepy=SLEEPER)
    (perf_pytester.path / "duration.txt").write_text("0.001")
    result = perf_pytester.runpytest(*OPTIONS, "--benchmark-skip")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["accel: NOT JUDGED: 2 perf tests skipped by --benchmark-skip*"])
    strict = perf_pytester.runpytest(*OPTIONS, "--benchmark-skip", "--accel-strict")
    assert strict.ret == pytest.ExitCode.USAGE_ERROR
    strict.stderr.fnmatch_lines(["*--benchmark-skip skips every perf test, and --accel-strict is set*"])


@pytest.mark.slow
def test_unchanged_code_passes_against_its_baseline(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(*OPTIONS)
    result.assert_outcomes(passed=2)
    # Unchanged, or "noisy" when this shared VM hiccups during the run: never a regression.
    result.stdout.re_match_lines([r".*test_sleep .*(unchanged|noisy).*"])
    result.stdout.no_fnmatch_line("*regressed*")


@pytest.mark.slow
def test_a_slowdown_fails_its_own_test_with_the_figures(recorded: pytest.Pytester) -> None:
    (recorded.path / "duration.txt").write_text("0.003")
    result = recorded.runpytest(*OPTIONS, *STEADINESS_UNJUDGED)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*perf regressed: test_sleep: time +*% [[]+*% .. +*%[]]",
            "*  beyond the 5% tolerance: * -> * naps/s on cpu-*",
            "*  believed: 2 re-measurements (+*%, +*%)*",
            "*  baseline: commit *, 20*, 2 recordings, torch *",
            "*  if intended, accept it: pytest test_sleepy.py::test_sleep * --accel-reset-history",
        ]
    )
    # A few lines, the headline first; the accept command last (it pastes as printed, however long).
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "perf regressed: test_sleep:" in line)
    end = next(i for i in range(start, len(lines)) if "accept it: pytest " in lines[i])
    block = [line.removeprefix("E   ").removeprefix("E  ") for line in lines[start : end + 1]]
    assert len(block) <= 8 and all(len(line) <= 120 for line in block[:-1]), "\n".join(block)
    result.stdout.fnmatch_lines(["FAILED test_sleepy.py::test_sleep*"])


@pytest.mark.slow
def test_a_speedup_passes_and_asks_for_a_refresh(recorded: pytest.Pytester) -> None:
    (recorded.path / "duration.txt").write_text("0.0003")
    result = recorded.runpytest(*OPTIONS, *STEADINESS_UNJUDGED, "--accel-json", "out.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_sleep *improved -*%", "accel: 1 improved: faster than the baseline*"])
    time = sleep_result(recorded)["verdict"]["time"]
    # Checked like a regression, before it asks for a refresh: once in the process, once in a fresh one (which,
    # beside a neighbour, may read the speedup at another level: clear_of_the_gap).
    assert "confirmed by 1 re-measurement(s)" in time["reason"] and "confirmed in a fresh process" in time["reason"]


@pytest.mark.long
def test_a_speedup_of_one_process_only_is_not_claimed(recorded: pytest.Pytester) -> None:
    # Fast in this process (a third of the work), as baselined in the confirmation child: a process's
    # bias, which a refresh would bake into the baseline. The suspected improvement is dropped.
    recorded.makepyfile(
        test_sleepy=SLEEPER.replace(
            'reps = round(float(pathlib.Path("duration.txt").read_text()) * 10_000)',
            'import os\n    reps = 10 if os.environ.get("PYTEST_ACCEL_CONFIRMING") else 3',
        )
    )
    result = recorded.runpytest(*OPTIONS, *STEADINESS_UNJUDGED, "--accel-json", "out.json")
    result.assert_outcomes(passed=2)
    sleep = sleep_result(recorded)
    assert sleep["verdict"]["outcome"] != "improved"
    assert_refuted_by_a_fresh_process(sleep["verdict"]["time"]["reason"])


@pytest.mark.slow
def test_marker_tolerance_lets_a_known_slowdown_pass(recorded: pytest.Pytester) -> None:
    recorded.makepyfile(
        test_sleepy=SLEEPER.replace(
            "def test_sleep(", "import pytest\n@pytest.mark.perf(tolerance=5.0)\ndef test_sleep("
        )
    )
    (recorded.path / "duration.txt").write_text("0.003")
    result = recorded.runpytest(*OPTIONS)
    result.assert_outcomes(passed=2)


@pytest.mark.slow
def test_update_with_k_rewrites_only_the_selected_entry(recorded: pytest.Pytester) -> None:
    path = baseline_file(recorded)
    before = json.loads(path.read_text())["entries"]
    (recorded.path / "duration.txt").write_text("0.003")
    result = recorded.runpytest(*OPTIONS, "--accel-reset-history", "-k", "test_sleep and not other")
    result.assert_outcomes(passed=1, deselected=1)
    after = json.loads(path.read_text())["entries"]
    assert after["test_sleepy.py::test_other"] == before["test_sleepy.py::test_other"]
    assert after["test_sleepy.py::test_sleep"] != before["test_sleepy.py::test_sleep"]
    recorded.runpytest(*OPTIONS).assert_outcomes(passed=2)  # the new figure is the new normal


@pytest.mark.slow
def test_a_broken_baseline_stops_the_run_and_stays_untouched(recorded: pytest.Pytester) -> None:
    path = baseline_file(recorded)
    broken = path.read_text().replace("]", "", 1)
    path.write_text(broken)
    for extra in ((), ("--accel-update",)):
        result = recorded.runpytest(*OPTIONS, *extra)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*cannot read the baselines: *smoke.json: invalid JSON at line * column *"])
        assert path.read_text() == broken


@pytest.mark.slow
def test_a_baseline_from_a_future_schema_is_refused(recorded: pytest.Pytester) -> None:
    path = baseline_file(recorded)
    path.write_text(path.read_text().replace('"schema": 1', '"schema": 7'))
    result = recorded.runpytest(*OPTIONS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*newer pytest-accel (schema 7*upgrade*"])


@pytest.mark.slow
def test_stale_entries_are_listed_and_pruned(recorded: pytest.Pytester) -> None:
    recorded.makepyfile(test_sleepy=SLEEPER.split("# A bystander")[0])
    listed = recorded.runpytest(*OPTIONS, "--accel-stale")
    assert listed.ret == 0
    listed.stdout.fnmatch_lines(["*accel: stale: test_sleepy.py::test_other*"])
    assert "test_sleepy.py::test_other" in baseline_file(recorded).read_text()
    pruned = recorded.runpytest(*OPTIONS, "--accel-prune")
    pruned.stdout.fnmatch_lines(["*accel: removed: test_sleepy.py::test_other*"])
    entries = json.loads(baseline_file(recorded).read_text())["entries"]
    assert list(entries) == ["test_sleepy.py::test_sleep"]


@pytest.mark.slow
def test_prune_refuses_a_keyword_selection(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(*OPTIONS, "--accel-prune", "-k", "sleep")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*drop -k/-m*"])


@pytest.mark.slow
def test_strict_fails_a_noisy_verdict(recorded: pytest.Pytester) -> None:
    # The baseline says the reference kernel ran 4x faster when it was recorded: whatever this machine
    # does now, the machine is "in another state" and test_sleep's verdict is noisy.
    path = baseline_file(recorded)
    document = json.loads(path.read_text())
    (entry,) = [metrics["throughput"] for test, metrics in document["entries"].items() if test.endswith("::test_sleep")]
    entry["probe_samples"] = [seconds / 4 for seconds in entry["probe_samples"]]
    path.write_text(json.dumps(document))
    relaxed = recorded.runpytest(*OPTIONS, *SPREAD_UNJUDGED)  # the planted drift decides, not a burst
    relaxed.stdout.fnmatch_lines(["*test_sleep *noisy*"])
    relaxed.assert_outcomes(passed=2)
    strict = recorded.runpytest(*OPTIONS, *SPREAD_UNJUDGED, "--accel-strict")
    strict.assert_outcomes(passed=1, failed=1)
    strict.stdout.fnmatch_lines(
        ["*perf noisy (and --accel-strict is set): test_sleep", "*not judged (reference kernel *x as long)*"]
    )


@pytest.mark.slow
def test_a_regression_is_confirmed_in_a_fresh_process(recorded: pytest.Pytester) -> None:
    (recorded.path / "duration.txt").write_text("0.003")
    result = recorded.runpytest(*OPTIONS, *STEADINESS_UNJUDGED)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*  believed: *; a fresh process (+*% [[]+*% .. +*%[]])"])


@pytest.mark.long
def test_a_slowdown_of_one_process_only_does_not_fail(recorded: pytest.Pytester) -> None:
    # Slow in this process, not slow in the confirmation child: a process-level effect, not a regression.
    # The child does 7 matmuls where the baseline did 10, so the host drifting by +9% between the
    # recording and the child (seen on the CI VM) still leaves it well short of a regression.
    recorded.makepyfile(
        test_sleepy=SLEEPER.replace(
            'reps = round(float(pathlib.Path("duration.txt").read_text()) * 10_000)',
            'import os\n    reps = 7 if os.environ.get("PYTEST_ACCEL_CONFIRMING") else 30',
        )
    )
    result = recorded.runpytest(*OPTIONS, "--accel-json", "out.json")
    result.assert_outcomes(passed=2)
    sleep = sleep_result(recorded)
    assert sleep["verdict"]["outcome"] != "regressed"
    assert_refuted_by_a_fresh_process(sleep["verdict"]["time"]["reason"])


@pytest.mark.long
def test_the_confirmation_process_loads_the_plugins_this_run_loaded(recorded: pytest.Pytester) -> None:
    # The slowdown comes from a plugin given with -p, as a plugin that patches a kernel would make it
    # (docs/studies/backend-switch/force_math_sdpa.py). A child without it measured other code and refuted the
    # regression: the flash -> math switch read "a fresh process did not confirm it" (2026-12-01).
    recorded.makepyfile(slower="REPS = 30\n")
    recorded.makepyfile(
        test_sleepy=SLEEPER.replace(
            'reps = round(float(pathlib.Path("duration.txt").read_text()) * 10_000)',
            'import sys\n    reps = sys.modules["slower"].REPS if "slower" in sys.modules else 10',
        )
    )
    recorded.syspathinsert()
    result = recorded.runpytest(*OPTIONS, *STEADINESS_UNJUDGED, "-p", "slower")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*  believed: *; a fresh process (+*% [[]+*% .. +*%[]])"])


@pytest.mark.parametrize(
    "args, expected",
    [
        (["-p", "myplugin", "perf_tests", "-k", "flash"], ["-p", "myplugin"]),
        (["-pmyplugin", "-Werror", "-o", "a=1", "-ob=2"], ["-pmyplugin", "-Werror", "-o", "a=1", "-ob=2"]),
        (["-c", "ci.ini", "--rootdir=sub", "--import-mode", "importlib"],
         ["-c", "/work/ci.ini", "--rootdir=/work/sub", "--import-mode", "importlib"]),
        (["--confcutdir", "/abs", "--noconftest", "-x", "--accel-json", "out.json"],
         ["--confcutdir", "/abs", "--noconftest"]),
        (["-p"], []),  # a dangling option (pytest would have refused it) is dropped, not crashed on
    ],
)  # fmt: skip
def test_options_that_decide_what_code_runs_are_inherited(args: list[str], expected: list[str]) -> None:
    assert inherited_options(args, Path("/work")) == tuple(expected)


@pytest.mark.slow
def test_fresh_process_confirmation_can_be_turned_off(recorded: pytest.Pytester) -> None:
    (recorded.path / "duration.txt").write_text("0.003")
    result = recorded.runpytest(*OPTIONS, *STEADINESS_UNJUDGED, "-o", "accel_fresh_process_confirmation=false")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.no_fnmatch_line("*fresh process*")


@pytest.mark.long
def test_a_figure_the_state_left_unjudged_waits_for_the_probes_not_only_the_cpu(recorded: pytest.Pytester) -> None:
    """A 3x slowdown measured while the random gather reads 20x its recordings (the recordings edited):
    noisy, as the state could explain it. The CPU share is no matter here (margin 1.0), so only the
    state probes, timed while waiting, keep the figure from being measured again at once: the wait is
    spent in vain, and the run says so."""
    document = json.loads(baseline_file(recorded).read_text())
    for state in document["entries"]["test_sleepy.py::test_sleep"]["throughput"]["run_states"]:
        state["latency"] /= 20
    baseline_file(recorded).write_text(json.dumps(document))
    (recorded.path / "duration.txt").write_text("0.003")
    floor = ("-o", "accel_state_noise_floor=0.10", "-o", "accel_quiet_wait_seconds=5")
    result = recorded.runpytest(*OPTIONS, *floor, "--accel-json", "out.json")
    result.assert_outcomes(passed=2)
    reason = sleep_result(recorded)["verdict"]["time"]["reason"]
    assert "the machine is in a state its baseline did not cover: a random gather took" in reason, reason
    assert "s for quiet, in vain" in reason, reason
    result.stdout.fnmatch_lines(["accel: waited * s of 5 for quiet (1 figure not judged): 0 judged after it, 1 still*"])
