"""The environment as part of the build: its fingerprint, what changed between two, where recordings keep it,
and the setup a user can restore: a figure whose setup differs from its baseline's is not judged, and fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import FAST_OPTIONS, PERF_TEST

from pytest_accel.core.environment import Environment, steering
from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome
from pytest_accel.core.validation import Invalid
from pytest_accel.engine.devices import hostalloc
from pytest_accel.engine.environment import take_environment
from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.gate import Gate, GateMode, run_gate
from pytest_accel.judgement.recording import orphaned_tests
from pytest_accel.judgement.verdict import VerdictPolicy
from pytest_accel.outputs.terminal import orphan_lines
from pytest_accel.storage.environments import EnvironmentStore
from pytest_accel.storage.files import StoreError

THEN = Environment({
    "dist diffusers": "0.30.0#aa", "dist mylib": "1.0#bb", "dist xformers": "0.0.28#cc", "env OMP_NUM_THREADS": "1",
    "file sitecustomize.py": "dd",
})  # fmt: skip


def test_what_changed_is_said_in_a_persons_words_distributions_first() -> None:
    now = Environment({
        "dist diffusers": "0.31.0#ee", "dist mylib": "1.0#ff", "dist transformers": "4.44.0#11",
        "env LD_PRELOAD": "/usr/lib/libjemalloc.so.2", "plugin spin_late": "22", "file sitecustomize.py": "33",
    })  # fmt: skip
    assert THEN.changes(now) == (
        "diffusers 0.30.0 -> 0.31.0",
        "mylib 1.0 rebuilt (its files changed)",
        "transformers 4.44.0 installed",
        "xformers 0.0.28 removed",
        "plugin spin_late added",
        "LD_PRELOAD unset -> '/usr/lib/libjemalloc.so.2'",
        "OMP_NUM_THREADS '1' -> unset",
        "start-up file sitecustomize.py changed",
    )
    assert THEN.changes(Environment(dict(THEN.parts))) == ()
    assert THEN.digest == Environment(dict(reversed(list(THEN.parts.items())))).digest != now.digest


PART_NAMES = st.sampled_from(["dist", "plugin", "env", "file"]).flatmap(
    lambda kind: st.text(min_size=1, max_size=8).map(lambda name: f"{kind} {name}")
)


@given(st.dictionaries(PART_NAMES, st.text(max_size=12)))
def test_an_environment_survives_its_file(parts: dict[str, str]) -> None:
    environment = Environment(parts)
    stored = json.loads(json.dumps(environment.to_json()))
    assert Environment.from_json(stored, "e.json") == environment


def test_a_file_whose_digest_is_not_its_parts_is_refused() -> None:
    stored = THEN.to_json()
    with pytest.raises(Invalid, match="is not the digest of its parts"):
        Environment.from_json({**stored, "digest": "0" * 16}, "e.json")
    with pytest.raises(Invalid, match="expected '<kind> <name>'"):
        Environment.from_json({**stored, "parts": {"python 3.11": "x"}}, "e.json")


def test_the_variables_that_steer_are_kept_and_the_others_not() -> None:
    kept = steering({
        "OMP_NUM_THREADS": "1", "LD_PRELOAD": "x.so", "PT_HPU_LAZY_MODE": "0", "TORCHINDUCTOR_MAX_AUTOTUNE": "1",
        "CUDA_VISIBLE_DEVICES": "3", "PYTEST_ACCEL_LIFELINE_FD": "5", "HOME": "/root", "PATH": "/bin",
        "OMPX": "no prefix match",
    })  # fmt: skip
    assert kept == {
        "LD_PRELOAD": "x.so", "OMP_NUM_THREADS": "1", "PT_HPU_LAZY_MODE": "0", "TORCHINDUCTOR_MAX_AUTOTUNE": "1"
    }  # fmt: skip


def _distribution(folder: Path, name: str, version: str, record: str) -> None:
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(record)


def test_a_library_upgraded_or_rebuilt_a_plugin_and_a_variable_change_the_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repository, outside = tmp_path / "repo", tmp_path / "site"
    repository.mkdir()
    _distribution(outside / "v1", "planted-lib", "1.0", "planted_lib/__init__.py,sha256=aaa,10\n")
    _distribution(outside / "v1b", "planted-lib", "1.0", "planted_lib/__init__.py,sha256=bbb,12\n")
    _distribution(outside / "v2", "planted-lib", "2.0", "planted_lib/__init__.py,sha256=ccc,14\n")
    plugin_file = outside / "spin_late.py"
    plugin_file.write_text("def pytest_configure(config):\n    pass\n")
    plugin = types.ModuleType("spin_late")
    plugin.__file__ = str(plugin_file)
    own = types.ModuleType("conftest")
    own.__file__ = str(repository / "conftest.py")  # the repository's own code is not its environment

    def taken(where: str, plugins: list[tuple[str, object]], **variables: str) -> Environment:
        with monkeypatch.context() as patch:
            patch.syspath_prepend(str(outside / where))
            return take_environment(repository, plugins, variables)

    base = taken("v1", [("conftest", own)])
    assert base.parts["dist planted-lib"].startswith("1.0#")
    assert not any(key.startswith("plugin") or key.startswith("env") for key in base.parts)
    assert base.changes(taken("v2", [("conftest", own)])) == ("planted-lib 1.0 -> 2.0",)
    assert base.changes(taken("v1b", [("conftest", own)])) == ("planted-lib 1.0 rebuilt (its files changed)",)
    assert base.changes(taken("v1", [("conftest", own), ("spin_late", plugin)])) == ("plugin spin_late added",)
    assert base.changes(taken("v1", [], OMP_NUM_THREADS="1")) == ("OMP_NUM_THREADS unset -> '1'",)


def test_the_build_metadata_in_an_editable_source_tree_names_the_same_build_as_its_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pip install -e .`` leaves ``<name>.egg-info`` (no RECORD) in the source tree: a process started there
    finds it first on its path, one started elsewhere the installed record; both name the same build."""
    repository, site = tmp_path / "repo", tmp_path / "site"
    egg = repository / "planted_lib.egg-info"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: planted-lib\nVersion: 1.0\n")
    _distribution(site, "planted-lib", "1.0", "planted_lib/__init__.py,sha256=aaa,10\n")

    def taken(*path: Path) -> Environment:
        with monkeypatch.context() as patch:
            for folder in reversed(path):
                patch.syspath_prepend(str(folder))
            return take_environment(tmp_path / "elsewhere", [])

    in_the_tree, elsewhere = taken(repository, site), taken(site)
    assert in_the_tree.parts["dist planted-lib"] == elsewhere.parts["dist planted-lib"]


