"""The suite spread over pytest-xdist workers, one card (or one slice of cores) each: the placement's pure
logic, then real xdist workers: on the CPU, and on fake Gaudi cards (tests/fakes/habana.py) whose workers
record the environment they saw before anything of theirs imported torch."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import FAST_OPTIONS, PERF_TEST

from pytest_accel.commands.absides import spread
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome
from pytest_accel.engine.cards import CardError, assign_cards, core_slices, visible_cards
from pytest_accel.engine.machine import _cpu_jiffies
from pytest_accel.judgement.baselines import BaselineEntry, BaselineStore, on_card
from pytest_accel.judgement.gate import run_gate
from pytest_accel.judgement.recording import recorded_entries
from pytest_accel.judgement.verdict import VerdictPolicy

TESTS = Path(__file__).resolve().parent


def test_the_cards_are_the_callers_visible_ones_in_order_else_every_card_counted() -> None:
    assert visible_cards("cuda", {"CUDA_VISIBLE_DEVICES": "2, 5,7"}, lambda: 8) == ("2", "5", "7")
    assert visible_cards("cuda", {"CUDA_VISIBLE_DEVICES": "GPU-1a,GPU-2b"}, lambda: 8) == ("GPU-1a", "GPU-2b")
    assert visible_cards("hpu", {"HABANA_VISIBLE_MODULES": ""}, lambda: 8) == ()  # the caller hid every card
    assert visible_cards("hpu", {}, lambda: 3) == ("0", "1", "2")


def test_each_worker_gets_a_card_of_its_own_within_the_callers_restriction() -> None:
    assert assign_cards("cuda", ("2", "5", "7"), 3) == ["2", "5", "7"]
    assert assign_cards("hpu", tuple(map(str, range(8))), 2) == ["0", "1"]


def test_more_workers_than_cards_names_both_counts_and_the_variable() -> None:
    with pytest.raises(
        CardError, match=r"-n 4: 4 workers but 3 cuda card\(s\) visible \(CUDA_VISIBLE_DEVICES: 2,5,7\)"
    ):
        assign_cards("cuda", ("2", "5", "7"), 4)
    with pytest.raises(CardError, match="no hpu card is visible"):
        assign_cards("hpu", (), 1)


@given(st.sets(st.integers(0, 63), min_size=1), st.integers(1, 64))
def test_core_slices_split_the_allowed_cpus_into_contiguous_even_slices(cpus: set[int], workers: int) -> None:
    if workers > len(cpus):
        with pytest.raises(CardError, match=f"{workers} workers but {len(cpus)} CPU"):
            core_slices(sorted(cpus), workers)
        return
    slices = core_slices(sorted(cpus), workers)
    assert [cpu for part in slices for cpu in part] == sorted(cpus)  # each CPU once, in order
    assert max(map(len, slices)) - min(map(len, slices)) <= 1 and min(map(len, slices)) >= 1


def test_the_host_share_of_a_pinned_process_reads_its_own_cores_only(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(
        "cpu  300 0 100 600 0 0 0 0 0 0\n"
        "cpu0 200 0 100 0 0 0 0 0 0 0\n"  # a sibling worker kept cpu0 busy
        "cpu1 100 0 0 600 0 0 0 0 0 0\n"
    )
    assert _cpu_jiffies(tmp_path) == (400, 1000)
    assert _cpu_jiffies(tmp_path, frozenset({1})) == (100, 700)
    assert _cpu_jiffies(tmp_path, frozenset({5})) is None  # no such CPU: unknown, not idle


# Each worker writes what it saw when its conftest was imported: its pin, before torch.
SEEN = """
import json, os, sys
sys.path.insert(0, {tests!r})
seen = {{"card": os.environ.get("HABANA_VISIBLE_MODULES"), "torch": "torch" in sys.modules,
        "cpus": sorted(os.sched_getaffinity(0))}}
with open("seen-" + os.environ.get("PYTEST_XDIST_WORKER", "main") + ".json", "w") as f:
    json.dump(seen, f)
"""

FAKE_CARDS = """
from fakes.habana import FakeHabana
fake = FakeHabana("gaudi2", True)
sys.modules.update(fake.modules)
"""

HPU_TEST = """
import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_card(accel_device, n):
    assert accel_device.kind == "hpu"
