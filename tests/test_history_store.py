"""The durable history: filing nights into a folder, reading it back (directly or through its SQLite
index), and the change-point detectors that read it. Pure, except the CLI tests (in-process, no pytest runs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nights import commit_of, date_of, night_document, write_night

from pytest_accel.commands.cli import main
from pytest_accel.core.stats import mann_whitney_p
from pytest_accel.judgement.history import change_points, split_p_values
from pytest_accel.judgement.results import load_results
from pytest_accel.outputs.history_index import INDEX_SCHEMA, HistoryIndex, HistoryIndexError
from pytest_accel.outputs.history_store import LOCK_NAME, HistoryError, Stamp, archive, by_device, read_folder

STAMP = Stamp(commit="0123456789abcdef", runner="gaudi-7", run="4242-1")


def filed(folder: Path) -> list[Path]:
    """The result files in a history folder (the lock file is not one)."""
    return sorted(path for path in folder.rglob("*.json"))


def test_archive_files_by_device_date_commit_and_run(tmp_path: Path) -> None:
    source = write_night(tmp_path / "run.json", 3)
    path, written = archive(source, tmp_path / "history", STAMP)
    assert written and path == tmp_path / "history" / "cpu-synthetic-2c" / f"{date_of(3)}-0123456789ab-4242-1.json"
    provenance = load_results(path).provenance
    assert provenance == {"torch": "2.13", "commit": "0123456789abcdef", "runner": "gaudi-7", "run": "4242-1"}
    assert (tmp_path / "history" / LOCK_NAME).is_file() and filed(tmp_path / "history") == [path]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(night=st.integers(0, 400), run=st.none() | st.from_regex(r"[0-9]{1,6}(-[1-3])?", fullmatch=True))
def test_archive_is_idempotent(tmp_path_factory: pytest.TempPathFactory, night: int, run: str | None) -> None:
    """Filing the same file twice writes it once; the second time changes nothing (a hash names it without a run)."""
    folder = tmp_path_factory.mktemp("history")
    source = write_night(folder.parent / f"{folder.name}-run.json", night)
    stamp = Stamp(commit=commit_of(night), runner="r", run=run)
    first, written = archive(source, folder, stamp)
    before = (first.read_bytes(), first.stat().st_mtime_ns)
    second, again = archive(source, folder, stamp)
    assert written and not again and second == first
    assert (first.read_bytes(), first.stat().st_mtime_ns) == before and filed(folder) == [first]


def test_archive_never_overwrites_a_different_file(tmp_path: Path) -> None:
    path, _ = archive(write_night(tmp_path / "a.json", 1), tmp_path / "h", STAMP)
    before = path.read_bytes()
    other = write_night(tmp_path / "b.json", 1, shift_from=0)  # the same night and run, other figures
    with pytest.raises(HistoryError, match=r"already holds a different result file; not overwritten"):
        archive(other, tmp_path / "h", STAMP)
    assert path.read_bytes() == before and not list(path.parent.glob(".*.tmp"))


def test_concurrent_filers_each_file_once(tmp_path: Path) -> None:
    """Eight filers at once, two per file: every night filed once, nothing half-written or left behind."""
    sources = [write_night(tmp_path / f"{night}.json", night) for night in range(4)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(lambda source: archive(source, tmp_path / "h", STAMP), sources * 2))
    assert sorted(written for _, written in outcomes) == [False] * 4 + [True] * 4
    assert filed(tmp_path / "h") == sorted({path for path, _ in outcomes}) and len(filed(tmp_path / "h")) == 4
    assert [p.name for p in (tmp_path / "h").rglob(".*") if p.name != LOCK_NAME] == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(date=""), "no date"),
        (lambda d: d["device"].update(key="../escape"), "cannot name a folder"),
        (lambda d: d.update(device={"kind": "cpu", "key": None}, results=[]), "measured nothing"),
        (lambda d: d.update(results=[]), "measured nothing"),  # a -k that matched no perf test: no empty night
        (lambda d: d["provenance"].update(commit="feedface"), "records commit 'feedface', not '0123456789abcdef'"),
    ],
)
def test_archive_refuses_what_it_cannot_file(tmp_path: Path, change: object, message: str) -> None:
    document = night_document(2)
    assert callable(change)
    change(document)
    source = tmp_path / "run.json"
    source.write_text(json.dumps(document))
    with pytest.raises(HistoryError, match=message):
        archive(source, tmp_path / "h", STAMP)
    assert filed(tmp_path / "h") == []


def test_the_folder_is_read_at_any_depth_skipping_hidden_folders(tmp_path: Path) -> None:
    """A data branch's checkout: files in device folders, a .git folder beside them."""
    for night in range(3):
        archive(write_night(tmp_path / f"{night}.json", night), tmp_path / "h", STAMP)
    (tmp_path / "h" / ".git").mkdir()
    (tmp_path / "h" / ".git" / "junk.json").write_text("{not a result file")
    nights = read_folder(tmp_path / "h")
    assert [n.label for n in nights] == [date_of(0), date_of(1), date_of(2)]
    assert all(n.commit == "0123456789abcdef" and ("t.py::test_off", "throughput") not in n.figures for n in nights)
    (tmp_path / "empty").mkdir()
    with pytest.raises(HistoryError, match="no result files"):
        read_folder(tmp_path / "empty")
    with pytest.raises(HistoryError, match="no such folder"):
        read_folder(tmp_path / "absent")


