"""The CPU's host allocator mode: what it sets, what it reports, and that figures under different
modes are never compared."""

from __future__ import annotations

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
    assert now["host_allocator"] in ("glibc-steady", "system") or now["host_allocator"].startswith("preloaded:")
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
