"""The device seam: the one protocol every backend implements.

Backends are the only modules that import torch or ``habana_frameworks``, and they import them
inside methods, so that loading the plugin stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, final

if TYPE_CHECKING:
    import torch

__all__ = [
    "CacheFlush",
    "ClockWatch",
    "Device",
    "DeviceUnavailable",
    "EventTimer",
    "ModeUnavailable",
    "OutOfMemoryReport",
    "RegionTimer",
    "slug",
]


class DeviceUnavailable(Exception):
    """The requested device is not present; the message says what was found instead."""


class ModeUnavailable(Exception):
    """A timing mode (graph replay, a cold cache) this device cannot give; the message names the cause."""


@final
@dataclass(frozen=True)
class CacheFlush:
    """A write of a buffer the size of a device's last-level cache: run before a call, it leaves it a cold cache."""

    flush: Callable[[], None]  # writes the buffer (queued on the device's stream, like a workload)
    bytes: int  # the buffer's size (an allocator's peak counts it: the figure's peak leaves it out)


@final
@dataclass(frozen=True)
class ClockWatch:
    """How a device's compute clock is read around timed rounds, to see it throttle (thermal or power cap)."""

    read: Callable[[], float] | None  # the clock now (MHz); None where it cannot be read
    note: str  # for the provenance: how the clock is watched, or why it is not
    # The clock a round is held to (MHz): the device's default compute clock, as nvbench compares with (a GPU
    # capped before the rounds start is throttled from the first); None: the reading as the rounds start.
    reference: float | None = None


class RegionTimer(Protocol):
    """Times one region of device work; ``stop`` returns seconds once the work has finished."""

    def start(self) -> None:
        """Mark the start of the region (after any earlier work is done)."""

    def stop(self) -> float:
        """Mark the end of the region, wait for the device, return elapsed seconds."""


@final
class EventTimer:
    """Times a region with a pair of device events: no host round trip inside the region.

    Works for any torch backend whose ``Event(enable_timing=True)`` has ``record``,
    ``synchronize`` and ``elapsed_time`` (CUDA and HPU both do).
    """

    __slots__ = ("_end", "_event_type", "_start")

    def __init__(self, event_type: Any) -> None:
        self._event_type = event_type
        self._start: Any = None
        self._end: Any = None

    def start(self) -> None:
        """Record the start event on the current stream."""
        self._start = self._event_type(enable_timing=True)
        self._end = self._event_type(enable_timing=True)
        self._start.record()

    def stop(self) -> float:
        """Record the end event, wait for it, return the elapsed device time in seconds."""
        if self._start is None:
            raise RuntimeError("EventTimer.stop() called before start()")
        self._end.record()
        self._end.synchronize()
        elapsed_ms = float(self._start.elapsed_time(self._end))
        self._start = None
        return elapsed_ms / 1000.0


@final
@dataclass(frozen=True)
class OutOfMemoryReport:
    """What is known about an out-of-memory failure, for a readable error."""

    requested_bytes: int | None  # the allocation that failed, parsed from the vendor's message
    peak_bytes: int | None  # peak device memory reached before the failure
    limit_bytes: int | None  # total memory of the device


class Device(Protocol):
    """One accelerator kind (cpu, cuda, hpu) as the measurement code sees it."""

    kind: str  # "cpu", "cuda" or "hpu": the value of --device
    # Whether peak_memory_bytes is exact enough to gate on (an allocator's own counter), not an
    # OS estimate: the CPU's RSS growth swung between 0 and 50 MiB across runs of the same test.
    exact_peak_memory: bool

    def is_available(self) -> bool:
        """Whether this kind of device is present and usable in this process."""

    def unavailable_reason(self) -> str:
        """Why ``is_available`` is false (missing package, no device, driver error)."""

    def key(self) -> str:
        """Stable name of the hardware class, e.g. ``cuda-nvidia-h100-80gb-hbm3``; baselines are filed under it."""

    def provenance(self) -> Mapping[str, str]:
        """Model, count, torch and driver/runtime versions: what a figure was measured with."""

    def activate(self) -> None:
        """Make this the device measured on (CPU: pin torch's thread count; CUDA: select the GPU)."""

    def torch_device(self) -> torch.device:
        """The ``torch.device`` workloads should allocate on."""

    def synchronize(self) -> None:
        """Block the host until all queued device work has finished."""

    def timer(self) -> RegionTimer:
        """A region timer on the device's own clock (events where the device has them)."""

    def reset_peak_memory(self) -> None:
        """Start a new peak-memory window."""

    def peak_memory_bytes(self) -> int | None:
        """Peak memory since the last reset, or None where the device cannot tell."""

    def autocast_dtype(self) -> torch.dtype:
        """The mixed-precision dtype that is fast on this device (float32 where none is)."""

    def mark_step(self) -> None:
        """End a step: flushes the lazy graph on HPU, nothing elsewhere."""

    def empty_cache(self) -> None:
        """Give cached device memory back (after an OOM, between heavy tests)."""

    def out_of_memory(self, error: BaseException) -> OutOfMemoryReport | None:
        """An ``OutOfMemoryReport`` when ``error`` is this device running out of memory, else None."""

    def structure_counters(self) -> dict[str, float]:
        """Cumulative counts of the device's own structural events (HPU: graph compilations, CPU
        fallbacks), read before and after a structural record; empty where the device keeps none."""

    def profiler_activities(self) -> list[Any]:
        """The ``torch.profiler`` activities that see this device's work (the host's first); raises
        ``DeviceUnavailable`` naming what is missing where this torch's profiler cannot see it."""

    def graph_replay(self, fn: Callable[[], Any], calls: int) -> Callable[[], Any]:
        """``calls`` calls of ``fn`` captured as one device graph; the result replays it and returns the
        last call's (static) output. Raises ``ModeUnavailable`` where the device has no such graphs."""

    def cache_flusher(self) -> CacheFlush:
        """A write of a buffer the size of the device's last-level cache: run before a timed call, it
        leaves that call a cold cache. Raises ``ModeUnavailable`` where the size is unknown."""

    def clock_watch(self) -> ClockWatch:
        """How this device's compute clock can be read around rounds (``read`` None where it cannot)."""


_SIZE_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def requested_bytes_from_message(message: str) -> int | None:
    """Parse the failed allocation size out of an OOM message ("Tried to allocate 2.00 GiB")."""
    found = re.search(r"[Tt]ried to allocate ([0-9.]+) ?(B|KiB|MiB|GiB|TiB)", message)
    if found is None:
        return None
    return int(float(found.group(1)) * _SIZE_UNITS[found.group(2)])


def slug(text: str) -> str:
    """Lower-case, dash-separated form of a hardware name, stable across hosts."""
    cleaned = re.sub(r"\(r\)|\(tm\)|\bcpu\b|\bprocessor\b|@.*$", " ", text.lower())
    return re.sub(r"[^a-z0-9]+", "-", cleaned).strip("-") or "unknown"
