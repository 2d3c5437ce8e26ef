"""The CPU backend: host clock, peak resident memory, always available."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

from pytest_accel.engine.devices.base import CacheFlush, ClockWatch, ModeUnavailable, OutOfMemoryReport, slug
from pytest_accel.engine.devices.hostalloc import (
    configure_host_allocator,
    large_blocks_on_huge_pages,
    release_free_memory,
    with_huge_pages,
)

if TYPE_CHECKING:
    import torch

__all__ = ["CpuDevice", "HostTimer", "cpu_identity", "cpu_model_name", "default_cpu_threads", "last_level_cache_bytes"]

_PROC_STATUS = Path("/proc/self/status")
_PROC_CLEAR_REFS = Path("/proc/self/clear_refs")
# Writing "5" to clear_refs resets the kernel's peak-RSS counter (VmHWM), Linux >= 4.0.
_RESET_PEAK_RSS = "5"


@final
class HostTimer:
    """Times a region with a host clock around two synchronizes; both are injectable for tests."""

    __slots__ = ("_clock", "_started", "_synchronize")

    def __init__(self, clock: Callable[[], float], synchronize: Callable[[], None]) -> None:
        self._clock = clock
        self._synchronize = synchronize
        self._started: float | None = None

    def start(self) -> None:
        """Wait for earlier work, then read the clock."""
        self._synchronize()
        self._started = self._clock()

    def stop(self) -> float:
        """Wait for the region's work, then return seconds since ``start``."""
        if self._started is None:
            raise RuntimeError("HostTimer.stop() called before start()")
        self._synchronize()
        elapsed = self._clock() - self._started
        self._started = None
        return elapsed


def default_cpu_threads() -> int:
    """Half the allowed cores, at least one: torch threads that must wait for each other on a busy core spoil timing.

    Measured on a 2-core VM (docs/measurements.md, "Why the CPU runs torch on half its cores"): SDPA on
    one thread varied across runs a third as much as on two, and its ratio to an interleaved matmul probe
    held steadier still.
    """
    return max(1, allowed_cpus() // 2)


def allowed_cpus() -> int:
    """The cores this process may run on: its affinity (an xdist worker's own slice, a container's cpuset)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def cpu_model_name() -> str:
    """The CPU model as the OS reports it ("AMD EPYC", "Intel(R) Xeon(R) ...")."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


# Vector-ISA flags of /proc/cpuinfo that change which kernels torch runs (and so what a figure means).
_VECTOR_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "sve", "asimd")
_CACHE_FOLDER = Path("/sys/devices/system/cpu/cpu0/cache")


