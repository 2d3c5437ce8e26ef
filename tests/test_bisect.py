"""``pytest-accel bisect`` end to end: real repositories, real ab sittings; and where a night's bisect starts.

The search itself is tested apart, with an oracle for the sittings (tests/test_bisection.py).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import commit, git
from test_ab import INI, KERNEL, TEST, assert_nothing_left

from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.judgement.results import Recorded, results_document
from pytest_accel.judgement.verdict import VerdictRecord
from pytest_accel.outputs.history_store import HistoryError, last_good_night, regressed_tests

# Tolerance 50%: the planted change triples the work, the pure-Python kernel moves ~27% a pair (test_ab.py).
QUICK = ["--tolerance", "0.5", "--max-pairs", "20", "--step-minutes", "3"]
SELECTION = ["--", "test_perf.py", "--device", "cpu", "-q"]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def own_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))


def project(folder: Path, planted: int | None, commits: int = 6, broken: int | None = None) -> dict[int, str]:
    """A repository: ``good`` (tagged), then ``commits`` more; the ``planted``-th triples the work, the
    ``broken``-th breaks the kernel's import and the next one mends it. Returns each commit by its number."""
    folder.mkdir()
    git(folder, "init", "-q")
    shas = {0: commit(folder, "good", **{"kernel.py": KERNEL.format(slow=1), "test_perf.py": TEST, "pytest.ini": INI})}
    git(folder, "tag", "good")
    slow = 1
    for index in range(1, commits + 1):
        slow = 3 if index == planted else slow
        kernel = "def work(:\n" if index == broken else KERNEL.format(slow=slow)
        shas[index] = commit(folder, f"change {index}", **{"notes.txt": f"change {index}\n", "kernel.py": kernel})
    return shas


