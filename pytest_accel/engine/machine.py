"""The machine as measurements see it: the reference kernel, measured peaks, datasheet peaks.

The reference kernel is timed in alternation with every workload, to tell machine drift from change.

On a shared machine the raw time of a kernel drifts by tens of percent over minutes (clock, steal,
other jobs); the ratio of a workload's round to an adjacent round of a fixed matmul on the same
device and threads cancels most of that drift (docs/measurements.md has the figures).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import final

from pytest_accel.engine.devices.base import Device
from pytest_accel.engine.sampling import MeasureConfig, measure
from pytest_accel.storage.files import StoreError, encode, read_document, write_atomically

__all__ = [
    "FRESH_FAULT_PROBE",
    "DatasheetPeak",
    "HostShare",
    "MeasuredPeak",
    "datasheet_peak",
    "measure_peak",
    "peak_figures",
    "reference_kernel",
    "state_probe_bytes",
    "state_probes",
    "wait_for_quiet",
]

# CPU: a 384x384 fp32 matmul, ~1.7 ms on one thread of a 2-core EPYC: long enough to be timed
# well by the host clock, short enough that a probe round adds little to a test.
_CPU_SIDE = 384
# Accelerators: a 4096x4096 matmul in the device's autocast dtype (bf16): ~0.14 TFLOP, tens of
# microseconds on an H100 or Gaudi 2; enough to run the matrix engines at steady clocks.
_ACCELERATOR_SIDE = 4096


def reference_kernel(device: Device) -> Callable[[], object]:
    """A fixed matmul on ``device``: the same work every call, every run, every version of the suite."""
    import torch

    side = _CPU_SIDE if device.kind == "cpu" else _ACCELERATOR_SIDE
    dtype = torch.float32 if device.kind == "cpu" else device.autocast_dtype()
    generator = torch.Generator().manual_seed(1234)
    matrix = torch.randn(side, side, generator=generator).to(device.torch_device(), dtype)

    def probe() -> object:
        return torch.mm(matrix, matrix)

    return probe


# Machine-state probes beside the compute one (see ``state_probes``). CPU: a copy of 32 MiB (read
# 32 + write 32: past any core's L2, into the shared last-level cache and DRAM that another job
# also uses) and a gather of 128 Ki random floats from 64 MiB (latency-bound: what cache and
# memory contention does to pointer-chasing and indexing kernels). Accelerators: a 128 MiB copy
# (256 MiB of traffic, past the largest L2 of current GPUs) and 1 Mi floats gathered from 128 MiB:
# about 0.4 GiB held on the device during a measurement, which the fixture leaves out of the peak.
# CPU only, a third: mapping 4 MiB of fresh memory and touching every page (1024 page faults, the
# kernel zeroing each page; 2.6 ms on the 2-core VM), then unmapping it. A workload that allocates
# large temporaries pays this every call (torch's math SDPA at the SD3 256 px smoke shape: about
# 17,000 faults, most of its time); what a fault costs moves with the hypervisor and the host's
# other tenants, between processes even on a quiet 2-core VM, and the copy and the gather do not
# see it (docs/sensitivity.md, "A state no probe saw: page faults").
# Accelerators' caching allocators keep workloads from mapping memory per call: no such probe there.
_FRESH_BYTES = 4 * 2**20
# What ``measure`` needs to price a workload's own page faults: the probe's name, the faults per call.
FRESH_FAULT_PROBE = ("fresh", _FRESH_BYTES // mmap.PAGESIZE)
_STATE_COPY_BYTES = {"cpu": 32 * 2**20, "accelerator": 128 * 2**20}
_STATE_GATHER = {"cpu": (64 * 2**20, 128 * 2**10), "accelerator": (128 * 2**20, 2**20)}  # (buffer bytes, indices)
_INDEX_BYTES = 8  # torch.randint's int64


def _size_class(device: Device) -> str:
    return "cpu" if device.kind == "cpu" else "accelerator"


def state_probe_bytes(device: Device) -> int:
    """Device memory ``state_probes`` holds (the reference kernel's matrix included): not the workload's."""
    size_class = _size_class(device)
    side = _CPU_SIDE if device.kind == "cpu" else _ACCELERATOR_SIDE
    reference = side * side * (4 if device.kind == "cpu" else 2)  # fp32 on the CPU, bf16/fp16 elsewhere
    table_bytes, indices = _STATE_GATHER[size_class]
    return reference + 2 * _STATE_COPY_BYTES[size_class] + table_bytes + indices * _INDEX_BYTES


def state_probes(device: Device) -> dict[str, Callable[[], object]]:
    """The machine-state probes: ``compute`` (the reference kernel), ``memory`` (a large copy), ``latency``
    (a random gather) and, on the CPU, ``fresh`` (mapping and touching fresh memory: page faults).

    Another job that is itself a perf job (memory-bound kernels, allocation, processes) slows
    memory- and latency-bound workloads far more than a compute-bound matmul: one probe cannot see
    that state. Each measurement times all three, so a verdict can tell when the machine is not in a
    state its baseline's recordings covered.
    """
    import torch

    size_class = _size_class(device)
    where = device.torch_device()
    source = torch.ones(_STATE_COPY_BYTES[size_class] // 4, dtype=torch.float32, device=where)
    target = torch.empty_like(source)
    buffer_bytes, count = _STATE_GATHER[size_class]
    generator = torch.Generator().manual_seed(4321)
    table = torch.ones(buffer_bytes // 4, dtype=torch.float32, device=where)
    index = torch.randint(0, table.numel(), (count,), generator=generator).to(where)
    probes: dict[str, Callable[[], object]] = {
        "compute": reference_kernel(device),
        "memory": lambda: target.copy_(source),
        "latency": lambda: torch.take(table, index),
    }
    if device.kind == "cpu":
        probes["fresh"] = _fresh_memory
    return probes


def _fresh_memory() -> None:
    """Map ``_FRESH_BYTES`` of anonymous memory, write every page, unmap it: always fresh pages,
    whatever state the process's allocator is in (an mmap of its own, not malloc)."""
    import torch

    mapping = mmap.mmap(-1, _FRESH_BYTES)
    try:
        view = torch.frombuffer(mapping, dtype=torch.uint8)
        view.fill_(1)
        del view  # the mapping cannot close while a tensor exports its buffer
    finally:
        mapping.close()


_PROC = Path("/proc")


def _cpu_jiffies(proc: Path, cpus: frozenset[int] | None = None) -> tuple[int, int] | None:
    """(busy, total) clock ticks since boot of all CPUs, or of ``cpus`` only (the ones this process may run on:
    an xdist sibling on its own cores is not this process's neighbour), from /proc/stat; None where unreadable."""
    try:
        lines = (proc / "stat").read_text().splitlines()
        per_cpu = [line for line in lines if line.startswith("cpu") and line[3:4].isdigit()]
        rows = [lines[0]] if cpus is None else [line for line in per_cpu if int(line.split()[0][3:]) in cpus]
        columns = [[int(x) for x in row.split()[1:]] for row in rows]
    except (OSError, ValueError, IndexError):
        return None
    if not columns:
        return None
    fields = [sum(values) for values in zip(*columns, strict=False)]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])  # user..steal; guest time is already in user