def test_the_index_answers_as_the_folder_does_and_refreshes_incrementally(tmp_path: Path) -> None:
    folder = tmp_path / "h"
    stamps = [Stamp(commit_of(night), "r", str(night)) for night in range(6)]
    paths = [archive(write_night(tmp_path / f"{n}.json", n), folder, stamp)[0] for n, stamp in enumerate(stamps)]
    with HistoryIndex(tmp_path / "index.sqlite") as index:
        done = index.refresh(folder)
        assert (done.read, done.kept, done.dropped) == (6, 0, 0)
        done = index.refresh(folder)
        assert (done.read, done.kept, done.dropped) == (0, 6, 0)
        assert by_device(index.nights()) == by_device(read_folder(folder))
        paths[0].unlink()
        write_night(paths[1], 1, shift_from=0)
        os.utime(paths[1], ns=(1, 1))  # a changed file: another size or time
        done = index.refresh(folder)
        assert (done.read, done.kept, done.dropped) == (1, 4, 1)
        assert by_device(index.nights()) == by_device(read_folder(folder))


def test_the_index_refuses_a_newer_schema_and_files_that_are_not_its_own(tmp_path: Path) -> None:
    index_path = tmp_path / "index.sqlite"
    HistoryIndex(index_path).connection.close()
    with sqlite3.connect(index_path) as connection:
        connection.execute("UPDATE schema_version SET version = ?", (INDEX_SCHEMA + 1,))
    with pytest.raises(HistoryIndexError, match=rf"newer pytest-accel \(index schema {INDEX_SCHEMA + 1}"):
        HistoryIndex(index_path)
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE accounts (id INTEGER)")
    with pytest.raises(HistoryIndexError, match="not a pytest-accel history index; not touched"):
        HistoryIndex(foreign)
    text = tmp_path / "results.json"
    text.write_text('{"schema": 1}\n')
    with pytest.raises(HistoryIndexError, match="not an SQLite file"):
        HistoryIndex(text)
    assert text.read_text() == '{"schema": 1}\n'


def test_an_older_index_is_rebuilt(tmp_path: Path) -> None:
    index_path = tmp_path / "index.sqlite"
    HistoryIndex(index_path).connection.close()
    with sqlite3.connect(index_path) as connection:
        connection.execute("UPDATE schema_version SET version = 0")
    with HistoryIndex(index_path) as index:
        assert index.connection.execute("SELECT version FROM schema_version").fetchall() == [(INDEX_SCHEMA,)]