def bisect(repo: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_accel", "bisect", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.long
def test_the_planted_commit_is_named_with_its_own_change(tmp_path: Path) -> None:
    repo = tmp_path / "project"
    shas = project(repo, planted=4)
    done = bisect(repo, "--good", "good", *QUICK, "--json", str(tmp_path / "b.json"), *SELECTION)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f'culprit: {shas[4][:9]} "change 4", for 1 test(s):' in done.stdout
    assert "| test_work |" in done.stdout and "the whole change" in done.stdout
    answer = json.loads((tmp_path / "b.json").read_text())
    (finding,) = answer["findings"]["test_perf.py::test_work"]
    assert finding["suspects"] == [shas[4]] and finding["last_good"] == shas[3] and finding["rest"] == "good"
    assert finding["culprit_alone"]["outcome"] == "regressed"  # its parent against it, measured last
    kinds = [s["kind"] for s in answer["sittings"]]
    assert kinds[0] == "range" and kinds[-1] == "culprit" and "rest" in kinds
    assert answer["exit_code"] == 1 and answer["commits"][0] == shas[0] and len(answer["commits"]) == 7
    assert json.loads((repo / ".pytest-accel-bisect" / "bisect.json").read_text()) == answer
    assert_nothing_left(repo)


@pytest.mark.long
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_by_counts_every_step_is_decided_in_one_run_per_side_and_the_culprit_names_its_functions(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "project"
    shas = project(repo, planted=2, commits=3)
    done = bisect(repo, "--good", "good", "--count", "--json", str(tmp_path / "b.json"), *SELECTION)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f'culprit: {shas[2][:9]} "change 2", for 1 test(s):' in done.stdout
    answer = json.loads((tmp_path / "b.json").read_text())
    assert all(s["pairs"] == 1 for s in answer["sittings"])  # no step measured longer: counts decide at once
    (finding,) = answer["findings"]["test_perf.py::test_work"]
    assert finding["suspects"] == [shas[2]] and finding["culprit_alone"]["outcome"] == "regressed"
    assert "builtin_sum" in done.stdout  # the culprit's own sitting: the functions whose counts grew
    assert_nothing_left(repo)


@pytest.mark.long
def test_a_range_that_did_not_get_slower_names_no_culprit_and_exits_0(tmp_path: Path) -> None:
    repo = tmp_path / "project"
    project(repo, planted=None, commits=3)
    done = bisect(repo, "--good", "good", *QUICK, *SELECTION)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no slowdown over the range: 1 test(s), none slower beyond 50% (no culprit)" in done.stdout
    assert "culprit:" not in done.stdout
    answer = json.loads((repo / ".pytest-accel-bisect" / "bisect.json").read_text())
    assert answer["findings"] == {} and [s["kind"] for s in answer["sittings"]] == ["range"]


@pytest.mark.long
def test_a_commit_that_does_not_import_is_skipped_and_named(tmp_path: Path) -> None:
    repo = tmp_path / "project"
    # The first step lands on the broken commit 2 (commit 3 mends it): skipped, then 1 and 3 are measured.
    shas = project(repo, planted=4, commits=4, broken=2)
    done = bisect(repo, "--good", "good", *QUICK, "--no-operators", *SELECTION)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f'culprit: {shas[4][:9]} "change 4"' in done.stdout
    assert f'skipped {shas[2][:9]} "change 2": could not be measured (head (' in done.stdout
    assert_nothing_left(repo)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--good", "no-such-rev"], "--good 'no-such-rev': not a revision of the repository"),
        (["--good", "HEAD", "--bad", "good"], "--good HEAD is not an ancestor of --bad good"),
        (["--good", "HEAD"], "--good HEAD and --bad HEAD are the same commit: nothing to bisect"),
        (["--good-from", "history"], "--good-from needs --regressed-in"),
        ([], "give --good REV, or --good-from HISTORY with --regressed-in RESULTS"),
        (["--good", "good", "--tries", "0"], "--tries must be at least 1"),
    ],
)
def test_bad_input_is_exit_2_naming_the_option(tmp_path: Path, args: list[str], message: str) -> None:
    repo = tmp_path / "project"
    project(repo, planted=None, commits=1)
    done = bisect(repo, *args, *SELECTION)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def night(
    path: Path, commit: str, date: str, regressed: bool, device_key: str = "cpu-test", outcome: Outcome | None = None
) -> Path:
    """A result file of one night: t.py::test_a measured, regressed or unchanged (or ``outcome``)."""
    outcome = outcome or (Outcome.REGRESSED if regressed else Outcome.UNCHANGED)
    verdict = VerdictRecord(Verdict(outcome, "time", "synthetic", ratio=1.3 if regressed else 1.0))
    recorded = [Recorded("t.py::test_a", "passed", Measurement("calls", 1.0, (0.01,) * 5), verdict)]
    document = results_document(recorded, device_kind="cpu", device_key=device_key,
                                provenance={"commit": commit}, profile="full", world_size=1)  # fmt: skip
    document["date"] = date
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def test_a_nights_bisect_starts_at_the_newest_earlier_night_that_judged_the_tests_unchanged(tmp_path: Path) -> None:
    history = tmp_path / "history"
    night(history / "n1.json", "a" * 40, "2026-11-01T02:00:00+00:00", regressed=False)
    night(history / "n2.json", "b" * 40, "2026-11-02T02:00:00+00:00", regressed=False)
    night(history / "n2-other.json", "e" * 40, "2026-11-02T03:00:00+00:00", regressed=False, device_key="other")
    night(history / "n3.json", "c" * 40, "2026-11-03T02:00:00+00:00", regressed=True)
    tonight = night(history / "n4.json", "d" * 40, "2026-11-04T02:00:00+00:00", regressed=True)
    night(history / "n3b.json", "f" * 40, "2026-11-03T03:00:00+00:00", regressed=False, outcome=Outcome.NOISY)
    assert regressed_tests(tonight) == ["t.py::test_a"]
    assert last_good_night(history, tonight, ["t.py::test_a"], lambda commit: True) == "b" * 40
    # a night on another branch (not an ancestor of tonight's commit) is no start
    assert last_good_night(history, tonight, ["t.py::test_a"], lambda commit: commit != "b" * 40) == "a" * 40
    with pytest.raises(HistoryError, match=r"no night on cpu-test before 2026-11-04.* judged t\.py::test_b unchanged"):
        last_good_night(history, tonight, ["t.py::test_b"], lambda commit: True)


