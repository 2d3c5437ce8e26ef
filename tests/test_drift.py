"""A figure's drift between nights (judgement/drift.py): read from the history, it widens the bound."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nights import commit_of, night_document, write_night

from pytest_accel.core import wording
from pytest_accel.core.outcomes import Outcome, Rule, Sight
from pytest_accel.judgement.drift import DRIFT_NIGHTS, MIN_NIGHTS, UNSETTLED, NightDrift, night_drift, night_drifts
from pytest_accel.judgement.sight import between_run, limited_by
from pytest_accel.judgement.verdict import Observation, VerdictPolicy, judge_time
from pytest_accel.outputs.history_store import Stamp, archive, recent_figures
from pytest_accel.outputs.terminal import history_line

POLICY = VerdictPolicy()


def _levels(count: int, level: float = 1.0, sd: float = 0.0, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [level * math.exp(rng.gauss(0.0, sd)) for _ in range(count)]


def test_the_drift_is_the_sd_of_the_newest_settled_nights_logs() -> None:
    series = _levels(20, sd=0.04)
    drift = night_drift(series, normalized=True)
    settled = series[:-UNSETTLED][-DRIFT_NIGHTS:]
    assert drift == NightDrift(statistics.stdev(math.log(v) for v in settled), DRIFT_NIGHTS, True)


def test_a_kernel_that_jumps_now_and_then_keeps_its_jumps_as_drift() -> None:
    """Unchanged math SDPA at SD3 256 px read +11% one night among steady ones (docs/studies/drift):
    once two nights follow it, that jump is drift the bound must allow for."""
    series = [*_levels(6, sd=0.01, seed=4), 1.12, *_levels(4, sd=0.01, seed=5)]
    drift = night_drift(series, normalized=True)
    assert drift is not None and drift.spread > 0.03


def test_a_regressions_first_nights_do_not_widen_its_bound() -> None:
    """Until three nights make a change point, a new level's first two nights are left out, not taken
    for drift: the third night of a +20% regression still fails."""
    series = [*_levels(12, sd=0.01, seed=3), 1.2, 1.2]
    drift = night_drift(series, normalized=True)
    assert drift is not None and drift.spread < 0.02
    baseline = _observation(1.0, (1.0, 1.01, 0.995), drift)
    assert judge_time(_observation(1.2), baseline, POLICY).outcome is Outcome.REGRESSED


def test_too_few_nights_give_no_drift() -> None:
    assert night_drift([1.0] * (MIN_NIGHTS + UNSETTLED - 1), normalized=False) is None
    assert night_drift([1.0, 1.01, 0.99, 1.0, 1.0], normalized=False) is not None


def test_a_change_of_level_is_not_drift_only_the_nights_after_it_count() -> None:
    """A step (a change of code or host) is a change point: the nights before it are another level."""
    before, after = _levels(10, 1.0, 0.01, seed=1), _levels(6, 1.3, 0.01, seed=2)
    drift = night_drift(before + after, normalized=True)
    assert drift is not None and drift.nights == 6 - UNSETTLED and drift.spread < 0.02
    assert statistics.stdev(math.log(v) for v in (before + after)[-DRIFT_NIGHTS:]) > 0.1  # what a step would add


def test_only_the_nights_measured_as_the_newest_one_form_its_series() -> None:
    """Relative to the reference kernel, or seconds: two kinds of figure, never one series."""
    normalised = [(0.002, True), (0.0021, True), (0.00205, True), (0.002, True), (0.002, True)]
    mixed = [(1.0, False), *normalised[:3], (1.02, False), *normalised[3:]]
    assert night_drifts({("t", "m"): mixed})[("t", "m")].nights == 3
    assert night_drifts({("t", "m"): [*normalised, (1.0, False)]}) == {}  # the newest kind has 1 night


def test_the_drift_widens_the_between_run_part_only_when_it_is_the_widest() -> None:
    runs = (1.0, 1.005, 0.995)
    assert between_run(runs, None, 0.02, 0.95, NightDrift(0.01, 10, True))[1:] == ("floor", 0.02)
    half, source, spread = between_run(runs, None, 0.02, 0.95, NightDrift(0.05, 10, True))
    assert (source, spread) == ("nights", 0.05)
    assert half == pytest.approx(1.96 * 0.05 * math.sqrt(4 / 3), rel=1e-3)


def _observation(centre: float, runs: tuple[float, ...] = (), drift: NightDrift | None = None) -> Observation:
    samples = [centre * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(30)]
    return Observation(samples, [1.0] * 30, None, runs, night_drift=drift)


def test_unchanged_code_that_drifted_between_nights_is_not_failed_for_it() -> None:
    """An hour after three recordings that agreed, a launch-bound kernel read +8% (docs/studies/sight):
    with its nights' drift known the verdict abstains from calling it, and says why."""
    runs = (1.0, 1.01, 0.995)
    baseline, now = _observation(1.0, runs), _observation(1.10)
    assert judge_time(now, baseline, POLICY).outcome is Outcome.REGRESSED
    drifted = judge_time(now, _observation(1.0, runs, NightDrift(0.05, 12, True)), POLICY)
    assert drifted.outcome is not Outcome.REGRESSED and drifted.rule is Rule.INTERVAL
    assert drifted.sight == Sight.NIGHTS
    # the clause names the drift's figures: SD 5.0% over 12 nights
    assert wording.limited_by(Sight.NIGHTS, 0.05, 0.0, len(runs), 12) in drifted.reason