def test_sixty_nights_survive_a_lost_cache_and_show_the_planted_shift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The nightly's promise: 60 nights filed into the history folder (a data branch's checkout), the
    run files and the index deleted, and ``pytest-accel history`` still shows every night and the night
    the +25% shift began (night 40)."""
    folder, runs = tmp_path / "accel-history", tmp_path / "runs"
    runs.mkdir()
    for night in range(60):
        source = write_night(runs / "results.json", night, shift_from=40)
        args = ["--commit", commit_of(night), "--runner", "gaudi-7", "--run-id", f"{9000 + night}-1"]
        assert main(["archive", str(source), "--into", str(folder), *args]) == 0
    index = tmp_path / "cache" / "history.sqlite"
    index.parent.mkdir()
    assert main(["history", str(folder), "--db", str(index)]) == 0
    for leftover in [*runs.iterdir(), index]:  # the cache, the run files: gone
        leftover.unlink()
    capsys.readouterr()
    assert main(["history", str(folder)]) == 0
    out = capsys.readouterr().out
    slow = next(line for line in out.splitlines() if "t.py::test_slow" in line)
    assert "| 60 | " in slow and f"{date_of(40)} ({commit_of(40)[:12]}): +2" in slow and ";" not in slow
    steady = next(line for line in out.splitlines() if "t.py::test_steady" in line)
    assert "| 60 | " in steady and steady.endswith("| none |")
    assert "test_off" not in out  # timing disabled: no figures
    assert main(["history", str(folder), "--db", str(index)]) == 0  # the index, rebuilt, says the same
    assert capsys.readouterr().out == out


def test_history_shows_a_table_per_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for night in range(4):
        for device in ("hpu-gaudi2", "cuda-nvidia-h100"):
            source = write_night(tmp_path / "r.json", night, device_key=device)
            assert main(["archive", str(source), "--into", str(tmp_path / "h"), "--commit", "abc"]) == 0
    capsys.readouterr()
    assert main(["history", str(tmp_path / "h")]) == 0
    out = capsys.readouterr().out
    assert out.index("### cuda-nvidia-h100") < out.index("### hpu-gaudi2")
    assert out.count("| t.py::test_slow | 4 |") == 2


def test_archive_exits_2_naming_the_clash_and_prints_the_path_once_filed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_night(tmp_path / "r.json", 5)
    command = ["archive", str(source), "--into", str(tmp_path / "h"), "--commit", "abc", "--run-id", "7"]
    assert main(command) == 0
    out, err = capsys.readouterr()
    assert out.strip().endswith(f"cpu-synthetic-2c/{date_of(5)}-abc-7.json") and "filed:" in err
    assert main(command) == 0 and "already filed, identical" in capsys.readouterr().err
    write_night(source, 5, shift_from=0)
    assert main(command) == 2
    assert "-abc-7.json: already holds a different result file" in capsys.readouterr().err
    assert main(["history", "--tolerance", "0.05"]) == 2
    assert "give a folder of result files, or --db FILE" in capsys.readouterr().err
    assert main(["history", str(tmp_path / "h"), "--db", str(source)]) == 2  # a result file is not an index
    assert "not an SQLite file" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([1.0, 2.0, 2.5]) | st.floats(0.5, 3.0), min_size=2, max_size=30))
def test_one_ranking_gives_every_split_its_mann_whitney_p(values: list[float]) -> None:
    fast = split_p_values(values)
    assert fast == pytest.approx([mann_whitney_p(values[:k], values[k:]) for k in range(1, len(values))], rel=1e-12)


def test_the_detector_finds_a_clean_shift_and_nothing_in_a_flat_series() -> None:
    flat = [1.0 + 0.01 * ((7 * i) % 5 - 2) for i in range(50)]
    shifted = flat[:30] + [v * 1.25 for v in flat[30:]]
    assert change_points(flat, 0.05) == []
    (found,) = change_points(shifted, 0.05)
    assert found.index == 30 and found.ratio == pytest.approx(1.25) and found.p_value < 0.01


def test_the_nightly_files_its_results_on_the_history_branch() -> None:
    """The nightly keeps no history in the Actions cache; it files each night onto accel-history and pushes."""
    yaml = pytest.importorskip("yaml")
    workflow = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "nightly.yml"
    suite = yaml.safe_load(workflow.read_text())["jobs"]["suite"]
    steps = suite["steps"]
    assert not [s for s in steps if "actions/cache" in s.get("uses", "")]
    assert suite["permissions"] == {"contents": "write"}
    checkout = next(s for s in steps if s.get("id") == "history")
    assert checkout["with"] == {"ref": "accel-history", "path": "history", "persist-credentials": False}
    assert checkout["continue-on-error"]
    filing = next(s for s in steps if "pytest_accel archive" in s.get("run", ""))
    assert filing["env"]["COMMIT"] == "${{ github.sha }}" and '--commit "$COMMIT"' in filing["run"]
    assert "--run-id" in filing["run"] and "for attempt in 1 2 3 4 5" in filing["run"]
    filing = filing["run"]
    assert 'git -c "$auth" push -q origin HEAD:accel-history' in filing  # the token for the push only
    assert "git rebase -q FETCH_HEAD" in filing


def _history_folder(tmp_path: Path, nights: int = 3) -> Path:
    for night in range(nights):
        archive(write_night(tmp_path / f"{night}.json", night), tmp_path / "h", Stamp(commit_of(night), "r", "1"))
    return tmp_path / "h"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_a_read_only_index_serves_until_it_needs_a_refresh_then_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, index = _history_folder(tmp_path), tmp_path / "index.sqlite"
    assert main(["history", str(folder), "--db", str(index)]) == 0
    index.chmod(0o444)
    assert main(["history", str(folder), "--db", str(index)]) == 0  # up to date: only read
    archive(write_night(tmp_path / "9.json", 9), folder, Stamp(commit_of(9), "r", "1"))
    capsys.readouterr()
    assert main(["history", str(folder), "--db", str(index)]) == 2
    err = capsys.readouterr().err
    assert f"{index}: cannot write the index (attempt to write a readonly database)" in err
    assert "Traceback" not in err


def test_a_read_only_index_is_named_even_as_root(tmp_path: Path) -> None:
    """The same refusal through SQLite's own read-only mode, which holds for root too."""
    folder, path = _history_folder(tmp_path), tmp_path / "index.sqlite"
    with HistoryIndex(path) as index:
        index.refresh(folder)
    archive(write_night(tmp_path / "9.json", 9), folder, Stamp(commit_of(9), "r", "1"))
    with HistoryIndex(path) as index:
        index.connection.execute("PRAGMA query_only = ON")
        with pytest.raises(HistoryIndexError, match=r"cannot write the index \(attempt to write a readonly database"):
            index.refresh(folder)
        assert len(index.nights()) == 3  # nothing half-written