@pytest.mark.long
def test_the_nightly_bisect_step_runs_against_a_bare_origin(tmp_path: Path) -> None:
    """The workflow's own step, its shell as written: a shallow checkout of a local bare origin, a history
    folder whose last good night is the good commit, tonight's result file regressed: the step fetches the
    range, bisects it and puts the culprit on the job page."""
    work = tmp_path / "work"
    shas = project(work, planted=2, commits=2)
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True)
    runner = tmp_path / "runner"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(runner)], check=True)
    date = "2026-12-01T02:00:00+00:00"
    history, results = runner / "history", runner / "results"
    # Tonight's file, as the suite writes it: this host's device key, test_work regressed.
    subprocess.run(
        [sys.executable, "-m", "pytest", "test_perf.py", "--device", "cpu", "-q", "--accel-update",
         "--accel-baselines", str(tmp_path / "b")], cwd=work, check=False, capture_output=True, timeout=300,
    )  # fmt: skip
    git(work, "checkout", "-q", "good")
    subprocess.run(
        [sys.executable, "-m", "pytest", "test_perf.py", "--device", "cpu", "-q", "--accel-update",
         "--accel-baselines", str(tmp_path / "g")], cwd=work, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    git(work, "checkout", "-q", "-")
    tonight = results / "cpu-run7.json"
    results.mkdir()
    subprocess.run(
        [sys.executable, "-m", "pytest", "test_perf.py", "--device", "cpu", "-q", "--accel-baselines",
         str(tmp_path / "g"), "--accel-json", str(tonight)], cwd=work, check=False, capture_output=True, timeout=300,
    )  # fmt: skip
    assert regressed_tests(tonight) == ["test_perf.py::test_work"]
    data = json.loads(tonight.read_text())
    good_night = copy.deepcopy(data)
    good_night["date"], good_night["provenance"]["commit"] = "2026-11-30T02:00:00+00:00", shas[0]
    for result in good_night["results"]:
        result["verdict"]["time"]["outcome"] = "unchanged"
    data["date"] = date
    tonight.write_text(json.dumps(data))
    history.mkdir()
    (history / "good-night.json").write_text(json.dumps(good_night))
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "nightly.yml").read_text())
    step = next(s for s in workflow["jobs"]["suite"]["steps"] if s.get("name") == "Bisect tonight's regressions")
    summary = tmp_path / "summary.md"
    env = {**os.environ, "RESULTS": "results/cpu-run7.json", "DEVICE": "cpu", "GH_TOKEN": "unused",
           "BISECT_OPTIONS": " ".join(QUICK), "GITHUB_STEP_SUMMARY": str(summary)}  # fmt: skip
    script = step["run"].replace("--accel-profile full", "test_perf.py -q")  # this project has no profiles
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=runner, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(runner, "rev-parse", "--is-shallow-repository") == "false"
    page = summary.read_text()
    assert page.startswith("### Bisect on cpu") and f'culprit: {shas[2][:9]} "change 2"' in page
    answer = json.loads((runner / "results" / "bisect-cpu.json").read_text())
    assert answer["good"] == shas[0] and answer["exit_code"] == 1