def cpu_identity(cpuinfo: str | None = None, cache_folder: Path = _CACHE_FOLDER) -> dict[str, str]:
    """Which kind of CPU this is, beyond its marketing name: family/model/stepping, caches, vector ISA.

    A cloud VM's "AMD EPYC" or "Intel Xeon Processor" covers several host generations; a figure
    taken on one says little about another. Fields the OS does not report are left out.
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not key:
            break  # the first processor's block is enough
        fields.setdefault(key, value)
    identity = {
        name: fields[key]
        for name, key in (("cpu_family", "cpu family"), ("cpu_model_number", "model"), ("cpu_stepping", "stepping"))
        if key in fields
    }
    flags = set(fields.get("flags", fields.get("Features", "")).split())
    identity["vector_isa"] = " ".join(flag for flag in _VECTOR_FLAGS if flag in flags) or "none"
    for index in sorted(cache_folder.glob("index*")) if cache_folder.is_dir() else ():
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind != "Instruction":
            identity[f"cache_l{level}"] = size
    return identity


_CACHE_SIZE = re.compile(r"^(\d+)\s*([KMG]?)i?B?$", re.IGNORECASE)
_CACHE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def last_level_cache_bytes(identity: Mapping[str, str]) -> int | None:
    """The size of the highest cache level ``cpu_identity`` reports (``cache_l3`` "32768K"), or None."""
    levels = sorted((int(key[len("cache_l") :]), value) for key, value in identity.items() if key.startswith("cache_l"))
    if not levels:
        return None
    found = _CACHE_SIZE.match(levels[-1][1].strip())
    return int(found.group(1)) * _CACHE_UNITS[found.group(2).upper()] if found else None


def _read_status_bytes(field: str) -> int | None:
    """A memory field of /proc/self/status (``VmHWM``, ``VmRSS``) in bytes."""
    try:
        for line in _PROC_STATUS.read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024  # the kernel reports kB
    except (OSError, ValueError, IndexError):
        pass
    return None


@final
class CpuDevice:
    """The host CPU; torch runs its kernels synchronously, so the host clock is the device clock."""

    kind = "cpu"
    exact_peak_memory = False

    def __init__(self, threads: int | None = None, host_allocator: str = "steady") -> None:
        self.threads = threads or default_cpu_threads()
        self.host_allocator = host_allocator  # a mode of hostalloc.HOST_ALLOCATOR_MODES
        self._allocator_in_use: str | None = None
        self._resident_at_reset = 0
        self._activated = False  # activate() set torch's threads: what setup_changed compares with

    def activate(self) -> None:
        """Pin torch's intra-op threads (see ``default_cpu_threads``) and set the host allocator's mode
        (``hostalloc``: by default freed memory is kept, so no call pays for another's page faults, and
        large blocks sit on huge pages where the plugin could ask for them before torch was imported)."""
        import torch

        torch.set_num_threads(self.threads)
        self._activated = True
        self._allocator_in_use = self._allocator(apply=True)

    def setup_changed(self) -> str | None:
        """What changed in this device's setup since ``activate`` (torch's thread count, set again by a conftest or
        a fixture), in a sentence; None when nothing did."""
        import torch

        now = torch.get_num_threads()
        if not self._activated or now == self.threads:
            return None
        return (
            f"torch runs {now} threads, not the {self.threads} this run measures with (--accel-cpu-threads): "
            "something set them after pytest-accel did (torch.set_num_threads in a conftest or a fixture)"
        )

    def _allocator(self, apply: bool) -> str:
        """The host allocator's provenance name (``hostalloc``), its mode applied or only foreseen."""
        return with_huge_pages(configure_host_allocator(self.host_allocator, apply), large_blocks_on_huge_pages())

    def is_available(self) -> bool:
        """The CPU is always there."""
        return True

    def unavailable_reason(self) -> str:
        """Never unavailable."""
        return ""

    def key(self) -> str:
        """``cpu-<model>-f<family>m<model number>-<cores>c``, e.g. ``cpu-intel-xeon-f6m207-2c``.

        Family and model number name the host generation that a VM's CPU name hides; caches and
        vector ISA are in the provenance, and a baseline that differs in them is not compared.
        """
        identity = cpu_identity()
        generation = ""
        if "cpu_family" in identity and "cpu_model_number" in identity:
            generation = f"-f{identity['cpu_family']}m{identity['cpu_model_number']}"
        return f"cpu-{slug(cpu_model_name())}{generation}-{os.cpu_count() or 1}c"

    def provenance(self) -> Mapping[str, str]:
        """CPU model, cores, torch version and its thread count."""
        import torch

        return {
            "device_model": cpu_model_name(),
            "device_count": "1",
            "cores": str(os.cpu_count() or 1),
            "torch": torch.__version__,
            "cpu_threads": str(self.threads),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "host_allocator": self._allocator_in_use or self._allocator(apply=False),
            "python": platform.python_version(),
            **cpu_identity(),
        }

    def torch_device(self) -> torch.device:
        """``torch.device("cpu")``."""
        import torch

        return torch.device("cpu")

    def synchronize(self) -> None:
        """Nothing to wait for: CPU kernels return when done."""

    def timer(self) -> HostTimer:
        """A ``perf_counter`` timer."""
        return HostTimer(time.perf_counter, self.synchronize)

    def reset_peak_memory(self) -> None:
        """Return the heap's free pages to the kernel, reset the peak-RSS counter where the kernel
        allows it, and note the resident size now: the growth that follows is what the workload needs."""
        release_free_memory()
        # Not Linux, or not permitted: the peak then covers the whole process so far.
        with contextlib.suppress(OSError):
            _PROC_CLEAR_REFS.write_text(_RESET_PEAK_RSS)
        self._resident_at_reset = _read_status_bytes("VmRSS") or 0

    def peak_memory_bytes(self) -> int | None:
        """Peak resident-set growth since the last reset: the workload's own memory, not the interpreter's.

        The whole-process peak would depend on what earlier tests left resident (-k changes it).
        """
        peak = _read_status_bytes("VmHWM")
        return None if peak is None else max(0, peak - self._resident_at_reset)

    def autocast_dtype(self) -> torch.dtype:
        """float32: CPU bf16 kernels are only fast on AMX / AVX512-BF16 parts, which torch does not report."""
        import torch

        return torch.float32

    def mark_step(self) -> None:
        """No lazy graph on the CPU."""

    def empty_cache(self) -> None:
        """The CPU allocator returns memory on free; nothing to do."""

    def out_of_memory(self, error: BaseException) -> OutOfMemoryReport | None:
        """A host ``MemoryError``, or torch's CPU allocator failing ("DefaultCPUAllocator: can't allocate
        memory: you tried to allocate 33554432 bytes", a RuntimeError), is the CPU's out-of-memory."""
        message = str(error)
        if isinstance(error, MemoryError) or (isinstance(error, RuntimeError) and _CPU_ALLOCATOR_FAILED in message):
            requested = re.search(r"allocate (\d+) bytes", message)
            return OutOfMemoryReport(
                int(requested.group(1)) if requested else None, _read_status_bytes("VmHWM"), _total_memory_bytes()
            )
        return None

    def structure_counters(self) -> dict[str, float]:
        """None kept: the profiler's operator counts (and its runtime events) are the whole record."""
        return {}

    def profiler_activities(self) -> list[Any]:
        """The host's activity: CPU operators are all there is."""
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU]

    def graph_replay(self, fn: Callable[[], Any], calls: int) -> Callable[[], Any]:
        """No device graphs on the CPU: refused, never a silent eager run."""
        raise ModeUnavailable(
            "timing='graph' replays a captured device graph (CUDA graphs); the CPU runs kernels as the host calls "
            "them and has none, so its eager time already is the kernel's: use timing='eager' on the CPU"
        )

    def cache_flusher(self) -> CacheFlush:
        """A write of a buffer the size of the last-level cache the OS reports (``cpu_identity``)."""
        import torch

        size = last_level_cache_bytes(cpu_identity())
        if size is None:
            raise ModeUnavailable(
                "cold=True: the OS reports no cache sizes for this CPU (/sys/devices/system/cpu/cpu0/cache), "
                "so no flush of the last-level cache's size can be written"
            )
        buffer = torch.empty(size, dtype=torch.uint8)

        def flush() -> None:
            buffer.zero_()

        return CacheFlush(flush, buffer.numel() * buffer.element_size())

    def clock_watch(self) -> ClockWatch:
        """The CPU's clock is not watched (its frequency scaling is the state probes' to see)."""
        return ClockWatch(None, "")


# What torch's CPU allocator says when the host refuses an allocation (c10/core/impl/alloc_cpu.cpp).
_CPU_ALLOCATOR_FAILED = "can't allocate memory"


def _total_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