def test_two_first_builds_of_one_index_at_once_both_succeed(tmp_path: Path) -> None:
    """Two processes building one new index: the second waits for the first's lock, then finds it built."""
    folder, index = _history_folder(tmp_path, nights=200), tmp_path / "n.sqlite"
    command = [sys.executable, "-m", "pytest_accel", "history", str(folder), "--db", str(index)]
    for _ in range(3):
        index.unlink(missing_ok=True)
        runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        done = [(run.wait(timeout=120), *run.communicate()) for run in runs]
        assert [code for code, _, _ in done] == [0, 0], done
    with HistoryIndex(index) as opened:
        assert len(opened.nights()) == 200


def test_an_index_of_the_right_version_with_other_tables_is_refused_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = tmp_path / "index.sqlite"
    with sqlite3.connect(index) as connection:
        connection.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        connection.execute("INSERT INTO schema_version VALUES (?)", (INDEX_SCHEMA,))
        connection.execute("CREATE TABLE files (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("CREATE TABLE figures (file_id INTEGER, value REAL)")
    before = index.read_bytes()
    assert main(["history", str(_history_folder(tmp_path)), "--db", str(index)]) == 2
    err = capsys.readouterr().err
    assert f"{index}: index schema {INDEX_SCHEMA}, but its table 'files' has columns id, name" in err
    assert "not touched" in err and "Traceback" not in err and index.read_bytes() == before


def test_a_long_clean_history_has_one_change_point_at_its_step() -> None:
    """2,000 noise-free nights, +25% from night 1,500: p underflows to 0 for many splits; one change point."""
    values = [1.0] * 1500 + [1.25] * 500
    assert [(point.index, round(point.ratio, 3)) for point in change_points(values, 0.05)] == [(1500, 1.25)]


def _workflows() -> dict[str, dict[str, object]]:
    yaml = pytest.importorskip("yaml")
    folder = Path(__file__).resolve().parents[1] / ".github" / "workflows"
    return {path.name: yaml.safe_load(path.read_text()) for path in sorted(folder.glob("*.yml"))}


def test_every_workflow_step_is_pinned_keeps_no_credentials_and_uploads_hidden_folders() -> None:
    """What zizmor checks (CI runs it too): actions pinned to a commit, no checkout that persists its
    token, and an upload of a hidden folder (ab's .pytest-accel-ab) that says so (upload-artifact 4.4+
    skips hidden files unless asked)."""
    steps = [
        (name, step)
        for name, workflow in _workflows().items()
        for job in workflow["jobs"].values()  # type: ignore[union-attr]
        for step in job["steps"]
    ]
    assert steps
    for name, step in steps:
        uses = step.get("uses", "")
        if uses:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), f"{name}: {uses} is not pinned to a commit"
        if uses.startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False, f"{name}: {step}"
        path = str(step.get("with", {}).get("path", ""))
        if uses.startswith("actions/upload-artifact@") and any(p.startswith(".") for p in path.split()):
            assert step["with"].get("include-hidden-files") is True, f"{name}: {path} is hidden: never uploaded"


def test_the_workflows_pass_zizmor_and_actionlint_when_installed() -> None:
    for tool, command in (("zizmor", ["zizmor", "--offline", "--min-severity", "low", ".github/workflows"]),
                          ("actionlint", ["actionlint"])):  # fmt: skip
        if shutil.which(tool) is None:
            continue  # CI installs both (.ci/run); a laptop need not
        done = subprocess.run(command, cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