def test_a_night_with_nothing_to_bisect_says_why_and_writes_its_answer(tmp_path: Path) -> None:
    """No regressed test, or no commit since the last good night (a driver moved, not the code): exit 0, said
    on the page and in --json, no sitting run."""
    repo = tmp_path / "project"
    shas = project(repo, planted=None, commits=1)
    history = tmp_path / "history"
    night(history / "n1.json", shas[1], "2026-11-01T02:00:00+00:00", regressed=False)
    tonight = night(tmp_path / "tonight.json", shas[1], "2026-11-02T02:00:00+00:00", regressed=True)
    calm = night(tmp_path / "calm.json", shas[1], "2026-11-02T02:00:00+00:00", regressed=False)
    for results, why in [
        (calm, f"{calm} has no regressed test: nothing to bisect"),
        (tonight, f"no commit since the last good night ({shas[1][:9]}): the slowdown is not a change of this code"),
    ]:
        answer, page = tmp_path / "answer.json", tmp_path / "page.md"
        done = bisect(repo, "--regressed-in", str(results), "--good-from", str(history), "--json", str(answer),
                      "--markdown", str(page), "--", "--device", "cpu")  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert page.read_text() == f"pytest-accel bisect: {why}\n" and why in done.stdout
        assert json.loads(answer.read_text())["nothing_to_bisect"] == why


def test_a_culprit_that_is_not_slower_alone_is_doubted_on_the_page_and_in_the_answer() -> None:
    """A step can misread a harmless commit as slower; the culprit's own sitting (its parent against it) is
    the check, and the page says when it read no slowdown, or could not tell (quiet-4's math prefill
    kernel: +13.5% [-0.6% .. +29.6%] alone, docs/studies/bisect), which is not a reading of no slowdown."""
    from pytest_accel.commands.bisect import Bisect, BisectSettings, Reading, _finding_lines, document
    from pytest_accel.judgement.bisection import Bisection, Finding

    commits = [f"{i:x}" * 40 for i in range(10, 15)]
    bisect = Bisect(BisectSettings(("t.py",), "good", "bad"), Path("."), commits, dict.fromkeys(commits, "a change"))
    a, b, c = "t.py::test_k[a]", "t.py::test_k[b]", "t.py::test_k[c]"
    bisect.tests = (a, b, c)
    bisect.whole = {t: Reading(Outcome.REGRESSED, 1.15, 1.10, 1.20, 9) for t in (a, b, c)}
    bisect.evidence = {
        (a, 3): (Reading(Outcome.REGRESSED, 1.14, 1.09, 1.19, 10), ()),
        (b, 3): (Reading(Outcome.UNCHANGED, 1.004, 0.98, 1.03, 10), ()),
        (c, 3): (Reading(Outcome.INCONCLUSIVE, 1.135, 0.994, 1.296, 20), ()),
    }
    bisect.rechecked = {(b, 3): Reading(Outcome.REGRESSED, 1.06, 1.01, 1.11, 20)}
    bisection = Bisection(commits, [a, b, c])
    bisection.searches = {}
    bisection.findings = {t: [Finding(0, 2, (3,), "good")] for t in (a, b, c)}
    assert _finding_lines(bisect, bisection) == [
        'culprit: ddddddddd "a change", for 3 test(s):',
        "| test | good -> bad | the culprit alone (its parent -> it) | of the change |",
        "|---|---|---|---|",
        "| test_k[a] | +15.0% [+10.0% .. +20.0%] | +14.0% [+9.0% .. +19.0%] | the whole change |",
        "| test_k[b] | +15.0% [+10.0% .. +20.0%] | +0.4% [-2.0% .. +3.0%] | the whole change |",
        "| test_k[c] | +15.0% [+10.0% .. +20.0%] | +13.5% [-0.6% .. +29.6%] | the whole change |",
        "not slower alone: the culprit against its parent read no slowdown; measured again: test_k[b] against "
        "aaaaaaaaa: +6.0% [+1.0% .. +11.0%] (regressed); check: pytest-accel ab ccccccccc ddddddddd -- <the same "
        "tests>",
        "undecided alone: the culprit against its parent could not tell, for test_k[c]; the steps before it read "
        "it slower; check: pytest-accel ab ccccccccc ddddddddd -- <the same tests>",
        "",
    ]
    answer = document(bisect, bisection, 1)["findings"]
    assert [answer[t][0]["slower_alone"] for t in (a, b, c)] == [True, False, None]