def test_an_environment_is_kept_once_per_device_and_read_back(tmp_path: Path) -> None:
    store = EnvironmentStore(tmp_path)
    path = store.save("cpu-x-2c", THEN)
    assert path == tmp_path / "environment" / "cpu-x-2c" / f"{THEN.digest}.json"
    written = path.stat().st_mtime_ns
    store.save("cpu-x-2c", THEN)
    assert path.stat().st_mtime_ns == written  # the name is the content: never rewritten
    assert store.load("cpu-x-2c", THEN.digest) == THEN
    assert store.load("cpu-x-2c", "0123456789abcdef") is None
    path.write_text("{")
    with pytest.raises(StoreError, match=str(path)):
        store.load("cpu-x-2c", THEN.digest)


RECORDED = {"host_allocator": "glibc-steady-huge", "cpu_threads": "1", "environment": "e1"}
ENTRY = BaselineEntry("t.py::test_k", "throughput", "calls", 1.0, (0.01,) * 5, provenance=RECORDED)
MEASURED = Measurement("calls", 1.0, (0.01,) * 5)
CAUSE = ("torch allocated memory before pytest-accel asked for huge pages", "create no tensor before pytest starts")


def judged(mode: GateMode, provenance: dict[str, str], entry: BaselineEntry | None = ENTRY) -> tuple[Outcome, str]:
    gate = Gate(lambda: {} if entry is None else {(entry.test, entry.metric): entry}, provenance, mode, Path("."),
                gate_memory=True, setup_causes={"host_allocator": CAUSE})  # fmt: skip
    result = gate.judge("t.py::test_k", MEASURED, VerdictPolicy(), lambda: MEASURED)
    return result.time.outcome, result.failure or ""


def test_a_setup_the_user_can_restore_fails_its_test_naming_the_cause_unless_allowed() -> None:
    mismatch = {**RECORDED, "host_allocator": "glibc-steady"}
    outcome, failure = judged(GateMode(), mismatch)
    assert outcome is Outcome.NOISY
    assert failure.splitlines()[:2] == [
        "perf not judged: the setup differs from the baseline's (--accel-allow-setup-mismatch passes it): test_k",
        "  not judged (setup: host_allocator glibc-steady-huge -> glibc-steady); to judge it: create no tensor "
        "before pytest starts",
    ]
    assert judged(GateMode(allow_setup_mismatch=True), mismatch) == (Outcome.NOISY, "")
    assert judged(GateMode(), {**RECORDED, "cpu_threads": "2"})[1].startswith("perf not judged: the setup differs")
    assert judged(GateMode(update=True), mismatch) == (Outcome.NOISY, "")  # recording reports, fails nothing
    assert judged(GateMode(), RECORDED)[0] is not Outcome.NOISY  # the same setup is judged


