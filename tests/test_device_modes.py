"""Each backend's timing modes: CUDA through the contract fake (tests/fakes/cuda.py), the CPU for real,
Gaudi's refusals; and the fixture's arguments and errors."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from fakes.cuda import FakeCuda, counting, install_fake_cuda
from hypothesis import given
from hypothesis import strategies as st

from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.engine.devices.base import CacheFlush, ModeUnavailable
from pytest_accel.engine.devices.cpu import CpuDevice, cpu_identity, last_level_cache_bytes
from pytest_accel.engine.devices.cuda import CudaDevice
from pytest_accel.engine.devices.hpu import HpuDevice
from pytest_accel.engine.modes import ThrottleWatch, TimingMode
from pytest_accel.engine.sampling import MeasureConfig
from pytest_accel.judgement.gate import GateResult
from pytest_accel.plugin.fixture import Throughput


def test_cuda_graph_replay_warms_up_on_a_side_stream_then_captures_the_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = install_fake_cuda(monkeypatch)
    out = torch.ones(3)
    replay = CudaDevice().graph_replay(counting(cuda, lambda: out), 7)
    assert cuda.captured_calls == 7
    assert cuda.log[:2] == ["side stream", "capture begin"]
    assert cuda.replays == 1  # one untimed replay uploads the graph before the timed rounds
    assert replay() is out and cuda.replays == 2  # the static output of the last captured call


def test_a_workload_that_cannot_be_captured_is_refused_naming_why_and_leaves_the_default_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch's ``graph.__exit__`` raises from ``capture_end`` before leaving the capture stream: without restoring
    it, every later test of the process would run on the capture stream."""
    capture_error = RuntimeError("operation not permitted when stream is capturing")
    cuda = install_fake_cuda(monkeypatch, FakeCuda(capture_error=capture_error))
    with pytest.raises(ModeUnavailable, match=r"could not be captured.*timing='eager'"):
        CudaDevice().graph_replay(counting(cuda, lambda: None), 4)
    assert cuda.current == "default"


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


def test_a_gpu_capped_before_the_rounds_start_is_throttled_from_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """nvbench holds the clock to the device's default: a card already power-capped (1400 of 1980 MHz) when the
    rounds start read as its own reference before, and was never flagged."""
    install_fake_cuda(monkeypatch, FakeCuda(clocks=[1400], default_clock=1980))
    watch = CudaDevice().clock_watch()
    assert watch.reference == 1980.0 and watch.note.endswith("held to its default 1980 MHz")
    throttle = ThrottleWatch(TimingMode(clock=watch.read, clock_reference=watch.reference, sleep=lambda s: None), 0)
    assert not throttle.discard() and throttle.throttled_rounds == 1  # no retakes planned: kept, and counted
    install_fake_cuda(monkeypatch, FakeCuda(clocks=[1400]))  # the default not reported: the start's reading
    unknown = CudaDevice().clock_watch()
    assert unknown.reference is None
    assert not ThrottleWatch(TimingMode(clock=unknown.read, sleep=lambda s: None), 0).discard()


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
    with pytest.raises(ModeUnavailable, match="not written yet: the bridge's HPUGraph capture and replay"):
        device.graph_replay(lambda: None, 3)  # possible on Gaudi: the refusal must not say otherwise
    with pytest.raises(ModeUnavailable, match="cache size"):
        device.cache_flusher()
    assert device.clock_watch().read is None


class CountedWithFlush:
    """The CPU with an allocator-style peak counter that also counts a cold mode's live flush buffer."""

    def __init__(self, workload_bytes: int, flush_bytes: int) -> None:
        self._cpu = CpuDevice(threads=1)
        self._workload_bytes, self._flush_bytes = workload_bytes, flush_bytes
        self.kind, self.exact_peak_memory = "cpu", True
        self.flushes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cpu, name)

    def cache_flusher(self) -> CacheFlush:
        def flush() -> None:
            self.flushes += 1

        return CacheFlush(flush, self._flush_bytes)

    def peak_memory_bytes(self) -> int:
        from pytest_accel.engine.machine import state_probe_bytes

        return self._workload_bytes + state_probe_bytes(self._cpu) + self._flush_bytes


def test_a_cold_figure_leaves_the_flush_buffer_out_of_its_peak_and_flushes_every_timed_call() -> None:
    device = CountedWithFlush(workload_bytes=3 * 2**20, flush_bytes=60 * 2**20)

    def unchanged(first: Measurement, again: Callable[[], Measurement], state: object) -> GateResult:
        return GateResult(Verdict(Outcome.UNCHANGED, "time", "same"), None, (first,))

    fixture = Throughput(
        device=device,  # type: ignore[arg-type]
        config=MeasureConfig(measure_seconds=0.02, min_rounds=3, warmup_max_seconds=0.05, round_seconds=0.002),
        benchmark=SimpleNamespace(_mode=None, disabled=False, extra_info={}, stats=object()),
        timer=lambda metric: device.timer(),
        judge=unchanged,
        record=lambda m, v: m,
    )
    a = torch.ones(16, 16)
    m = fixture(lambda: a @ a, items=1, unit="calls", cold=True)
    assert m.peak_memory_bytes == 3 * 2**20
    assert (m.cache, m.timing) == ("cold", "eager")
    assert device.flushes >= len(m.samples) * m.calls_per_round