def test_a_narrowed_range_says_which_of_its_commits_other_tests_named() -> None:
    """quiet-4 (docs/studies/bisect): 7 tests named commit 4; the math decode kernel, undecided at commits
    1-3, was narrowed to commits 1-4. The page points at commit 4 without claiming it (golden)."""
    from pytest_accel.commands.bisect import Bisect, BisectSettings, Reading, _finding_lines
    from pytest_accel.judgement.bisection import Bisection, Finding

    commits = [f"{i:x}" * 40 for i in range(10, 16)]
    bisect = Bisect(BisectSettings(("t.py",), "good", "bad"), Path("."), commits, dict.fromkeys(commits, "perf"))
    a, b = "t.py::test_k[a]", "t.py::test_k[b]"
    bisect.tests = (a, b)
    bisect.whole = {t: Reading(Outcome.REGRESSED, 1.15, 1.10, 1.20, 9) for t in (a, b)}
    bisect.evidence = {(a, 4): (Reading(Outcome.REGRESSED, 1.14, 1.09, 1.19, 10), ())}
    bisection = Bisection(commits, [a, b])
    bisection.searches = {}
    bisection.findings = {a: [Finding(0, 3, (4,), "good")], b: [Finding(0, 0, (1, 2, 3, 4), "good")]}
    lines = _finding_lines(bisect, bisection)
    assert lines[:2] == [
        "narrowed to 4 commits, bbbbbbbbb .. eeeeeeeee (some could not be judged), for 1 test(s):",
        'within it, eeeeeeeee "perf" is the culprit of 1 other test(s): likely the same change, not shown to be; '
        "check: pytest-accel ab ddddddddd eeeeeeeee -- <this test>",
    ]
    assert 'culprit: eeeeeeeee "perf", for 1 test(s):' in lines


def test_a_culprit_read_not_slower_twice_is_withdrawn_on_the_page_and_in_the_answer() -> None:
    """quiet-2's misread commit (docs/studies/bisect), had it been measured again against its anchor."""
    from pytest_accel.commands.bisect import Bisect, BisectSettings, Reading, _withdrawn_lines, document
    from pytest_accel.judgement.bisection import Bisection, Finding

    commits = [f"{i:x}" * 40 for i in range(10, 15)]
    bisect = Bisect(BisectSettings(("t.py",), "good", "bad"), Path("."), commits, dict.fromkeys(commits, "docs"))
    a, b = "t.py::test_k[a]", "t.py::test_k[b]"
    bisect.tests = (a, b)
    bisect.evidence = {(a, 2): (Reading(Outcome.UNCHANGED, 0.969, 0.918, 1.023, 40), ())}
    bisect.rechecked = {(a, 2): Reading(Outcome.UNCHANGED, 1.004, 0.97, 1.04, 20)}
    bisection = Bisection(commits, [a, b])
    bisection.searches = {}
    bisection.findings = {a: [Finding(0, 1, (2,), "bad"), Finding(2, 3, (4,), "")], b: [Finding(0, 3, (4,), "")]}
    bisection.withdraw(a, 2)
    assert _withdrawn_lines(bisect, bisection) == [
        'withdrawn: ccccccccc "docs" for test_k[a]: a step read it slower, but against its parent it read -3.1% '
        "[-8.2% .. +2.3%] and again against aaaaaaaaa +0.4% [-3.0% .. +4.0%]: a misreading; the search went on "
        "after it"
    ]
    withdrawn = document(bisect, bisection, 1)["withdrawn"]
    assert list(withdrawn) == [a] and withdrawn[a][0]["suspects"] == [commits[2]]
    assert withdrawn[a][0]["again"]["ratio"] == 1.004