def _own_cpus() -> frozenset[int] | None:
    """The CPUs this process may run on when that is fewer than the host's (None: all of them)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    allowed = frozenset(os.sched_getaffinity(0))
    return allowed if len(allowed) < (os.cpu_count() or len(allowed)) else None


def _own_jiffies(proc: Path, pid: int) -> int:
    """CPU ticks of this process (all its threads) and of its live children (DataLoader workers...)."""
    total = 0
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # a process that ended meanwhile
        fields = text.rsplit(")", 1)[-1].split()  # after "(comm)", which may hold spaces
        if int(stat.parent.name) == pid or (len(fields) > 1 and int(fields[1]) == pid):
            total += int(fields[11]) + int(fields[12])  # utime + stime
    return total


@final
class HostShare:
    """How much of the host's CPU time other processes used while a measurement ran (Linux; else None).

    Another job that is itself a perf job starves this job's worker processes and shares its
    caches and memory without necessarily moving any timing probe; its CPU time shows it directly.
    ``start()`` then ``stop()`` -> the fraction of all CPUs' time spent outside this process and
    its children (0: alone; 0.5 on 2 cores: another process kept one core busy).
    """

    def __init__(self, proc: Path = _PROC, pid: int | None = None, cpus: frozenset[int] | None = None) -> None:
        self._proc = proc
        self._pid = os.getpid() if pid is None else pid
        self._cpus = _own_cpus() if cpus is None and proc == _PROC else cpus  # the cores this process may use
        self._start: tuple[int, int, int] | None = None

    def start(self) -> None:
        """Read the counters."""
        host = _cpu_jiffies(self._proc, self._cpus)
        self._start = None if host is None else (*host, _own_jiffies(self._proc, self._pid))

    def stop(self) -> float | None:
        """The share of the host's CPU time others used since ``start``; None when unknown."""
        host = _cpu_jiffies(self._proc, self._cpus)
        if host is None or self._start is None:
            return None
        busy, total, own = (
            host[0] - self._start[0],
            host[1] - self._start[1],
            _own_jiffies(self._proc, self._pid) - self._start[2],
        )
        if total <= 0:
            return None
        return min(1.0, max(0.0, (busy - own) / total))