def test_a_slowdown_beyond_the_drift_still_fails() -> None:
    baseline = _observation(1.0, (1.0, 1.01, 0.995), NightDrift(0.05, 12, True))
    assert judge_time(_observation(1.25), baseline, POLICY).outcome is Outcome.REGRESSED


def test_seconds_are_not_widened_by_a_drift_of_normalised_figures() -> None:
    runs = (1.0, 1.01, 0.995)
    now = Observation([1.1] * 30, (), None)
    baseline = Observation([1.0] * 30, (), None, runs, night_drift=NightDrift(0.2, 12, True))
    assert judge_time(now, baseline, POLICY).sight != Sight.NIGHTS


@given(st.floats(0.0, 0.3), st.floats(0.0, 0.3))
def test_a_drift_never_narrows_a_bound(drift: float, own: float) -> None:
    runs = (1.0, math.exp(own), math.exp(-own))
    without = between_run(runs, None, 0.02, 0.95)[0]
    assert between_run(runs, None, 0.02, 0.95, NightDrift(drift, 5, True))[0] >= without


def test_the_nights_clause_in_full() -> None:
    from pytest_accel.judgement.sight import Width

    said = wording.limited_by(Sight.NIGHTS, 0.052, 0.01, 3, 14)  # the width's figures (the words: test_wording.py)
    assert limited_by(Width(0.01, 0.12, "nights", 0.052, 3, 14), 0.0, 0.05) == (Sight.NIGHTS, said)


def _history(tmp_path: Path, nights: int, device_key: str = "cpu-synthetic-2c") -> Path:
    folder = tmp_path / "history"
    for night in range(nights):
        source = write_night(tmp_path / f"{night}.json", night, device_key=device_key)
        archive(source, folder, Stamp(commit_of(night), "runner", str(night)))
    return folder


def test_the_history_gives_each_figure_its_nights_oldest_first(tmp_path: Path) -> None:
    folder = _history(tmp_path, 5)
    figures = recent_figures(folder, "cpu-synthetic-2c", limit=4)
    assert set(figures) == {("t.py::test_slow", "throughput"), ("t.py::test_steady", "throughput")}
    steady = figures[("t.py::test_steady", "throughput")]
    assert len(steady) == 4 and not any(normalized for _, normalized in steady)
    fifth = statistics.median(json.loads((tmp_path / "4.json").read_text())["results"][1]["samples"])
    assert steady[-1][0] == pytest.approx(fifth)
    assert recent_figures(folder, "cpu-other-2c", limit=4) == {}