"""


def _seen(folder: Path) -> dict[str, dict[str, object]]:
    """What each worker saw (the controller, which measures nothing, writes ``seen-main``)."""
    return {path.stem.removeprefix("seen-"): json.loads(path.read_text()) for path in folder.glob("seen-gw*.json")}


@pytest.mark.slow
def test_cpu_workers_measure_on_their_own_cores_and_the_run_writes_one_table_one_file_and_every_baseline(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = perf_pytester.mkdir("scratch")  # the runs' temporary folder, where the controller keeps its board
    monkeypatch.setenv("TMPDIR", str(scratch))
    perf_pytester.makeconftest(SEEN.format(tests=str(TESTS)))
    perf_pytester.makepyfile(test_a=PERF_TEST, test_b=PERF_TEST.replace("test_matmul", "test_matmul_too"))
    run = ("--device", "cpu", "-n", "2", *FAST_OPTIONS, "--accel-json", "out.json", "--accel-baselines", "bl")
    recorded = perf_pytester.runpytest_subprocess(*run, "--accel-update")
    assert recorded.ret == 0, recorded.stdout.str()
    assert "automatically disabled" not in recorded.stdout.str() + recorded.stderr.str()  # pytest-benchmark's
    entries = BaselineStore(perf_pytester.path / "bl").load(json.loads((perf_pytester.path / "out.json").read_text())
                                                            ["device"]["key"], "smoke")  # fmt: skip
    assert sorted(test.rpartition("::")[2] for test, _ in entries) == ["test_matmul", "test_matmul_too"]
    seen = _seen(perf_pytester.path)
    assert set(seen) == {"gw0", "gw1"}
    cpus = [tuple(seen[w]["cpus"]) for w in ("gw0", "gw1")]  # type: ignore[arg-type]
    assert not set(cpus[0]) & set(cpus[1]) and all(not info["torch"] for info in seen.values())

    # Judged against both workers' recordings (a 64x64 matmul beside a busy CI host moves by more than 5%: the
    # tolerance is widened, as what is checked here is that each figure is judged, by one table and one file)
    judged = perf_pytester.runpytest_subprocess(*run, "-o", "accel_tolerance=10")
    assert judged.ret == 0, judged.stdout.str()
    assert judged.stdout.str().count("accel measurements") == 1  # one table, from the controller
    document = json.loads((perf_pytester.path / "out.json").read_text())
    assert [entry["test"].rpartition("::")[2] for entry in document["results"]] == ["test_matmul", "test_matmul_too"]
    assert document["device"]["key"].startswith("cpu-") and "gw0=cpus " in document["provenance"]["workers"]
    assert all(entry["verdict"]["time"]["outcome"] != "new" for entry in document["results"])  # both were recorded
    # each figure says how many of the run's other cards measured beside it: one worker's two tests, the sibling's
    # whole run at most; the board the workers said it on is gone with the run
    assert all(0.0 <= entry["state"]["busy_cards"] <= 1.0 for entry in document["results"])
    assert list(scratch.glob("pytest-accel-board-*")) == []

    # A slowdown (4 matmuls a call) under -n is confirmed by a fresh process measuring in the worker's place
    perf_pytester.makepyfile(test_a=PERF_TEST.replace("a @ a,", "[a @ a for _ in range(4)],"))
    slower = perf_pytester.runpytest_subprocess(*run)
    assert slower.ret == 1, slower.stdout.str()
    assert re.search(r"a fresh process \(\+\d", slower.stdout.str()), slower.stdout.str()


def _pinned(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, visible: str, workers: str) -> list[str]:
    """The cards a run's workers saw before anything imported torch (each asserting it had not)."""
    pytester.makeconftest(SEEN.format(tests=str(TESTS)) + FAKE_CARDS)
    pytester.makepyfile(test_cards=HPU_TEST.format(tests=8))
    monkeypatch.setenv("HABANA_VISIBLE_MODULES", visible)  # the caller's own restriction
    result = pytester.runpytest_subprocess("--device", "hpu", "-n", workers, "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    seen = _seen(pytester.path)
    assert not any(info["torch"] for info in seen.values())  # the pin was there before torch
    return sorted(str(info["card"]) for info in seen.values())


@pytest.mark.long  # three workers each importing torch; the fast set pins real workers' cores and refusals
@pytest.mark.filterwarnings("ignore::pytest_benchmark.logger.PytestBenchmarkWarning")
def test_hpu_workers_are_pinned_to_distinct_cards_inside_the_callers_restriction_before_torch(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _pinned(perf_pytester, monkeypatch, "1,4,6", "3") == ["1", "4", "6"]


@pytest.mark.long
@pytest.mark.filterwarnings("ignore::pytest_benchmark.logger.PytestBenchmarkWarning")
def test_auto_is_one_worker_per_visible_card_eight_workers_eight_cards(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _pinned(perf_pytester, monkeypatch, "0,1,2,3,4,5,6,7", "auto") == [str(card) for card in range(8)]


@pytest.mark.parametrize(
    ("args", "visible", "message"),
    [
        (
            ("--device", "hpu", "-n", "3"),
            "0,1",
            "*-n 3: 3 workers but 2 hpu card(s) visible (HABANA_VISIBLE_MODULES: 0,1)*",
        ),
        (("--device", "cpu", "-n", "2", "--accel-count"), "", "*--accel-count runs its own processes*-n 0*"),
    ],
)
def test_a_run_that_cannot_be_placed_is_a_usage_error_naming_why(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], visible: str, message: str
) -> None:
    perf_pytester.makepyfile(PERF_TEST)
    monkeypatch.setenv("HABANA_VISIBLE_MODULES", visible)
    result = perf_pytester.runpytest_subprocess(*args, *FAST_OPTIONS)
    assert result.ret in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR), result.stdout.str()
    (result.stderr if result.ret == pytest.ExitCode.USAGE_ERROR else result.stdout).fnmatch_lines([message])
    assert os.environ.get("HABANA_VISIBLE_MODULES") == visible


@pytest.mark.filterwarnings("ignore::pytest_benchmark.logger.PytestBenchmarkWarning")
def test_with_device_auto_other_tests_run_under_xdist_and_a_perf_test_fails_naming_why(
    perf_pytester: pytest.Pytester,
) -> None:
    perf_pytester.makepyfile(PERF_TEST + "\ndef test_plain():\n    pass\n")
    result = perf_pytester.runpytest_subprocess("-n", "2", *FAST_OPTIONS)  # --device auto: nothing placed
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*measures under xdist (-n) with a card (or cores) per worker*--device cuda, hpu or cpu*"]
    )