def test_strict_fails_what_it_could_not_compare_too() -> None:
    assert judged(GateMode(), RECORDED, entry=None) == (Outcome.NEW, "")
    outcome, failure = judged(GateMode(strict=True), RECORDED, entry=None)
    assert outcome is Outcome.NEW
    assert failure.startswith("perf not judged: nothing comparable to judge it against (and --accel-strict is set)")


@pytest.mark.skipif(hostalloc._glibc() is None, reason="needs glibc: the system allocator differs from steady")
def test_a_run_in_another_setup_than_its_baseline_fails_and_says_how_to_restore_it(
    perf_pytester: pytest.Pytester,
) -> None:
    perf_pytester.makepyfile(test_perf=PERF_TEST)
    options = ("--device", "cpu", "--accel-baselines", "bl", *FAST_OPTIONS)
    perf_pytester.runpytest_subprocess(*options, "--accel-update").assert_outcomes(passed=1)
    folders = (perf_pytester.path / "bl").iterdir()
    (key,) = (path.name for path in folders if path.name not in ("structure", "environment"))
    entries = json.loads((perf_pytester.path / "bl" / key / "smoke.json").read_text())["entries"]
    digest = entries["test_perf.py::test_matmul"]["throughput"]["provenance"]["environment"]
    assert (perf_pytester.path / "bl" / "environment" / key / f"{digest}.json").is_file()

    other = perf_pytester.runpytest_subprocess(*options, "--accel-host-allocator", "system")
    assert other.ret == 1, other.stdout.str()
    other.stdout.fnmatch_lines([
        "*perf not judged: the setup differs from the baseline's*",
        "*not judged (setup: host_allocator glibc-steady* -> glibc*); to judge it: run with the steady host allocator*",
    ])  # fmt: skip
    assert "--accel-reset-history" not in other.stdout.str()  # never advice to record over a good baseline
    allowed = perf_pytester.runpytest_subprocess(
        *options, "--accel-host-allocator", "system", "--accel-allow-setup-mismatch"
    )
    assert allowed.ret == 0, allowed.stdout.str()
    allowed.stdout.fnmatch_lines(["accel: NOT JUDGED: 1 of 1 figures*"])