# The window over which other processes' share of the host is read while waiting for quiet: long enough
# to average another job's bursts, short enough that one leaving is seen within seconds.
QUIET_WINDOW_SECONDS = 2.0


def wait_for_quiet(
    target: float,
    budget: float,
    settled: Callable[[], bool] | None = None,
    *,
    window: float = QUIET_WINDOW_SECONDS,
    meter: Callable[[], HostShare] = HostShare,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[bool, float]:
    """Wait until other processes use at most ``target`` of the host's CPU over a ``window`` (sleeping)
    and, where ``settled`` is given, the machine's state is back within what the figure's recordings
    saw (``settled()`` runs the state probes: their time counts as waiting, and the last one's is kept
    free in the budget), or ``budget`` seconds are spent: (whether it got quiet, the seconds waited).
    Unknown shares (no /proc) end the wait at once, the state unread: nothing could tell quiet from busy.

    The state matters as much as the CPU: on the 2-core VM the random gather read 1.5-2x its
    recorded time, in bursts of 10-40 s, with no other process on the host (docs/studies/quiet-wait):
    a figure measured again at once met the same burst.
    """
    waited, checking = 0.0, 0.0
    while waited + window + checking <= budget:
        share = meter()
        share.start()
        sleep(window)
        waited += window
        other = share.stop()
        if other is None:
            return False, waited
        if other > target:
            continue
        if settled is None:
            return True, waited
        began = clock()
        calm = settled()
        checking = clock() - began
        waited += checking
        if calm:
            return True, waited
    return False, waited


@final
@dataclass(frozen=True)
class MeasuredPeak:
    """What this device reached in a short matmul and a short copy, in this run."""

    tflops: float  # dense matmul in the device's compute dtype (fp32 on the CPU, bf16 elsewhere)
    bytes_per_second: float  # a device-to-device copy: read + write bytes over time


# Peak probes: a matmul and a copy big enough to reach the engines' steady state, small enough for
# about a second each. CPU: 1024^2 fp32 (2.1 GFLOP per call) and 64 MiB; accelerators: 8192^2
# bf16 (1.1 TFLOP) and 1 GiB.
_PEAK_SIDE = {"cpu": 1024, "accelerator": 8192}
_PEAK_COPY_BYTES = {"cpu": 64 * 2**20, "accelerator": 2**30}
_PEAK_BUDGET = MeasureConfig(measure_seconds=0.5, min_rounds=10, warmup_max_seconds=1.0)


def measure_peak(device: Device) -> MeasuredPeak:
    """Measure the device's practical matmul and copy peaks (the honest peak for CPUs too)."""
    import torch

    size_class = "cpu" if device.kind == "cpu" else "accelerator"
    side = _PEAK_SIDE[size_class]
    dtype = torch.float32 if device.kind == "cpu" else device.autocast_dtype()
    generator = torch.Generator().manual_seed(7)
    a = torch.randn(side, side, generator=generator).to(device.torch_device(), dtype)
    elements = _PEAK_COPY_BYTES[size_class] // 4
    source = torch.empty(elements, dtype=torch.float32, device=device.torch_device()).fill_(1.0)
    target = torch.empty_like(source)

    def timed(fn: Callable[[], object]) -> float:
        result = measure(
            fn, timer=device.timer(), items_per_call=1, unit="calls", mark_step=device.mark_step, config=_PEAK_BUDGET
        )
        return result.seconds_per_call

    matmul_seconds = timed(lambda: torch.mm(a, a))
    copy_seconds = timed(lambda: target.copy_(source))
    return MeasuredPeak(2.0 * side**3 / matmul_seconds / 1e12, 2.0 * elements * 4 / copy_seconds)


PEAK_FILE_ENV = "PYTEST_ACCEL_PEAK_FILE"  # set by ``pytest-accel ab`` for its runs (absides.py)


def shared_peak(device: Device, path: Path | None) -> MeasuredPeak:
    """The device's peaks: read from ``path`` when a run on the same device key wrote them there,
    else measured (and written there for the next run).

    ``pytest-accel ab`` gives each side's runs one such file: the peaks are a property of the host
    and serve only the %-of-peak figures, so a sitting measures them once per side instead of
    spending about 2.6 s of every run (a CPU's matmul and copy) on them. A file that cannot be read
    or names another device is measured over.
    """
    key = device.key()
    if path is not None:
        try:
            stored = read_document(path)
            if isinstance(stored, dict) and stored.get("device_key") == key:
                return MeasuredPeak(float(stored["tflops"]), float(stored["bytes_per_second"]))
        except (StoreError, ValueError, KeyError, TypeError):
            pass
    peak = measure_peak(device)
    if path is not None:
        with contextlib.suppress(OSError):  # only a cache: a later run that cannot read it measures again
            document = {"device_key": key, "tflops": peak.tflops, "bytes_per_second": peak.bytes_per_second}
            write_atomically(path, encode(document))
    return peak


@final
@dataclass(frozen=True)
class DatasheetPeak:
    """A vendor's published peak for one device class (dense, no sparsity)."""

    tflops_bf16: float  # matrix-engine peak at bf16
    memory_gbps: float  # HBM bandwidth, GB/s (10^9 bytes)
    source: str


# Device-key pattern -> published figures. Dense bf16 (NVIDIA's datasheets list 2x with sparsity).
_DATASHEET: tuple[tuple[str, DatasheetPeak], ...] = (
    (r"^cuda-nvidia-a100.*40gb", DatasheetPeak(312.0, 1555.0, "NVIDIA A100 datasheet (SXM 40GB)")),
    (r"^cuda-nvidia-a100", DatasheetPeak(312.0, 2039.0, "NVIDIA A100 datasheet (SXM 80GB)")),
    (r"^cuda-nvidia-h100.*pcie", DatasheetPeak(756.0, 2000.0, "NVIDIA H100 datasheet (PCIe)")),
    (r"^cuda-nvidia-h100", DatasheetPeak(989.0, 3350.0, "NVIDIA H100 datasheet (SXM)")),
    (r"^cuda-nvidia-h200", DatasheetPeak(989.0, 4800.0, "NVIDIA H200 datasheet (SXM)")),
    (r"^hpu-gaudi2$", DatasheetPeak(432.0, 2460.0, "Intel Gaudi 2 white paper (MME bf16, 96 GB HBM2E)")),
    (r"^hpu-gaudi3$", DatasheetPeak(1835.0, 3700.0, "Intel Gaudi 3 white paper (MME bf16, 128 GB HBM2E)")),
)


def datasheet_peak(device_key: str) -> DatasheetPeak | None:
    """The published peak for a device key, or None (CPUs, unknown accelerators)."""
    for pattern, peak in _DATASHEET:
        if re.search(pattern, device_key):
            return peak
    return None


def peak_figures(
    tflops: float | None, bytes_per_second: float | None, measured: MeasuredPeak, sheet: DatasheetPeak | None
) -> dict[str, float]:
    """Achieved rates as % of the session's measured peaks and of the datasheet's (keys name which)."""
    figures: dict[str, float] = {}
    if tflops is not None:
        figures["percent_of_measured_tflops"] = 100 * tflops / measured.tflops
        if sheet is not None:
            figures["percent_of_datasheet_tflops"] = 100 * tflops / sheet.tflops_bf16
    if bytes_per_second is not None:
        figures["percent_of_measured_bandwidth"] = 100 * bytes_per_second / measured.bytes_per_second
        if sheet is not None:
            figures["percent_of_datasheet_bandwidth"] = 100 * bytes_per_second / (sheet.memory_gbps * 1e9)
    return figures
