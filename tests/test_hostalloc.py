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


def test_the_cpu_reports_its_allocator_and_a_baseline_under_another_is_not_compared() -> None:
    device = CpuDevice(1, "steady")
    device.activate()
    now = dict(device.provenance())
    assert now["host_allocator"].removesuffix("-huge") in ("glibc-steady", "system") or now[
        "host_allocator"
    ].startswith("preloaded:")
    recorded = {**now, "host_allocator": "glibc"}
    entry = BaselineEntry("t.py::test_k", "throughput", "calls", 1.0, (0.005,) * 5, provenance=recorded)
    reason = entry.incomparable(Measurement("calls", 1.0, (0.01,) * 5), now)
    assert reason == (
        f"host_allocator glibc -> {now['host_allocator']}",
        f"the baseline was taken with host_allocator=glibc, this run has host_allocator={now['host_allocator']}",
    )
    old = BaselineEntry("t.py::test_k", "throughput", "calls", 1.0, (0.005,) * 5, provenance={
        k: v for k, v in now.items() if k != "host_allocator"
    })  # fmt: skip
    assert "does not say its host_allocator" in str(old.incomparable(Measurement("calls", 1.0, (0.01,) * 5), now))


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


def test_a_process_that_imported_torch_already_is_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # torch read the variable at its first allocation: setting it now would reach only the children.
    monkeypatch.setattr(hostalloc, "_thp_setting", lambda: "madvise")
    monkeypatch.delenv(hostalloc.HUGE_PAGES_ENV, raising=False)
    assert "torch" in sys.modules
    assert hostalloc.ask_for_huge_pages("steady") is False
    assert hostalloc.HUGE_PAGES_ENV not in os.environ


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
    assert entry.incomparable(Measurement("calls", 1.0, (0.01,) * 5), now) == (
        "host_allocator glibc-steady-huge -> glibc-steady",
        "the baseline was taken with host_allocator=glibc-steady-huge, this run has host_allocator=glibc-steady: "
        "large blocks on huge pages in one and not the other (torch imported before pytest-accel could ask, "
        "THP_MEM_ALLOC_ENABLE set, or the kernel's transparent huge pages setting)",
    )