def test_a_test_that_hangs_in_a_worker_ends_it_named_and_the_run_ends(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_hang="import time\n\ndef test_hang():\n    time.sleep(300)\n",
                             test_fine="def test_fine():\n    pass\n")  # fmt: skip
    started = time.monotonic()
    result = perf_pytester.runpytest_subprocess("--device", "cpu", "-n", "2", "-p", "no:cacheprovider",
                                                "-o", "accel_worker_timeout_seconds=2")  # fmt: skip
    assert time.monotonic() - started < 120  # not the 300 s of the hung test
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running 'test_hang.py::test_hang'*"])
    result.stderr.fnmatch_lines(["accel: xdist worker gw* (cpus *) still in test_hang.py::test_hang after 2 s*",
                                 "*Timeout*", "*test_hang.py*in test_hang*"])  # fmt: skip


# Two tests of five minutes, each naming its worker's pid in a file.
LONG_TEST = """
import os, time

def test_long():
    open(f"pid-{os.getpid()}", "w").close()
    time.sleep(300)

def test_long_too():
    test_long()
"""


def test_workers_end_soon_after_their_controller_is_killed(perf_pytester: pytest.Pytester) -> None:
    """A killed controller tells its workers nothing; xdist's would go on with their test (holding their card)."""
    perf_pytester.makepyfile(test_long=LONG_TEST)
    command = [sys.executable, "-m", "pytest", "--device", "cpu", "-n", "2", "-p", "no:cacheprovider"]
    controller = subprocess.Popen(command, cwd=perf_pytester.path, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(pids := [int(p.name[4:]) for p in perf_pytester.path.glob("pid-*")]) < 2:
            assert time.monotonic() < deadline and controller.poll() is None, "the workers did not start their tests"
            time.sleep(0.2)
        controller.kill()
        controller.wait()
        deadline = time.monotonic() + 15
        while any(_alive(pid) for pid in pids):
            assert time.monotonic() < deadline, f"workers {pids} outlived their controller by 15 s"
            time.sleep(0.2)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(controller.pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")  # a zombie nobody reaped yet is gone for this purpose
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


# -- a figure judged on its own card's recordings ---------------------------------------------------------


def _timed(seconds: float, seed: int, card: str = "") -> Measurement:
    rng = random.Random(seed)
    times = tuple(seconds * (1 + rng.gauss(0, 0.01)) for _ in range(30))
    return Measurement(unit="images", items_per_call=2.0, samples=times, probe_samples=(1e-3,) * 30,
                       extra={"card": card} if card else {})  # fmt: skip


def _recorded(cards_and_levels: list[tuple[str, float]]) -> BaselineEntry:
    """An entry recorded on these cards in turn, at these levels (seconds per call, a 1 ms probe)."""
    entry = None
    for index, (card, seconds) in enumerate(cards_and_levels):
        taken = _timed(seconds, seed=index, card=card)
        entry = recorded_entries([("t::x", taken)], {} if entry is None else {("t::x", "throughput"): entry},
                                 {}, {}, reset=False, now=f"2026-12-0{index + 1}T00:00:00+00:00")[0]  # fmt: skip
    assert entry is not None
    return entry


def test_each_recording_keeps_its_card_and_older_ones_read_unknown() -> None:
    entry = _recorded([("", 0.010), ("3", 0.010), ("5", 0.013)])
    assert entry.run_cards == ("", "3", "5") and len(entry.run_medians) == 3
    again = BaselineEntry.from_json(entry.test, entry.metric, json.loads(json.dumps(entry.to_json())), "file")
    assert again.run_cards == entry.run_cards
    assert "run_cards" not in _recorded([("", 0.010), ("", 0.010)]).to_json()  # nothing to say: not written


def test_a_figure_is_judged_on_its_own_cards_recordings_where_it_has_two() -> None:
    # Card 5 runs 30% slower than card 3, steadily: each card's figure is judged against its own level.
    entry = _recorded([("3", 0.010), ("5", 0.013), ("3", 0.010), ("5", 0.013)])
    assert on_card(entry, "5").run_medians == pytest.approx((13.0, 13.0), rel=0.01)
    assert on_card(entry, "7") is entry and on_card(entry, None) is entry  # none of its own: the card class's
    assert on_card(_recorded([("3", 0.010), ("5", 0.013)]), "5").run_cards == ("3", "5")  # one: not enough

    def judged(card: str, seconds: float) -> Outcome:
        taken = _timed(seconds, seed=11, card=card)
        return run_gate(taken, on_card(entry, card), VerdictPolicy(), {}, lambda: taken, 0).time.outcome

    assert judged("5", 0.013) is Outcome.UNCHANGED and judged("3", 0.010) is Outcome.UNCHANGED
    assert judged("3", 0.013) is Outcome.REGRESSED  # card 5's level is a slowdown on card 3
    taken = _timed(0.013, seed=11, card="3")  # which the card class's recordings, 30% apart, cannot see
    assert run_gate(taken, entry, VerdictPolicy(), {}, lambda: taken, 0).time.outcome is not Outcome.REGRESSED


# Each test says which worker ran it, on which cores
WHERE = """
import json, os, pathlib, pytest

@pytest.mark.parametrize("n", range(5))
def test_where(n):
    seen = {"worker": os.environ["PYTEST_XDIST_WORKER"], "cpus": sorted(os.sched_getaffinity(0))}
    pathlib.Path(f"where-{n}.json").write_text(json.dumps(seen))
"""


def test_fixed_cards_put_each_test_on_the_same_worker_and_cores_every_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_where=WHERE)
    runs = []
    for _ in range(2):
        result = pytester.runpytest_subprocess(
            "--device", "cpu", "-n", "2", "--accel-fixed-cards", "-p", "no:cacheprovider"
        )
        result.assert_outcomes(passed=5)
        runs.append({n: json.loads((pytester.path / f"where-{n}.json").read_text()) for n in range(5)})
    assert runs[0] == runs[1]  # the same worker and cores for each test, run after run
    assert [runs[0][n]["worker"] for n in range(5)] == ["gw0", "gw1", "gw0", "gw1", "gw0"]  # test k on worker k mod 2
    assert runs[0][0]["cpus"] != runs[0][1]["cpus"]


def test_ab_knows_when_its_runs_spread_over_workers() -> None:
    assert spread(["x.py", "-n", "2"]) and spread(["-n4"]) and spread(["--numprocesses=auto"])
    assert not spread(["-n", "0"]) and not spread(["-k", "n"]) and not spread(["--", "-n", "2"])


AB_TEST = """
import pytest

@pytest.mark.parametrize("n", range(4))
def test_work(throughput, n):
    throughput(lambda: sum(range(2000 * (n + 1))), items=1, unit="calls")
"""


@pytest.mark.slow
def test_ab_spread_over_workers_measures_both_builds_of_a_test_on_one_card(tmp_path: Path) -> None:
    """``ab ... -- -n 2``: each run of a pair spreads the tests over two workers, and a test is on the same card
    (here: the same cores) in both builds' runs."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_perf.py").write_text(AB_TEST)
    (project / "pytest.ini").write_text("[pytest]\naccel_warmup_max_seconds = 0.1\naccel_measure_seconds = 0.1\n")
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"]):
        subprocess.run(["git", *command], cwd=project, check=True)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_accel", "ab", "--base", "HEAD", "--max-pairs", "3", "--no-operators", "--",
         "test_perf.py", "--device", "cpu", "-n", "2", "-q"],
        cwd=project, capture_output=True, text=True, timeout=600, env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode in (0, 125), done.stdout + done.stderr
    runs = project / ".pytest-accel-ab" / "runs"
    cards: dict[str, set[str]] = {}
    for pair in ("01", "02", "03"):
        sides = [
            {e["test"]: e["extra"]["card"] for e in json.loads((runs / f"{side}-{pair}.json").read_text())["results"]}
            for side in ("base", "head")
        ]
        assert sides[0] == sides[1] and len(sides[0]) == 4, sides  # each test on one card in both builds
        for test, card in sides[0].items():
            cards.setdefault(test, set()).add(card)
    assert len({card for seen in cards.values() for card in seen}) == 2  # both cards measured
