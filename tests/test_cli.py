"""The pytest-accel command on result files made by real runs (through pytester), and on bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import FAST_OPTIONS

from pytest_accel.commands.cli import main
from pytest_accel.core.cost import cost_of
from pytest_accel.core.energy import Energy

# test_steady is the control, so it is CPU-bound like the reference kernel that normalises it: a
# sleep is not, and on the shared VM one read -9% (p = 0.008) across 12 quick runs as the host changed.
WORKLOAD = """
import pathlib, time
import torch

a = torch.randn(128, 128)

def test_nap(throughput):
    seconds = float(pathlib.Path("duration.txt").read_text())
    throughput(lambda: time.sleep(seconds), items=4, unit="naps")

def test_steady(throughput):
    throughput(lambda: a @ a, items=1, unit="naps")
"""


def run(pytester: pytest.Pytester, duration: float, out: str) -> Path:
    """One real run of the workload with a given nap length; returns its --accel-json file."""
    (pytester.path / "duration.txt").write_text(str(duration))
    pytester.runpytest("--device", "cpu", "--accel-json", out, *FAST_OPTIONS).assert_outcomes(passed=2)
    return pytester.path / out


_RUNS: dict[str, bytes] = {}  # the two runs' files, made by the first test that asks (the tests only read them)


@pytest.fixture
def results(perf_pytester: pytest.Pytester) -> tuple[Path, Path]:
    """Two real runs: a baseline-like one and one whose nap is 3x longer (fresh copies for each test)."""
    if not _RUNS:
        perf_pytester.makepyfile(test_naps=WORKLOAD)
        _RUNS.update(
            {name: run(perf_pytester, nap, name).read_bytes() for nap, name in ((0.001, "a.json"), (0.003, "b.json"))}
        )
    paths = (perf_pytester.path / "a.json", perf_pytester.path / "b.json")
    for path in paths:
        path.write_bytes(_RUNS[path.name])
    return paths


def as_other_device(path: Path, key: str) -> Path:
    """The same run, relabelled as another device class (a second runner's file)."""
    document = json.loads(path.read_text())
    document["device"]["key"] = key
    other = path.with_name(f"{key}.json")
    other.write_text(json.dumps(document))
    return other


def test_compare_flags_the_slower_run_and_exits_1(
    results: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = results
    capsys.readouterr()
    before = (a.read_bytes(), b.read_bytes())
    assert main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    nap = next(line for line in out.splitlines() if "test_naps.py::test_nap " in line)
    assert "regressed +" in nap  # 3x the nap
    assert "regressed of 2 compared" in out
    assert (a.read_bytes(), b.read_bytes()) == before  # inputs are never modified
    assert main(["compare", str(a), str(a)]) == 0


def test_compare_never_judges_figures_timed_in_different_modes(
    results: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = results
    document = json.loads(b.read_text())
    for entry in document["results"]:
        entry["timing"] = "graph"  # B replayed a graph: its figures are kernel time, A's host launches
    b.write_text(json.dumps(document))
    capsys.readouterr()
    assert main(["compare", str(a), str(b)]) == 0  # the 3x nap is not called regressed across modes
    out = capsys.readouterr().out
    assert "not compared | timed eager/warm in A, graph/warm in B" in out and "0 regressed" in out


def test_report_makes_a_cross_device_table_and_html(
    results: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = results
    other = as_other_device(a, "cuda-nvidia-h100-80gb-hbm3")
    page = tmp_path / "report.html"
    capsys.readouterr()
    code = main(["report", str(a), str(other), "--reference", "cuda-nvidia-h100-80gb-hbm3", "--html", str(page)])
    assert code == 0
    out = capsys.readouterr().out
    assert "| test | cpu-" in out and "/ cuda-nvidia-h100-80gb-hbm3 |" in out and "1.00x" in out
    text = page.read_text()
    assert text.startswith("<!doctype html>") and text.count("data:image/png;base64,") == 2


def test_report_says_what_each_figure_costs_per_device_where_a_file_has_energy_or_prices(
    results: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = results
    capsys.readouterr()
    assert main(["report", str(a)]) == 0
    assert "What a figure costs" not in capsys.readouterr().out  # no energy, no price: no such table
    document = json.loads(a.read_text())
    for entry in document["results"]:  # a GPU run's figures, as a window and a price make them (constructed)
        rate = entry["figures"]["items_per_second"]
        entry["extra"] = {"energy": Energy("nvml", 2.0, 1.0, 2.0 * rate).to_json(),
                          "cost": cost_of(rate, 3.6, None, 0).to_json()}  # fmt: skip
    priced = tmp_path / "priced.json"
    priced.write_text(json.dumps({**document, "device": {**document["device"], "key": "cuda-h100"}}))
    page = tmp_path / "report.html"
    assert main(["report", str(a), str(priced), "--reference", "cuda-h100", "--html", str(page)]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "items/s/W" in line)
    assert "| cuda-h100 items/s/W | cuda-h100 items/$ |" in header and header.endswith("/ cuda-h100 items/$ |")
    nap = next(line for line in out.splitlines() if line.startswith("| test_naps.py::test_nap ") and "|" in line[30:]
               and line.count("|") == header.count("|"))  # fmt: skip
    cells = [cell.strip() for cell in nap.split("|")[1:-1]]
    assert cells[1:3] == ["-", "-"] and cells[3] != "-" and cells[5] == "-"  # the CPU file has neither
    assert "What a figure costs" in page.read_text()


LOADER_WORKLOAD = """
import time
import pytest

@pytest.mark.parametrize("workers", [2, 0, "device decode"])
def test_loader(throughput, workers):
    throughput(lambda: time.sleep(0.001), items=8, unit="samples", workers=workers)

def test_unlabelled(throughput):
    throughput(lambda: time.sleep(0.001), items=1, unit="naps")
"""


def test_report_pivots_a_label_into_columns(
    perf_pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--pivot workers``: the study's table, a row per device, a column per loader, numbers first, in order."""
    perf_pytester.makepyfile(test_loader=LOADER_WORKLOAD)
    perf_pytester.runpytest("--device", "cpu", "--accel-json", "a.json", *FAST_OPTIONS).assert_outcomes(passed=4)
    cpu = perf_pytester.path / "a.json"
    gaudi = as_other_device(cpu, "hpu-gaudi2")
    page = tmp_path / "report.html"
    capsys.readouterr()
    assert main(["report", str(cpu), str(gaudi), "--pivot", "workers", "--html", str(page)]) == 0
    out = capsys.readouterr().out
    table = out[out.index("### By workers") :].splitlines()
    assert table[2] == "| test | device | workers 0 | workers 2 | device decode |"
    rows = [line for line in table if line.startswith("| test_loader.py::test_loader |")]
    devices = [row.split(" | ")[1] for row in rows]
    assert len(devices) == 2 and devices[0].startswith("cpu-") and devices[1] == "hpu-gaudi2"
    assert all(row.count("samples/s") == 3 for row in rows)
    assert "test_unlabelled" not in "\n".join(table)
    document = json.loads(gaudi.read_text())  # the studies' price-performance in each cell: a window, a price
    for entry in document["results"]:
        rate = entry["figures"]["items_per_second"]
        entry["extra"].update(energy=Energy("hlml", 2.0, 1.0, 4.0 * rate).to_json(),
                              cost=cost_of(rate, 3.6, None, 0).to_json())  # fmt: skip
    gaudi.write_text(json.dumps(document))
    assert main(["report", str(cpu), str(gaudi), "--pivot", "workers"]) == 0
    out = capsys.readouterr().out
    priced = [line for line in out[out.index("### By workers") :].splitlines() if "| hpu-gaudi2 |" in line]
    assert priced and all(row.count("/s/W, ") == 3 and row.count("/$") == 3 for row in priced)
    section = page.read_text().split("<h2>By workers</h2>")[1].split("<h2>")[0]
    assert section.count("data:image/png;base64,") == 1  # the grouped bars: a bar per device per loader


def test_report_pivot_on_a_missing_label_is_an_error(
    results: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = results
    capsys.readouterr()
    assert main(["report", str(a), "--pivot", "wokers"]) == 2
    assert "--pivot wokers: no measurement carries the label 'wokers'" in capsys.readouterr().err


def test_report_pivot_refuses_to_merge_tests_that_differ_in_an_unlabelled_parameter(
    perf_pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    perf_pytester.makepyfile(
        test_steps="""
import time
import pytest

@pytest.mark.parametrize("kernel", ["a", "b"])
def test_steps(throughput, kernel):
    throughput(lambda: time.sleep(0.001), items=1, unit="images", steps=30)
"""
    )
    perf_pytester.runpytest("--device", "cpu", "--accel-json", "s.json", *FAST_OPTIONS).assert_outcomes(passed=2)
    capsys.readouterr()
    assert main(["report", str(perf_pytester.path / "s.json"), "--pivot", "steps"]) == 2
    err = capsys.readouterr().err
    assert "test_steps[a] and " in err and "test_steps[b] differ in a parameter" in err


@pytest.mark.long
def test_history_finds_the_night_a_slowdown_appeared(
    perf_pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    perf_pytester.makepyfile(test_naps=WORKLOAD)
    nights = tmp_path / "nights"
    nights.mkdir()
    for night in range(12):
        path = run(perf_pytester, 0.001 if night < 6 else 0.003, f"n{night}.json")
        document = json.loads(path.read_text())
        document["date"] = f"2026-11-{night + 1:02d}T02:17:00+00:00"  # nightly runs, one per day
        (nights / f"night-{night:02d}.json").write_text(json.dumps(document))
    page = tmp_path / "history.html"
    capsys.readouterr()  # drop the pytester runs' own output
    assert main(["history", str(nights), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    nap_line = next(line for line in out.splitlines() if "test_nap " in line or "test_nap |" in line)
    assert "2026-11-07" in nap_line  # the first slow night
    steady_line = next(line for line in out.splitlines() if "test_steady" in line)
    assert "none" in steady_line
    assert "Slower since 2026-11-07" in page.read_text()


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read"),
        ("{not json", "invalid JSON at line 1, column 2"),
        ('{"schema": 9, "device": {"key": "x"}, "results": []}', "newer pytest-accel (schema 9"),
        ('{"device": {"key": "x"}, "results": []}', "no integer 'schema'"),
        ('{"schema": 1, "device": {"key": "x"}, "results": [{"test": "t", "samples": "fast"}]}', "results[0]"),
    ],
)
def test_bad_inputs_name_the_file_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    for command in (["report", str(path)], ["compare", str(path), str(path)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert str(path) in err and message in err
    if content is not None:
        assert path.read_text() == content


def test_baselines_show_lists_entries(perf_pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    perf_pytester.makepyfile(test_naps=WORKLOAD)
    (perf_pytester.path / "duration.txt").write_text("0.001")
    perf_pytester.runpytest("--device", "cpu", "--accel-update", *FAST_OPTIONS).assert_outcomes(passed=2)
    capsys.readouterr()
    assert main(["baselines", "show", "--root", str(perf_pytester.path / "baselines")]) == 0
    out = capsys.readouterr().out
    assert "smoke.json: 2 entries" in out and "test_naps.py::test_nap [throughput]" in out


def test_baselines_show_reads_the_root_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--root`` after ``show`` is honoured wherever the command runs (no ``baselines/`` in the cwd)."""
    from pytest_accel.judgement.baselines import BaselineEntry, BaselineStore

    BaselineStore(tmp_path / "elsewhere").update(
        "cpu-k-2c", "smoke", 1, [BaselineEntry("t::a", "throughput", "x", 2.0, (0.5,))]
    )
    monkeypatch.chdir(tmp_path)
    assert main(["baselines", "show", "--root", str(tmp_path / "elsewhere")]) == 0
    assert "smoke.json: 1 entry" in capsys.readouterr().out
    assert main(["baselines", "show", "--root", str(tmp_path / "missing")]) == 2
    assert "no such baseline folder" in capsys.readouterr().err


def _result_file(tmp_path: Path) -> Path:
    from pytest_accel.core.measurement import Measurement
    from pytest_accel.judgement.results import Recorded, results_document

    document = results_document(
        [Recorded("t.py::test_a", "passed", Measurement("images", 2.0, (0.01, 0.012)), None)],
        device_kind="cpu", device_key="cpu-k-2c", provenance={}, profile="smoke", world_size=1,
    )  # fmt: skip
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    ("option", "target", "message"),
    [
        ("--html", "missing/d/r.html", "cannot write: No such file or directory"),
        ("--html", ".", "is a folder; give a file name"),
        ("--html", "r.json", "is one of the inputs; this command never modifies what it reads"),
        ("--markdown", "r.json", "is one of the inputs"),
    ],
)
def test_outputs_that_cannot_be_written_are_named_and_inputs_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, target: str, message: str
) -> None:
    path = _result_file(tmp_path)
    before = path.read_text()
    assert main(["report", str(path), option, str(tmp_path / target)]) == 2
    assert message in capsys.readouterr().err
    assert path.read_text() == before


def test_history_html_into_a_missing_folder_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _result_file(tmp_path)
    assert main(["history", str(tmp_path), "--html", str(tmp_path / "no" / "h.html")]) == 2
    assert "h.html: cannot write" in capsys.readouterr().err


def test_baselines_show_names_bad_roots_and_bad_file_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A root that is a file; file and folder names the store would not write."""
    from pytest_accel.judgement.baselines import BaselineEntry, BaselineStore

    (tmp_path / "afile").write_text("")
    assert main(["baselines", "show", "--root", str(tmp_path / "afile")]) == 2
    assert "is a file, not a baseline folder" in capsys.readouterr().err
    root = tmp_path / "root"
    BaselineStore(root).update("cpu-k-2c", "smoke", 1, [BaselineEntry("t::a", "throughput", "x", 2.0, (0.5,))])
    (root / "cpu-k-2c" / "smoke-w0.json").write_text("{}")
    (root / "cpu..x").mkdir()
    (root / "cpu..x" / "smoke.json").write_text("{}")
    assert main(["baselines", "show", "--root", str(root)]) == 2
    out, err = capsys.readouterr()
    assert "smoke.json: 1 entry" in out  # the good file is still shown
    assert "smoke-w0.json: not a baseline file name" in err and "cpu..x/smoke.json: not a baseline file name" in err