def test_a_misread_culprit_is_rechecked_withdrawn_and_the_search_finds_the_real_one() -> None:
    """The whole loop with its sittings played by an oracle: commit 6 made the test slower; the first
    step that measures commit 4 misreads it as slower (as quiet-2's bimodal kernel did)."""
    from pytest_accel.commands.bisect import Bisect, BisectSettings, Reading, pin, report
    from pytest_accel.judgement.bisection import Bisection

    commits = [f"{i:x}" * 40 for i in range(16)][:9]
    bisect = Bisect(BisectSettings(("t.py",), "good", "bad"), Path("."), commits, dict.fromkeys(commits, "a change"))
    t = "t.py::test_k"
    bisect.tests, bisect.whole = (t,), {t: Reading(Outcome.REGRESSED, 1.15, 1.10, 1.20, 9)}
    bisect.change = dict(bisect.whole)
    asked: list[tuple[str, int, int]] = []

    def reading(base: int, head: int) -> Reading:
        slower = (head >= 6 > base) or (head == 4 and not any(k == "search" and h == 4 for k, _, h in asked[:-1]))
        return Reading(Outcome.REGRESSED, 1.15, 1.1, 1.2, 10) if slower else Reading(Outcome.UNCHANGED, 1.0, 0.97, 1.03)

    def measure(kind: str, base: int, head: int, tests: tuple[str, ...], first_try: int = 0) -> object:
        asked.append((kind, base, head))
        return {test: reading(base, head) for test in tests}, False

    def sitting(kind: str, base: int, head: int, tests: tuple[str, ...], *_: object, **__: object) -> object:
        asked.append((kind, base, head))
        return SimpleNamespace(tracks={}), {test: reading(base, head) for test in tests}

    bisect.measure, bisect._sitting = measure, sitting  # type: ignore[method-assign]
    bisection = Bisection(commits, [t])
    pin(bisect, bisection)
    # the rest (8 against 4) read slower, so a second search from 4 found 6; 4 is then withdrawn
    assert [(f.culprit, f.anchor) for f in bisection.findings[t]] == [(6, 4)]
    assert [f.culprit for f in bisection.withdrawn[t]] == [4]
    assert ("recheck", 0, 4) in asked and ("culprit", 5, 6) in asked
    assert bisect.rechecked[(t, 4)] is not None and not bisect.stopped
    page = report(bisect, bisection, 1)
    assert "| +15.0% [+10.0% .. +20.0%] | the whole change |" in page and "withdrawn: 444444444" in page


def test_a_step_measured_longer_continues_the_pairs_of_its_shorter_sittings() -> None:
    """A test a step's sitting left undecided is measured again with that sitting's pairs carried on (one
    sequential test per step, docs/studies/bisect); a test it decided is not measured again."""
    from pytest_accel.commands.bisect import Bisect, BisectSettings, Reading

    commits = [f"{i:x}" * 40 for i in range(3)]
    bisect = Bisect(BisectSettings(("t.py",), "good", "bad"), Path("."), commits, dict.fromkeys(commits, "docs"))
    a, b = "t.py::test_k[a]", "t.py::test_k[b]"
    calls: list[tuple[object, ...]] = []

    def sitting(kind: str, base: int, head: int, tests: tuple[str, ...], minutes: float, try_: int = 0,
                operators: bool = False, earlier: dict | None = None) -> object:  # fmt: skip
        carried = {key: len(ratios) for key, ratios in (earlier or {}).items()}
        calls.append((kind, try_, tuple(tests), carried))
        pairs = 20 * 2**try_ + max(carried.values(), default=0)
        tracks = {(t, "throughput"): SimpleNamespace(log_ratios=[0.0] * pairs) for t in tests or (a, b)}
        said = {t: Reading(Outcome.INCONCLUSIVE, 1.0, 0.9, 1.1, pairs) for t in tests or (a, b)}
        if not tests:
            said[b] = Reading(Outcome.UNCHANGED, 1.0, 0.98, 1.02, pairs)
        return SimpleNamespace(tracks=tracks), said

    bisect._sitting = sitting  # type: ignore[method-assign]
    readings, cut = bisect.measure("range", 0, 2, ())
    assert calls == [
        ("range", 0, (), {}),
        ("range", 1, (a,), {(a, "throughput"): 20}),
        ("range", 2, (a,), {(a, "throughput"): 60}),
    ]
    assert bisect.tests == (a, b) and readings is not None and not cut
    assert readings[a].pairs == 140 and readings[b].outcome is Outcome.UNCHANGED