def test_the_users_variables_are_fingerprinted_without_what_pytest_accel_set(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(hostalloc.HUGE_PAGES_ENV, raising=False)
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    pytester.makeconftest(
        "import pytest\n\n@pytest.fixture\ndef parts(request):\n"
        "    return request.config.stash[__import__('pytest_accel.plugin').plugin.SESSION_KEY].parts\n"
    )
    pytester.makepyfile(
        test_env="def test_env(parts):\n    env = parts.environment().parts\n"
        "    assert env['env OMP_WAIT_POLICY'] == 'PASSIVE'\n"
        "    assert 'env THP_MEM_ALLOC_ENABLE' not in env\n"
    )
    result = pytester.runpytest_subprocess("--device", "cpu", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()


def test_a_script_that_imported_torch_before_pytest_main_still_gets_huge_pages(pytester: pytest.Pytester) -> None:
    """``python -c "import torch, pytest; pytest.main([...])"``: torch reads the huge-page variable at its first
    allocation, so the plugin's late ask still holds, and the figure is compared with its baseline."""
    if hostalloc._thp_setting() != "madvise":
        pytest.skip("needs transparent huge pages on madvise")
    pytester.makepyfile(
        test_env="def test_env(accel_device):\n    print('allocator:', accel_device.provenance()['host_allocator'])\n"
    )
    script = "import sys, torch, pytest; sys.exit(pytest.main(['-s', '-p', 'no:cacheprovider', '--device', 'cpu']))"
    environment = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", hostalloc.HUGE_PAGES_ENV)}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=pytester.path, env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "allocator: glibc-steady-huge" in done.stdout, done.stdout


BASE = Measurement("x", 1.0, tuple(0.01 * (1 + 0.01 * (i % 3)) for i in range(30)), probe_samples=(1e-3,) * 30)
# A slowdown of what the reference kernel runs too (torch's matmul, BLAS): both 40% slower, the ratio unmoved.
SHARED = replace(BASE, samples=tuple(s * 1.4 for s in BASE.samples), probe_samples=(1.4e-3,) * 30)


@pytest.mark.parametrize(
    ("then", "now", "outcome"),
    [("e1", "e2", Outcome.REGRESSED), ("e1", "e1", Outcome.UNCHANGED)],
    ids=["environment-changed", "environment-as-recorded"],
)
def test_a_slowdown_the_reference_kernel_shares_is_judged_on_raw_time_where_the_environment_changed(
    then: str, now: str, outcome: Outcome
) -> None:
    entry = BaselineEntry("t::k", "throughput", "x", 1.0, BASE.samples, BASE.probe_samples,
                          provenance={"environment": then})  # fmt: skip
    result = run_gate(SHARED, entry, VerdictPolicy(), {"environment": now}, lambda: SHARED, confirmations=0)
    assert result.time.outcome is outcome
    if outcome is Outcome.REGRESSED:
        assert result.time.ratio == pytest.approx(1.4, rel=0.01)
        assert "judged on raw time: the environment changed since the recordings and the reference kernel runs " \
            "+40.0% against them" in result.time.reason  # fmt: skip
    unmoved = replace(BASE, samples=tuple(s * 1.4 for s in BASE.samples))  # the reference as recorded: no sharing
    judged = run_gate(unmoved, entry, VerdictPolicy(), {"environment": now}, lambda: unmoved, confirmations=0)
    assert judged.time.outcome is Outcome.REGRESSED and "raw time" not in judged.time.reason


def test_a_baseline_left_behind_by_a_rename_is_named() -> None:
    baselined = ["t.py::test_a[old-id]", "t.py::test_b", "u.py::test_c"]
    collected = {"t.py::test_a[new-id]", "t.py::test_b"}
    new = ["t.py::test_a[new-id]"]
    orphans = orphaned_tests(baselined, collected, new)
    assert orphans == [("t.py::test_a[old-id]", ("t.py::test_a[new-id]",))]  # u.py ran nothing new: not judged
    assert orphaned_tests(baselined, {*collected, "t.py::test_a[old-id]"}, new) == []  # deselected, still there
    assert orphan_lines(orphans) == [
        "accel: 1 baseline left behind: no such test ran (renamed, or its parametrization changed?) while a new test "
        "of its file has none:",
        "accel:   test_a[old-id]  (new in its file: test_a[new-id])",
        "accel:   rename its entries in the baseline file, or drop them: pytest <same args> --accel-prune",
    ]


def test_a_thread_count_a_fixture_set_under_the_run_fails_the_test_naming_it(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makeconftest(
        "import pytest, torch\n\n@pytest.fixture(autouse=True)\ndef threads():\n    torch.set_num_threads(2)\n"
    )
    perf_pytester.makepyfile(test_perf=PERF_TEST)
    options = ("--device", "cpu", "--accel-cpu-threads", "1", *FAST_OPTIONS)
    result = perf_pytester.runpytest_subprocess(*options)
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines([
        "*perf not judged: throughput: the setup changed under the run: torch runs 2 threads, not the 1 this run "
        "measures with (--accel-cpu-threads): something set them after pytest-accel did*",
    ])  # fmt: skip
    perf_pytester.runpytest_subprocess(*options, "--accel-allow-setup-mismatch").assert_outcomes(passed=1)


@pytest.mark.skipif(hostalloc._glibc() is None, reason="needs glibc: the system allocator differs from steady")
def test_a_recording_in_another_setup_leaves_the_baseline_as_it_was(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_perf=PERF_TEST)
    options = ("--device", "cpu", "--accel-baselines", "bl", *FAST_OPTIONS)
    perf_pytester.runpytest_subprocess(*options, "--accel-update").assert_outcomes(passed=1)
    (stored,) = (perf_pytester.path / "bl").glob("cpu-*/smoke.json")
    before = stored.read_bytes()
    other = perf_pytester.runpytest_subprocess(*options, "--accel-host-allocator", "system", "--accel-update")
    assert other.ret == 0, other.stdout.str()
    other.stdout.fnmatch_lines([
        "accel: not recorded: test_perf.py::test_matmul: setup: host_allocator glibc-steady* -> glibc* since its "
        "baseline; run with the steady host allocator (the default)",
    ])  # fmt: skip
    assert stored.read_bytes() == before
