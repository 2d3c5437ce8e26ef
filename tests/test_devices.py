"""Unit tests of the device backends: HPU through the Habana contract fake, CPU and CUDA timing logic."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Iterator
from typing import ClassVar

import pytest
import torch
from fakes.habana import FakeHabana, install_fake_habana
from hypothesis import given
from hypothesis import strategies as st

from pytest_accel.engine.devices import DeviceUnavailable, make_device, resolve_device
from pytest_accel.engine.devices.base import EventTimer, OutOfMemoryReport, requested_bytes_from_message, slug
from pytest_accel.engine.devices.cpu import CpuDevice, HostTimer
from pytest_accel.engine.devices.cuda import CudaDevice
from pytest_accel.engine.devices.hpu import HpuDevice

needs_no_habana = pytest.mark.skipif(
    importlib.util.find_spec("habana_frameworks") is not None, reason="habana_frameworks is installed here"
)
needs_cpu_only_torch = pytest.mark.skipif(torch.version.cuda is not None, reason="this torch is built with CUDA")
needs_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak RSS is read from /proc")

HABANA_OOM_MESSAGE = "[Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::2147483648 (2048)MB"


@pytest.fixture
def lazy_habana(monkeypatch: pytest.MonkeyPatch) -> FakeHabana:
    """A Gaudi 2 behind the fake, in lazy mode (the bridge's legacy default)."""
    monkeypatch.delenv("PT_HPU_LAZY_MODE", raising=False)
    return install_fake_habana(monkeypatch)


@pytest.fixture
def eager_habana(monkeypatch: pytest.MonkeyPatch) -> FakeHabana:
    """A Gaudi 2 behind the fake, in eager mode (PT_HPU_LAZY_MODE=0)."""
    monkeypatch.setenv("PT_HPU_LAZY_MODE", "0")
    return install_fake_habana(monkeypatch)


# --- HPU through the contract fake ---------------------------------------------------------------------------


def test_hpu_is_available_when_the_bridge_reports_a_device(lazy_habana: FakeHabana) -> None:
    device = HpuDevice()
    assert device.is_available()
    assert device.unavailable_reason() == ""
    assert "hpu.is_available" in lazy_habana.calls


def test_hpu_is_unavailable_when_the_bridge_reports_no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_habana(monkeypatch, available=False)
    device = HpuDevice()
    assert not device.is_available()
    assert "is_available() is False" in device.unavailable_reason()


def test_a_habana_install_that_refuses_this_torch_is_unavailable_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """gaudi-pytorch-bridge 1.19 asserts at import that torch is the build it was made for; a stray Habana install
    on a CUDA box made --device auto crash."""
    install_fake_habana(monkeypatch, import_error=AssertionError("not the torch this bridge was built for"))
    device = HpuDevice()
    assert not device.is_available()
    assert device.unavailable_reason().startswith("habana_frameworks failed to import (AssertionError: ")


@needs_no_habana
def test_hpu_unavailable_reason_names_the_missing_package() -> None:
    device = HpuDevice()
    assert not device.is_available()
    assert "No module named 'habana_frameworks'" in device.unavailable_reason()


@pytest.mark.parametrize("generation", ["gaudi", "gaudi2", "gaudi3"])
def test_hpu_key_names_the_generation_without_occupying_the_device(
    monkeypatch: pytest.MonkeyPatch, generation: str
) -> None:
    fake = install_fake_habana(monkeypatch, generation=generation)
    assert HpuDevice().key() == f"hpu-{generation}"
    assert fake.calls == ["experimental._get_device_type"]


def test_hpu_key_keeps_an_unknown_device_type_apart(lazy_habana: FakeHabana, monkeypatch: pytest.MonkeyPatch) -> None:
    experimental = lazy_habana.modules["habana_frameworks.torch.utils.experimental"]
    monkeypatch.setattr(experimental, "_get_device_type", lambda: 99)
    assert HpuDevice().key() == "hpu-unknown-99"


def test_hpu_provenance_names_generation_count_and_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PT_HPU_LAZY_MODE", "0")
    install_fake_habana(monkeypatch, generation="gaudi3")
    provenance = HpuDevice().provenance()
    assert provenance["device_model"] == "gaudi3"
    assert provenance["device_count"] == "8"
    assert provenance["torch"] == torch.__version__
    assert provenance["lazy_mode"] == "false"
    assert "habana_torch_plugin" in provenance


def test_an_unset_lazy_mode_is_read_from_the_bridge_not_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Releases after 1.19 run eager + torch.compile when ``PT_HPU_LAZY_MODE`` is unset: no flush, "false"."""
    monkeypatch.delenv("PT_HPU_LAZY_MODE", raising=False)
    fake = install_fake_habana(monkeypatch, release="eager-default")
    device = HpuDevice()
    device.synchronize()
    assert fake.calls == ["hpu.synchronize"]
    assert device.provenance()["lazy_mode"] == "false"


def test_hpu_torch_device_is_hpu(lazy_habana: FakeHabana) -> None:
    assert HpuDevice().torch_device() == torch.device("hpu")


def test_hpu_synchronize_flushes_the_lazy_graph_first(lazy_habana: FakeHabana) -> None:
    HpuDevice().synchronize()
    assert lazy_habana.calls == ["core.mark_step", "hpu.synchronize"]


def test_hpu_synchronize_in_eager_mode_only_waits(eager_habana: FakeHabana) -> None:
    HpuDevice().synchronize()
    assert eager_habana.calls == ["hpu.synchronize"]


def test_hpu_timer_records_each_event_after_a_flush(lazy_habana: FakeHabana) -> None:
    timer = HpuDevice().timer()
    timer.start()
    assert lazy_habana.calls == ["hpu.Event", "hpu.Event", "core.mark_step", "Event.record"]
    lazy_habana.calls.clear()
    lazy_habana.advance(12.5)
    seconds = timer.stop()
    assert lazy_habana.calls == ["core.mark_step", "Event.record", "Event.synchronize", "Event.elapsed_time"]
    assert seconds == pytest.approx(0.0125)


def test_hpu_timer_in_eager_mode_does_not_flush(eager_habana: FakeHabana) -> None:
    timer = HpuDevice().timer()
    timer.start()
    eager_habana.advance(3.0)
    assert timer.stop() == pytest.approx(0.003)
    assert "core.mark_step" not in eager_habana.calls


def test_hpu_peak_memory_is_reset_and_read(lazy_habana: FakeHabana) -> None:
    device = HpuDevice()
    lazy_habana.allocate(3 * 2**30)
    lazy_habana.free(2 * 2**30)
    assert device.peak_memory_bytes() == 3 * 2**30
    device.reset_peak_memory()
    assert device.peak_memory_bytes() == 2**30
    assert lazy_habana.calls[-2:] == ["hpu.reset_peak_memory_stats", "hpu.max_memory_allocated"]


def test_hpu_out_of_memory_reads_habana_allocation_failure(lazy_habana: FakeHabana) -> None:
    lazy_habana.allocate(5 * 2**30)
    report = HpuDevice().out_of_memory(RuntimeError(HABANA_OOM_MESSAGE))
    assert report == OutOfMemoryReport(2147483648, 5 * 2**30, lazy_habana.limit_bytes)


def test_hpu_out_of_memory_recognises_an_out_of_memory_message(lazy_habana: FakeHabana) -> None:
    report = HpuDevice().out_of_memory(RuntimeError("hpu: out of memory while compiling the graph"))
    assert report is not None
    assert report.requested_bytes is None
    assert report.limit_bytes == lazy_habana.limit_bytes


@pytest.mark.parametrize(
    "error", [RuntimeError("Expected all tensors to be on the same device"), ValueError("out of memory")]
)
def test_hpu_out_of_memory_ignores_other_errors(lazy_habana: FakeHabana, error: Exception) -> None:
    assert HpuDevice().out_of_memory(error) is None
    assert lazy_habana.calls == []


def test_hpu_autocast_dtype_is_bfloat16(lazy_habana: FakeHabana) -> None:
    assert HpuDevice().autocast_dtype() == torch.bfloat16


# --- resolve_device / make_device -----------------------------------------------------------------------------


def test_auto_picks_hpu_when_a_gaudi_is_present(lazy_habana: FakeHabana) -> None:
    assert resolve_device("auto").kind == "hpu"


@needs_cpu_only_torch
def test_auto_falls_back_to_cpu_when_no_accelerator_is_usable(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_habana(monkeypatch, available=False)
    assert resolve_device("auto").kind == "cpu"


@needs_no_habana
def test_requesting_an_absent_hpu_names_what_was_found_and_why() -> None:
    with pytest.raises(DeviceUnavailable) as raised:
        resolve_device("hpu")
    message = str(raised.value)
    assert "habana_frameworks is not installed" in message
    assert "cpu" in message.split("Found instead:")[1]


@needs_cpu_only_torch
def test_requesting_cuda_on_a_cpu_torch_says_it_is_built_without_cuda() -> None:
    with pytest.raises(DeviceUnavailable, match="built without CUDA"):
        resolve_device("cuda")


def test_make_device_rejects_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown device kind 'tpu'"):
        make_device("tpu")


# --- CPU backend ----------------------------------------------------------------------------------------------


def test_host_timer_synchronizes_before_each_clock_read() -> None:
    log: list[str] = []
    readings: Iterator[float] = iter([2.0, 5.5])

    def clock() -> float:
        log.append("clock")
        return next(readings)

    timer = HostTimer(clock, lambda: log.append("sync"))
    timer.start()
    assert log == ["sync", "clock"]
    assert timer.stop() == 3.5
    assert log == ["sync", "clock", "sync", "clock"]


def test_host_timer_stop_before_start_raises() -> None:
    timer = HostTimer(lambda: 0.0, lambda: None)
    with pytest.raises(RuntimeError, match="before start"):
        timer.stop()
    timer.start()
    timer.stop()
    with pytest.raises(RuntimeError, match="before start"):
        timer.stop()


def test_cpu_key_names_model_and_cores() -> None:
    key = CpuDevice().key()
    assert re.fullmatch(r"cpu-[a-z0-9-]+-\d+c", key)
    assert key.endswith(f"-{os.cpu_count() or 1}c")


@needs_linux
def test_cpu_peak_memory_grows_after_a_large_allocation() -> None:
    device = CpuDevice()
    device.reset_peak_memory()
    before = device.peak_memory_bytes()
    assert isinstance(before, int)
    assert before >= 0  # growth since the reset, not the whole process
    size = 256 * 2**20  # far above allocator noise, small enough for any CI runner
    block = bytearray(b"\xff") * size  # filled, so every page is resident
    after = device.peak_memory_bytes()
    assert after is not None
    assert after >= before + size // 2
    del block


def test_cpu_out_of_memory_is_a_host_memory_error() -> None:
    device = CpuDevice()
    report = device.out_of_memory(MemoryError())
    assert report is not None
    assert report.limit_bytes is not None
    assert report.limit_bytes > 0
    assert device.out_of_memory(ValueError("out of memory")) is None


# --- base helpers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3"),
        ("Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz", "intel-xeon-platinum-8480"),
        ("AMD EPYC 7B13 64-Core Processor", "amd-epyc-7b13-64-core"),
        ("  --GAUDI2--  ", "gaudi2"),
        ("(TM)", "unknown"),
        ("", "unknown"),
    ],
)
def test_slug_examples(name: str, expected: str) -> None:
    assert slug(name) == expected


@given(st.text())
def test_slug_is_a_non_empty_dash_separated_lowercase_name(text: str) -> None:
    result = slug(text)
    assert re.fullmatch(r"[a-z0-9-]+", result)
    assert not result.startswith("-")
    assert not result.endswith("-")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB", 2 * 2**30),
        ("tried to allocate 512 MiB", 512 * 2**20),
        ("Tried to allocate 1.5 KiB", 1536),
        (HABANA_OOM_MESSAGE, None),  # Habana's own format is parsed by the HPU backend
        ("segmentation fault", None),
    ],
)
def test_requested_bytes_from_message(message: str, expected: int | None) -> None:
    assert requested_bytes_from_message(message) == expected


# --- CUDA event timer, with a fake event type -----------------------------------------------------------------


class FakeCudaEvent:
    """Just enough of ``torch.cuda.Event`` for ``EventTimer``: stamps a class-level clock in ms."""

    clock_ms = 0.0
    log: ClassVar[list[str]] = []  # reset by the fixture below

    def __init__(self, enable_timing: bool = False) -> None:
        self.enable_timing = enable_timing
        self.recorded_ms: float | None = None

    def record(self) -> None:
        self.log.append("record")
        self.recorded_ms = FakeCudaEvent.clock_ms

    def synchronize(self) -> None:
        self.log.append("synchronize")

    def elapsed_time(self, end_event: FakeCudaEvent) -> float:
        self.log.append("elapsed_time")
        assert self.enable_timing and end_event.enable_timing
        assert self.recorded_ms is not None and end_event.recorded_ms is not None
        return end_event.recorded_ms - self.recorded_ms


@pytest.fixture
def fake_cuda_event(monkeypatch: pytest.MonkeyPatch) -> type[FakeCudaEvent]:
    """``FakeCudaEvent`` with its clock at zero and an empty log."""
    monkeypatch.setattr(FakeCudaEvent, "clock_ms", 0.0)
    monkeypatch.setattr(FakeCudaEvent, "log", [])
    return FakeCudaEvent


def test_event_timer_returns_seconds_from_milliseconds(fake_cuda_event: type[FakeCudaEvent]) -> None:
    timer = EventTimer(fake_cuda_event)
    timer.start()
    fake_cuda_event.clock_ms += 250.0
    assert timer.stop() == pytest.approx(0.25)
    assert fake_cuda_event.log == ["record", "record", "synchronize", "elapsed_time"]


def test_event_timer_stop_before_start_raises(fake_cuda_event: type[FakeCudaEvent]) -> None:
    with pytest.raises(RuntimeError, match="before start"):
        EventTimer(fake_cuda_event).stop()


def test_cuda_out_of_memory_ignores_other_errors() -> None:
    assert CudaDevice().out_of_memory(MemoryError()) is None
