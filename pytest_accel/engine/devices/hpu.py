"""The Gaudi (HPU) backend, written against Habana's documented ``habana_frameworks.torch`` API.

Nothing here has run on real Gaudi hardware yet: it is exercised through a contract fake of the
calls below (tests/fakes/habana.py, used by tests/test_devices.py). The calls it makes, and only these:

- ``habana_frameworks.torch.core``: importing it registers ``torch.hpu``; ``mark_step()``.
- ``habana_frameworks.torch.hpu``: ``is_available``, ``device_count``, ``synchronize``, ``Event``,
  ``max_memory_allocated``, ``reset_peak_memory_stats``, ``memory_stats``.
- ``habana_frameworks.torch.utils.experimental``: ``_get_device_type`` and ``synDeviceType``, which
  name the Gaudi generation without occupying the device (``get_device_name`` would).
- ``habana_frameworks.torch.utils.internal.is_lazy()``: lazy or eager, as the bridge decided it.
- ``torch.profiler.ProfilerActivity.HPU`` beside ``CPU`` for operator tables (Habana's "Profiling
  with PyTorch"), with the bridge imported first.
- ``habana_frameworks.torch.hpu.metrics.metric_global(name).stats()`` for the structural record: the
  ``graph_compilation`` and ``cpu_fallback`` metrics' ``TotalNumber`` (Habana's "Runtime Environment
  Variables / Metrics": a graph compiled every step is the dynamic-shape problem its guide describes).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, final

from pytest_accel.engine.devices.base import (
    CacheFlush,
    ClockWatch,
    DeviceUnavailable,
    EventTimer,
    ModeUnavailable,
    OutOfMemoryReport,
    requested_bytes_from_message,
)

if TYPE_CHECKING:
    import torch

__all__ = ["HpuDevice"]

# synDeviceType member name -> the generation name used in device keys (optimum-habana's names).
_GENERATIONS = {"synDeviceGaudi": "gaudi", "synDeviceGaudi2": "gaudi2", "synDeviceGaudi3": "gaudi3"}
_OOM_PATTERN = re.compile(r"out of memory|allocation failed|\bOOM\b", re.IGNORECASE)
# Habana's allocator names the failed size in bytes: "PT_DEVMEM Allocation failed for size::2147483648 (2048)MB".
_HABANA_REQUESTED_PATTERN = re.compile(r"size::(\d+)")


def lazy_mode() -> bool:
    """Whether the Habana bridge runs in lazy mode, as the bridge itself decides.

    The bridge answers (``habana_frameworks.torch.utils.internal.is_lazy()``): an unset ``PT_HPU_LAZY_MODE``
    means lazy in gaudi-pytorch-bridge 1.19 but eager + torch.compile in the releases after it, so the
    variable alone cannot tell. Where the bridge does not load or lacks the function, the variable is read
    with 1.19's default.
    """
    try:
        internal = importlib.import_module("habana_frameworks.torch.utils.internal")
        return bool(internal.is_lazy())
    except (ImportError, AttributeError, AssertionError, RuntimeError):
        return os.environ.get("PT_HPU_LAZY_MODE", "1") != "0"


@final
class HpuDevice:
    """The first Gaudi device of this process."""

    kind = "hpu"
    exact_peak_memory = True

    def __init__(self) -> None:
        self._import_error: str | None = None

    def _hpu(self) -> ModuleType:
        return importlib.import_module("habana_frameworks.torch.hpu")

    def _core(self) -> ModuleType:
        return importlib.import_module("habana_frameworks.torch.core")

    def is_available(self) -> bool:
        """Habana's bridge imports and reports a device."""
        try:
            self._core()
            available = bool(self._hpu().is_available())
        except ImportError as error:
            self._import_error = f"habana_frameworks is not installed ({error})"
            return False
        except (AssertionError, RuntimeError) as error:
            # The bridge asserts its torch at import (reported of gaudi-pytorch-bridge 1.19: a torch it was not built
            # for, or stock torch in lazy mode): a stray install on a CUDA box is "no Gaudi here", not a crash.
            self._import_error = f"habana_frameworks failed to import ({type(error).__name__}: {error})"
            return False
        if not available:
            self._import_error = "habana_frameworks.torch.hpu.is_available() is False (no Gaudi visible)"
        return available

    def unavailable_reason(self) -> str:
        """The import error or the bridge's own 'no device'."""
        if self._import_error is None:
            self.is_available()
        return self._import_error or ""

    def generation(self) -> str:
        """``gaudi``, ``gaudi2`` or ``gaudi3``, read without occupying the device."""
        experimental = importlib.import_module("habana_frameworks.torch.utils.experimental")
        device_type = experimental._get_device_type()
        for member, name in _GENERATIONS.items():
            if device_type == getattr(experimental.synDeviceType, member, object()):
                return name
        return f"unknown-{device_type}"

    def key(self) -> str:
        """``hpu-<generation>``, e.g. ``hpu-gaudi2``."""
        return f"hpu-{self.generation()}"

    def provenance(self) -> Mapping[str, str]:
        """Generation, count, torch, Habana bridge version, lazy/eager mode and the visible modules."""
        import torch

        try:
            bridge = importlib.metadata.version("habana-torch-plugin")
        except importlib.metadata.PackageNotFoundError:
            bridge = "unknown"
        return {
            "device_model": self.generation(),
            "device_count": str(self._hpu().device_count()),
            "torch": torch.__version__,
            "habana_torch_plugin": bridge,
            "lazy_mode": str(lazy_mode()).lower(),
            # the modules this process may open (an xdist worker's one): the driver's module ids, or all
            "visible_modules": os.environ.get("HABANA_VISIBLE_MODULES", "all"),
        }

    def activate(self) -> None:
        """Importing the bridge (done by ``is_available``) is all Gaudi needs."""
        self._core()

    def torch_device(self) -> torch.device:
        """``torch.device("hpu")``."""
        import torch

        return torch.device("hpu")

    def synchronize(self) -> None:
        """Flush the lazy graph, then wait for the device."""
        self.mark_step()
        self._hpu().synchronize()

    def timer(self) -> EventTimer:
        """HPU events (``torch.hpu.Event(enable_timing=True)``), recorded after a lazy-graph flush."""
        event_type = self._hpu().Event
        mark_step = self.mark_step

        def flushing_event(enable_timing: bool) -> _FlushingEvent:
            return _FlushingEvent(event_type(enable_timing=enable_timing), mark_step)

        return EventTimer(flushing_event)

    def reset_peak_memory(self) -> None:
        """``reset_peak_memory_stats``."""
        self._hpu().reset_peak_memory_stats()

    def peak_memory_bytes(self) -> int | None:
        """``max_memory_allocated``."""
        return int(self._hpu().max_memory_allocated())

    def autocast_dtype(self) -> torch.dtype:
        """bf16 on every Gaudi generation."""
        import torch

        return torch.bfloat16

    def mark_step(self) -> None:
        """``htcore.mark_step()`` in lazy mode: runs the accumulated graph (it is not a sync)."""
        if lazy_mode():
            self._core().mark_step()

    def empty_cache(self) -> None:
        """Gaudi has no user-facing cache release; a mark_step drops the graph's references."""
        self.mark_step()

    def out_of_memory(self, error: BaseException) -> OutOfMemoryReport | None:
        """Habana reports device OOM as a RuntimeError naming a failed allocation."""
        if not isinstance(error, RuntimeError) or not _OOM_PATTERN.search(str(error)):
            return None
        limit = self._hpu().memory_stats().get("Limit")
        habana_size = _HABANA_REQUESTED_PATTERN.search(str(error))
        return OutOfMemoryReport(
            int(habana_size.group(1)) if habana_size else requested_bytes_from_message(str(error)),
            self.peak_memory_bytes(),
            int(limit) if limit is not None else None,
        )

    def structure_counters(self) -> dict[str, float]:
        """Graph compilations and CPU fallbacks so far (the bridge's global metrics' ``TotalNumber``)."""
        self._core()
        metrics = importlib.import_module("habana_frameworks.torch.hpu.metrics")
        counters = {}
        for metric, name in (("graph_compilation", "HPU graph compilations"), ("cpu_fallback", "HPU CPU fallbacks")):
            stats = dict(metrics.metric_global(metric).stats())
            counters[name] = float(stats.get("TotalNumber", 0))
        return counters

    def profiler_activities(self) -> list[Any]:
        """The host's operators and ``ProfilerActivity.HPU``, as Habana's "Profiling with PyTorch" passes them.

        The HPU activity is backed by the bridge's profiler plugin, so the bridge is imported first. Importing
        it replaces ``torch.profiler.profile`` and ``ProfilerActivity`` (bridge 1.19's ``activity_profiler``), and
        its HPU events reach the exported trace only: operator tables hold host times, the structural record
        host operators (no ``[hpu kernel]`` rows), beside the bridge's compile and fallback counters.
        """
        self._core()
        import torch
        from torch.profiler import ProfilerActivity

        hpu = getattr(ProfilerActivity, "HPU", None)
        if hpu is None:
            raise DeviceUnavailable(
                f"torch {torch.__version__} has no torch.profiler.ProfilerActivity.HPU, which operator tables on "
                "Gaudi need: use the torch of Habana's release (its images ship it)"
            )
        return [ProfilerActivity.CPU, hpu]

    def graph_replay(self, fn: Callable[[], Any], calls: int) -> Callable[[], Any]:
        """Refused, for now: the bridge can capture a callable's calls (``HPUGraph`` capture and replay, the
        ``graph`` context, ``wrap_in_hpu_graph_func`` in lazy mode), but no Gaudi has run it here to check."""
        raise ModeUnavailable(
            "timing='graph' on Gaudi is not written yet: the bridge's HPUGraph capture and replay (and "
            "wrap_in_hpu_graph_func, lazy mode) could capture N calls, but none has run on a Gaudi here; until then "
            "wrap the model in the test (habana_frameworks.torch.hpu.wrap_in_hpu_graph) and time it with "
            "timing='eager': each call then replays its HPU graph"
        )

    def cache_flusher(self) -> CacheFlush:
        """Refused: the bridge reports no cache size to flush."""
        raise ModeUnavailable(
            "cold=True: Habana's bridge reports no last-level cache size for Gaudi, so no flush of the right size "
            "can be written; time it warm (the default)"
        )

    def clock_watch(self) -> ClockWatch:
        """Not watched: the bridge documents no clock reading."""
        return ClockWatch(None, "")


@final
class _FlushingEvent:
    """An HPU event whose ``record`` first flushes the lazy graph, so the event lands after the work."""

    __slots__ = ("_event", "_mark_step")

    def __init__(self, event: Any, mark_step: Callable[[], None]) -> None:
        self._event = event
        self._mark_step = mark_step

    def record(self) -> None:
        self._mark_step()
        self._event.record()

    def synchronize(self) -> None:
        self._event.synchronize()

    def elapsed_time(self, end: _FlushingEvent) -> float:
        return float(self._event.elapsed_time(end._event))