def test_a_folder_of_another_layout_is_read_by_device_key(tmp_path: Path) -> None:
    for night in range(4):
        (tmp_path / "flat").mkdir(exist_ok=True)
        (tmp_path / "flat" / f"{night}.json").write_text(json.dumps(night_document(night, device_key="cpu-x-2c")))
    assert len(recent_figures(tmp_path / "flat", "cpu-x-2c", limit=30)[("t.py::test_slow", "throughput")]) == 4


def test_the_header_says_what_the_history_gives() -> None:
    drifts = {("a", "m"): NightDrift(0.01, 14, True), ("b", "m"): NightDrift(0.062, 9, True)}
    assert history_line("hist", "cpu-k-2c", drifts) == (
        "accel: history hist: drift between nights known for 2 figure(s) of cpu-k-2c (SD median 3.6%, "
        "largest 6.2%): none is judged narrower than it drifts"
    )
    assert history_line("hist", "cpu-k-2c", {}) == (
        "accel: history hist: no figure of cpu-k-2c has 5 nights at one level yet; no bound widened"
    )


TINY = """
import torch

def test_tiny(throughput):
    a = torch.randn(64, 64)
    throughput(lambda: a @ a, items=1, unit="naps")
"""
RUN = ("--device", "cpu", "--accel-baselines", "bl", "--accel-structure=off", "--accel-measure-seconds", "0.05",
       "-p", "no:cacheprovider")  # fmt: skip


def test_a_missing_history_folder_stops_the_run_before_it_measures(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_tiny=TINY)
    result = perf_pytester.runpytest(*RUN, "--accel-history", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --accel-history {perf_pytester.path / 'nowhere'}: no such folder"])


def test_a_corrupt_night_is_named(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_tiny=TINY)
    (perf_pytester.path / "history").mkdir()
    (perf_pytester.path / "history" / "bad.json").write_text("{")
    result = perf_pytester.runpytest(*RUN, "--accel-history", "history")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: cannot read the history (--accel-history): *bad.json*"])


def test_the_run_reads_the_nights_of_its_own_device(perf_pytester: pytest.Pytester) -> None:
    from pytest_accel.engine.devices import make_device

    key = make_device("cpu").key()
    folder = _history(perf_pytester.path, 5, device_key=key)
    other = perf_pytester.path / "other.json"
    archive(write_night(other, 9, device_key="cpu-other-2c"), folder, Stamp(commit_of(9), "runner", "9"))
    perf_pytester.makepyfile(test_tiny=TINY)
    result = perf_pytester.runpytest(*RUN, "--accel-history", "history")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [f"accel: history {perf_pytester.path / 'history'}: drift between nights known for 2 figure(s) of {key} *"]
    )


def test_a_confirmation_child_judges_with_the_same_history(pytester: pytest.Pytester) -> None:
    """A fresh process that confirms a suspect widens its bound by the same nights (an ini override)."""
    from pytest_accel.plugin.options import AccelOptions

    given = AccelOptions.from_config(pytester.parseconfig("--accel-history", "h"))
    assert ("accel_history", str(pytester.path / "h")) in given.child_settings("cpu", 1, ()).ini
    plain = AccelOptions.from_config(pytester.parseconfig())
    assert plain.history is None and "accel_history" not in dict(plain.child_settings("cpu", 1, ()).ini)


def test_the_history_table_shows_each_figures_drift_since_its_last_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_accel.commands.cli import main

    folder = tmp_path / "history"
    for night in range(12):
        source = write_night(tmp_path / f"{night}.json", night, shift_from=6)
        archive(source, folder, Stamp(commit_of(night), "runner", str(night)))
    assert main(["history", str(folder)]) == 0
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in capsys.readouterr().out.splitlines()}
    assert rows["test"][3] == "drift (SD, nights)"
    assert rows["t.py::test_slow"][3].endswith("% (4)")  # the 6 nights after the change point but the newest 2
    assert rows["t.py::test_steady"][3].endswith("% (10)")
