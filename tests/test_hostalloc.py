"""The CPU's host allocator mode: what it sets, what it reports, and that figures under different
modes are never compared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pytest_accel.core.measurement import Measurement
from pytest_accel.engine.devices import hostalloc
from pytest_accel.engine.devices.cpu import CpuDevice
from pytest_accel.engine.devices.hostalloc import configure_host_allocator, release_free_memory
from pytest_accel.judgement.baselines import BaselineEntry

glibc_only = pytest.mark.skipif(hostalloc._glibc() is None, reason="needs glibc's mallopt and malloc_trim")


def _resident_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_an_unknown_mode_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown host allocator mode 'fast': choose one of steady, system"):
        configure_host_allocator("fast")


@pytest.mark.parametrize(
    ("preload", "reported"),
    [
        ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "preloaded:libjemalloc.so.2"),
        ("libfoo.so:/opt/libtcmalloc_minimal.so.4", "preloaded:libtcmalloc_minimal.so.4"),
    ],
)
def test_a_preloaded_allocator_is_left_alone_and_named(
    monkeypatch: pytest.MonkeyPatch, preload: str, reported: str
) -> None:
    monkeypatch.setenv("LD_PRELOAD", preload)
    monkeypatch.setattr(hostalloc, "_glibc", lambda: pytest.fail("mallopt must not be called"))
    assert configure_host_allocator("steady") == reported
    release_free_memory()  # nothing to trim in glibc: the preloaded allocator owns the heap


def test_without_glibc_nothing_is_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.setattr(hostalloc, "_glibc", lambda: None)
    assert configure_host_allocator("steady") == "system"
    assert configure_host_allocator("system") == "system"


@glibc_only
def test_steady_keeps_freed_memory_until_released(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    assert configure_host_allocator("steady") == "glibc-steady"
    # Once applied it cannot be undone in this process; the report says what runs, not what was asked.
    assert configure_host_allocator("system") == "glibc-steady"
    release_free_memory()
    before = _resident_bytes()
    block = torch.ones(64 * 2**20 // 4)  # 64 MiB, every page touched: glibc would mmap and unmap it
    del block
    kept = _resident_bytes() - before
    release_free_memory()
    released = _resident_bytes() - before
    assert kept >= 48 * 2**20, f"steady mode returned the freed block ({kept} bytes still resident)"
    assert released <= 16 * 2**20, f"malloc_trim kept {released} bytes"


def test_the_cpu_reports_its_allocator_and_a_baseline_under_another_is_a_setup_mismatch() -> None:
    device = CpuDevice(1, "steady")
    device.activate()
    now = dict(device.provenance())
    assert now["host_allocator"].removesuffix("-huge") in ("glibc-steady", "system") or now[
        "host_allocator"
    ].startswith("preloaded:")
    recorded = {**now, "host_allocator": "glibc"}
    entry = BaselineEntry("t.py::test_k", "throughput", "calls", 1.0, (0.005,) * 5, provenance=recorded)
    measured = Measurement("calls", 1.0, (0.01,) * 5)
    assert entry.incomparable(measured, now) is None  # the same hardware: not "new"
    assert entry.setup_differs(now) == (
        f"host_allocator glibc -> {now['host_allocator']}",
        f"the baseline was recorded with host_allocator=glibc, this run has host_allocator={now['host_allocator']}",
    )
    old = BaselineEntry("t.py::test_k", "throughput", "calls", 1.0, (0.005,) * 5, provenance={
        k: v for k, v in now.items() if k != "host_allocator"
    })  # fmt: skip
    assert "does not say its host_allocator" in str(old.incomparable(measured, now))
    assert old.setup_differs(now) is None


@pytest.mark.parametrize(
    ("text", "mode"),
    [("always [madvise] never\n", "madvise"), ("[always] madvise never\n", "always"), ("madvise [never]", "never")],
)
def test_the_kernels_huge_page_mode_is_the_bracketed_word(tmp_path: Path, text: str, mode: str) -> None:
    setting = tmp_path / "enabled"
    setting.write_text(text)
    assert hostalloc._thp_setting(setting) == mode
    assert hostalloc._thp_setting(tmp_path / "absent") is None


@pytest.mark.parametrize(
    ("mode", "kernel", "given", "expected"),
    [
        ("steady", "madvise", {}, "1"),
        ("steady", "always", {}, "1"),
        ("system", "madvise", {}, None),  # the system mode leaves torch's allocator as it is
        ("steady", "never", {}, None),  # nothing to ask for
        ("steady", None, {}, None),  # not Linux, or no transparent huge pages
        ("steady", "madvise", {hostalloc.HUGE_PAGES_ENV: "0"}, "0"),  # the user's word stands
    ],
)
def test_the_steady_mode_asks_torch_for_huge_pages_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch, mode: str, kernel: str | None, given: dict[str, str], expected: str | None
) -> None:
    monkeypatch.setattr(hostalloc, "_thp_setting", lambda: kernel)
    environment = dict(given)
    assert hostalloc.ask_for_huge_pages(mode, environment) is (expected == "1" and not given)
    assert environment.get(hostalloc.HUGE_PAGES_ENV) == expected


def test_the_variable_pytest_accel_set_is_not_the_users(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hostalloc, "_thp_setting", lambda: "madvise")
    asked: dict[str, str] = {"OMP_NUM_THREADS": "1"}
    assert hostalloc.ask_for_huge_pages("steady", asked)
    assert hostalloc.as_the_user_set(asked) == {"OMP_NUM_THREADS": "1"}
    set_by_the_user = {hostalloc.HUGE_PAGES_ENV: "0"}
    assert not hostalloc.ask_for_huge_pages("steady", set_by_the_user)
    assert hostalloc.as_the_user_set(set_by_the_user) == {hostalloc.HUGE_PAGES_ENV: "0"}


# Torch reads THP_MEM_ALLOC_ENABLE at its first CPU allocation, not at its import: a process that imported
# torch (as a script calling pytest.main, or a -p plugin) still gets huge pages when asked; one that allocated
# a tensor first does not.
_LATE_ASK = (
    "import torch\n{before}from pytest_accel.engine.devices import hostalloc\n"
    "assert hostalloc.ask_for_huge_pages('steady')\nprint(hostalloc.large_blocks_on_huge_pages())"
)


@pytest.mark.skipif(hostalloc._thp_setting() != "madvise", reason="needs transparent huge pages on madvise")
@pytest.mark.parametrize(("before", "huge"), [("", "True"), ("torch.zeros(10)\n", "False")])
def test_huge_pages_asked_after_torchs_import_hold_until_its_first_allocation(before: str, huge: str) -> None:
    environment = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", hostalloc.HUGE_PAGES_ENV)}
    script = _LATE_ASK.format(before=before)
    done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == huge


def test_who_imported_torch_is_whoever_holds_it() -> None:
    import types

    script, plugin, quiet = (types.ModuleType(name) for name in ("__main__", "spin_late", "quiet"))
    script.torch = torch  # type: ignore[attr-defined]
    plugin.matmul = torch.matmul  # type: ignore[attr-defined]
    candidates = [("__main__", script), ("plugin spin_late", plugin), ("plugin quiet", quiet)]
    assert hostalloc.torch_importers(candidates) == ("__main__", "plugin spin_late")


@pytest.mark.parametrize(
    ("mode", "allocator", "environ", "importers", "why", "restore"),
    [
        ("steady", "preloaded:libjemalloc.so.2", {}, None, "LD_PRELOAD puts libjemalloc.so.2 in front",
         "run without libjemalloc.so.2 in LD_PRELOAD"),
        ("system", "glibc", {}, None, "this run asked for the system host allocator", "run with the steady"),
        ("steady", "glibc-steady", {hostalloc.HUGE_PAGES_ENV: "0"}, None,
         "THP_MEM_ALLOC_ENABLE=0 was set in the environment", "unset THP_MEM_ALLOC_ENABLE=0"),
        ("steady", "glibc-steady", {}, ("plugin spin_late",),
         "torch allocated memory before pytest-accel asked for huge pages (torch was imported first, by plugin "
         "spin_late)", "create no tensor before pytest starts"),
        ("steady", "glibc-steady-huge", {}, None, "this run's large blocks sit on huge pages; the baseline's did not",
         "record this setup on purpose: --accel-reset-history"),
    ],
    ids=["preloaded", "system", "user-set", "allocated-first", "baseline-older"],
)  # fmt: skip
def test_a_setup_mismatch_of_the_allocator_names_its_cause_and_the_way_back(
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    allocator: str,
    environ: dict[str, str],
    importers: tuple[str, ...] | None,
    why: str,
    restore: str,
) -> None:
    monkeypatch.setattr(hostalloc, "_thp_setting", lambda: "madvise")
    said_why, said_restore = hostalloc.allocator_cause(mode, allocator, environ, importers)
    assert said_why.startswith(why) and said_restore.startswith(restore)


def test_a_mappings_flags_are_read_from_smaps(tmp_path: Path) -> None:
    smaps = tmp_path / "smaps"
    smaps.write_text(
        "55d0c0000000-55d0c0400000 rw-p 00000000 00:00 0                          [heap]\n"
        "Size:               4096 kB\nTHPeligible:    1\nVmFlags: rd wr mr mw me ac hg\n"
        "7f0000000000-7f0000001000 r--p 00000000 08:01 42                         /usr/lib/libc.so.6\n"
        "Size:                  4 kB\nVmFlags: rd mr mw me\n"
    )
    assert hostalloc._mapping_flags(0x55D0C0001000, smaps) == ("rd", "wr", "mr", "mw", "me", "ac", "hg")
    assert hostalloc._mapping_flags(0x7F0000000800, smaps) == ("rd", "mr", "mw", "me")
    assert hostalloc._mapping_flags(0x1000, smaps) == ()
    assert hostalloc._mapping_flags(0x1000, tmp_path / "absent") == ()


_PROVENANCE = (
    "from pytest_accel.engine.devices.cpu import CpuDevice; d = CpuDevice(1, 'steady'); d.activate(); "
    "print(d.provenance()['host_allocator'])"
)


@glibc_only
@pytest.mark.skipif(hostalloc._thp_setting() in (None, "never"), reason="needs transparent huge pages")
@pytest.mark.parametrize(("value", "reported"), [("1", "glibc-steady-huge"), ("0", "glibc-steady")])
def test_a_fresh_process_reports_whether_its_large_blocks_sit_on_huge_pages(value: str, reported: str) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"} | {hostalloc.HUGE_PAGES_ENV: value}
    done = subprocess.run([sys.executable, "-c", _PROVENANCE], env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    expected = "glibc-steady-huge" if hostalloc._thp_setting() == "always" else reported
    assert done.stdout.split()[-1] == expected


@pytest.mark.skipif(hostalloc._thp_setting() in (None, "never"), reason="needs transparent huge pages")
@pytest.mark.parametrize(("option", "seen"), [((), "1"), (("--accel-host-allocator", "system"), "None")])
def test_the_plugin_asks_before_the_test_modules_import_torch(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, option: tuple[str, ...], seen: str
) -> None:
    monkeypatch.delenv(hostalloc.HUGE_PAGES_ENV, raising=False)
    pytester.makepyfile(
        test_env="import os\n\ndef test_env():\n    print('asked:', os.environ.get('THP_MEM_ALLOC_ENABLE'))\n"
    )
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", *option)
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"*asked: {seen}*"])


def test_a_baseline_that_differs_only_in_huge_pages_says_the_usual_causes() -> None:
    now = {"host_allocator": "glibc-steady"}
    entry = BaselineEntry("t.py::test_k", "throughput", "calls", 1.0, (0.005,) * 5, provenance={
        "host_allocator": "glibc-steady-huge"
    })  # fmt: skip
    assert entry.incomparable(Measurement("calls", 1.0, (0.01,) * 5), now) is None
    assert entry.setup_differs(now) == (
        "host_allocator glibc-steady-huge -> glibc-steady",
        "the baseline was recorded with host_allocator=glibc-steady-huge, this run has host_allocator=glibc-steady: "
        "large blocks on huge pages in one and not the other (torch allocated memory before pytest-accel could "
        "ask, THP_MEM_ALLOC_ENABLE set, or the kernel's transparent huge pages setting)",
    )
