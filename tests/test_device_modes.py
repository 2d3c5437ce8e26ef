"""Each backend's timing modes: CUDA through the contract fake (tests/fakes/cuda.py), the CPU for real,
Gaudi's refusals; and the fixture's arguments and errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from fakes.cuda import FakeCuda, counting, install_fake_cuda
from hypothesis import given
from hypothesis import strategies as st

from pytest_accel.engine.devices.base import ModeUnavailable
from pytest_accel.engine.devices.cpu import CpuDevice, cpu_identity, last_level_cache_bytes
from pytest_accel.engine.devices.cuda import CudaDevice
from pytest_accel.engine.devices.hpu import HpuDevice


def test_cuda_graph_replay_warms_up_on_a_side_stream_then_captures_the_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = install_fake_cuda(monkeypatch)
    out = torch.ones(3)
    replay = CudaDevice().graph_replay(counting(cuda, lambda: out), 7)
    assert cuda.captured_calls == 7
    assert cuda.log[:2] == ["side stream", "capture begin"]
    assert replay() is out and cuda.replays == 1  # the static output of the last captured call


def test_a_workload_that_cannot_be_captured_is_refused_naming_why(monkeypatch: pytest.MonkeyPatch) -> None:
    capture_error = RuntimeError("operation not permitted when stream is capturing")
    install_fake_cuda(monkeypatch, FakeCuda(capture_error=capture_error))
    with pytest.raises(ModeUnavailable, match=r"could not be captured.*not permitted.*timing='eager'"):
        CudaDevice().graph_replay(lambda: None, 4)


def test_cuda_flushes_exactly_its_l2(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_cuda(monkeypatch, FakeCuda(l2_bytes=50 * 2**20))
    device = CudaDevice()
    monkeypatch.setattr(device, "torch_device", lambda: torch.device("cpu"))  # the buffer lives on the CPU here
    flush = device.cache_flusher()
    assert flush.bytes == 50 * 2**20
    flush.flush()


def test_a_gpu_without_a_reported_l2_size_refuses_cold(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_cuda(monkeypatch, FakeCuda(l2_bytes=0))
    with pytest.raises(ModeUnavailable, match="L2 size"):
        CudaDevice().cache_flusher()


def test_the_sm_clock_is_read_through_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_cuda(monkeypatch, FakeCuda(clocks=[1980, 1500]))
    watch = CudaDevice().clock_watch()
    assert watch.read is not None and watch.note == "SM clock watched through NVML"
    assert watch.read() == 1500.0  # the first reading was the check that NVML answers


def test_without_nvml_the_provenance_says_clock_not_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_cuda(monkeypatch, FakeCuda(clock_error=ModuleNotFoundError("No module named 'pynvml'")))
    watch = CudaDevice().clock_watch()
    assert watch.read is None
    assert watch.note.startswith("clock not watched") and "pynvml" in watch.note
    for name, value in {
        "get_device_name": lambda index=0: "NVIDIA H200",
        "device_count": lambda: 1,
        "is_bf16_supported": lambda: True,
    }.items():
        monkeypatch.setattr(torch.cuda, name, value)
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91000)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # the driver's version falls back too
    assert CudaDevice().provenance()["sm_clock"].startswith("clock not watched")


def test_the_cpu_refuses_graph_timing_naming_why() -> None:
    with pytest.raises(ModeUnavailable, match=r"has none.*timing='eager' on the CPU"):
        CpuDevice(threads=1).graph_replay(lambda: None, 3)


def test_the_cpu_flushes_its_last_level_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for index, (level, kind, size) in enumerate([(1, "Data", "48K"), (2, "Unified", "2048K"), (3, "Unified", "1M")]):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (folder / name).write_text(f"{value}\n")
    identity = cpu_identity("", tmp_path)
    assert last_level_cache_bytes(identity) == 2**20
    monkeypatch.setattr("pytest_accel.engine.devices.cpu.cpu_identity", lambda: identity)
    flush = CpuDevice(threads=1).cache_flusher()
    assert flush.bytes == 2**20
    flush.flush()


def test_a_cpu_without_cache_sizes_refuses_cold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_accel.engine.devices.cpu.cpu_identity", lambda: {"vector_isa": "none"})
    with pytest.raises(ModeUnavailable, match="no cache sizes"):
        CpuDevice(threads=1).cache_flusher()


@given(level=st.integers(1, 4), amount=st.integers(1, 10**6), unit=st.sampled_from(["", "K", "M", "G"]))
def test_the_highest_cache_level_is_the_last_level(level: int, amount: int, unit: str) -> None:
    identity = {"cache_l1": "32K", f"cache_l{level + 1}": f"{amount}{unit}", "vector_isa": "avx2"}
    assert last_level_cache_bytes(identity) == amount * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[unit]


def test_gaudi_refuses_graph_timing_and_cold_naming_why() -> None:
    device = HpuDevice()
    with pytest.raises(ModeUnavailable, match="wrap_in_hpu_graph"):
        device.graph_replay(lambda: None, 3)
    with pytest.raises(ModeUnavailable, match="cache size"):
        device.cache_flusher()
    assert device.clock_watch().read is None
