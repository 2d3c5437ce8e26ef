"""The CUDA backend: CUDA events, the caching allocator's peak statistics.

Written against PyTorch's documented ``torch.cuda`` API. Not yet run on a GPU unless the README's
support matrix says otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, final

from pytest_accel.engine.devices.base import (
    CacheFlush,
    ClockWatch,
    EventTimer,
    ModeUnavailable,
    OutOfMemoryReport,
    requested_bytes_from_message,
    slug,
)

if TYPE_CHECKING:
    import torch

__all__ = ["CudaDevice"]


@final
class CudaDevice:
    """The first visible CUDA device (``cuda:0``; pin another with CUDA_VISIBLE_DEVICES)."""

    kind = "cuda"
    exact_peak_memory = True

    def __init__(self, index: int = 0) -> None:
        self.index = index

    def is_available(self) -> bool:
        """``torch.cuda.is_available()``."""
        import torch

        return bool(torch.cuda.is_available())

    def unavailable_reason(self) -> str:
        """Which part of the CUDA stack is missing."""
        import torch

        if torch.version.cuda is None:
            return f"torch {torch.__version__} is built without CUDA"
        return "torch.cuda.is_available() is False (no visible GPU or driver)"

    def key(self) -> str:
        """``cuda-<device name>``, e.g. ``cuda-nvidia-h100-80gb-hbm3``."""
        import torch

        return f"cuda-{slug(torch.cuda.get_device_name(self.index))}"

    def provenance(self) -> Mapping[str, str]:
        """Device name, count, capability, torch, CUDA runtime and driver versions, the card's UUID."""
        import torch

        props = torch.cuda.get_device_properties(self.index)
        return {
            "device_model": torch.cuda.get_device_name(self.index),
            "device_count": str(torch.cuda.device_count()),
            "compute_capability": f"{props.major}.{props.minor}",
            "memory_bytes": str(props.total_memory),
            "torch": torch.__version__,
            "cuda_runtime": str(torch.version.cuda),
            "cuda_driver": _driver_version(),
            "cudnn": str(torch.backends.cudnn.version()),  # type: ignore[no-untyped-call]
            "sm_clock": self.clock_watch().note,
            # which card: its UUID (torch's device properties), and what this process was allowed to see
            "card_uuid": str(getattr(props, "uuid", "unknown")),
            "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", "all"),
        }

    def activate(self) -> None:
        """Make ``cuda:<index>`` the current device."""
        import torch

        torch.cuda.set_device(self.index)

    def torch_device(self) -> torch.device:
        """``cuda:<index>``."""
        import torch

        return torch.device("cuda", self.index)

    def synchronize(self) -> None:
        """``torch.cuda.synchronize``."""
        import torch

        torch.cuda.synchronize(self.index)

    def timer(self) -> EventTimer:
        """CUDA events: launches are asynchronous, so the host clock would time the launch, not the work."""
        import torch

        return EventTimer(torch.cuda.Event)

    def reset_peak_memory(self) -> None:
        """``torch.cuda.reset_peak_memory_stats``."""
        import torch

        torch.cuda.reset_peak_memory_stats(self.index)

    def peak_memory_bytes(self) -> int | None:
        """``torch.cuda.max_memory_allocated``: tensors only, not the allocator's cache."""
        import torch

        return int(torch.cuda.max_memory_allocated(self.index))

    def autocast_dtype(self) -> torch.dtype:
        """bf16 where the GPU supports it (Ampere and newer), else fp16."""
        import torch

        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16

    def mark_step(self) -> None:
        """CUDA executes eagerly; nothing to flush."""

    def empty_cache(self) -> None:
        """``torch.cuda.empty_cache``."""
        import torch

        torch.cuda.empty_cache()

    def out_of_memory(self, error: BaseException) -> OutOfMemoryReport | None:
        """``torch.OutOfMemoryError`` (the CUDA caching allocator's) with the figures around it."""
        import torch

        if not isinstance(error, torch.OutOfMemoryError):
            return None
        total = int(torch.cuda.get_device_properties(self.index).total_memory)
        return OutOfMemoryReport(requested_bytes_from_message(str(error)), self.peak_memory_bytes(), total)

    def structure_counters(self) -> dict[str, float]:
        """None kept: the profiler's operator counts (and its runtime events) are the whole record."""
        return {}

    def profiler_activities(self) -> list[Any]:
        """The host's operators and the CUDA kernels they launch (CUPTI)."""
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU, ProfilerActivity.CUDA]

    def graph_replay(self, fn: Callable[[], Any], calls: int) -> Callable[[], Any]:
        """``calls`` calls of ``fn`` captured in one CUDA graph (as triton's ``do_bench_cudagraph`` and
        Inductor's benchmarker time launch-bound kernels): a replay launches them all at once, so the
        host's launch rate no longer bounds a kernel of a few microseconds.

        Three calls on a side stream first, as torch's CUDA-graph notes ask (lazy initialisation,
        cuBLAS workspaces), then the capture. A workload that synchronizes with the host or touches
        CPU tensors cannot be captured: the error says so.
        """
        import torch

        side = torch.cuda.Stream(self.index)  # type: ignore[no-untyped-call]
        side.wait_stream(torch.cuda.current_stream(self.index))
        with torch.cuda.stream(side):
            for _ in range(_GRAPH_WARMUP_CALLS):
                fn()
        prior = torch.cuda.current_stream(self.index)
        prior.wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        output: Any = None
        try:
            with torch.cuda.graph(graph):
                for _ in range(calls):
                    output = fn()
        except RuntimeError as error:
            # torch.cuda.graph.__exit__ (torch 2.13) calls capture_end, which raises after a failed body, before
            # it leaves the capture stream: put this thread back on its stream, or every later test runs there.
            torch.cuda.set_stream(prior)
            raise ModeUnavailable(
                f"timing='graph': the workload could not be captured in a CUDA graph ({error}); a workload that "
                "synchronizes with the host, reads a CPU tensor or changes shape between calls cannot be replayed: "
                "time it with timing='eager'"
            ) from error
        graph.replay()  # the first replay also uploads the graph: untimed, as do_bench_cudagraph's
        torch.cuda.synchronize(self.index)

        def replay() -> Any:
            graph.replay()
            return output

        return replay

    def cache_flusher(self) -> CacheFlush:
        """A write of an L2-sized buffer (``L2_cache_size`` of the device properties), as Inductor's
        benchmarker flushes: exactly the L2, not triton's fixed 256 MB."""
        import torch

        l2_bytes = int(getattr(torch.cuda.get_device_properties(self.index), "L2_cache_size", 0) or 0)
        if l2_bytes <= 0:
            raise ModeUnavailable(
                f"cold=True: torch {torch.__version__} does not report this GPU's L2 size (L2_cache_size), "
                "so no flush of the right size can be written"
            )
        buffer = torch.empty(l2_bytes // 4, dtype=torch.int32, device=self.torch_device())

        def flush() -> None:
            buffer.zero_()

        return CacheFlush(flush, buffer.numel() * buffer.element_size())

    def clock_watch(self) -> ClockWatch:
        """The SM clock through NVML (``torch.cuda.clock_rate``, which needs pynvml); "clock not watched"
        where NVML is missing or does not answer."""
        import torch

        try:
            torch.cuda.clock_rate(self.index)
        except Exception as error:  # no pynvml (ModuleNotFoundError), or NVML without a driver
            return ClockWatch(None, f"clock not watched: the SM clock cannot be read ({type(error).__name__}: {error})")
        index, default = self.index, _default_sm_clock(self.index)
        note = "SM clock watched through NVML" + (f", held to its default {default:.0f} MHz" if default else "")
        return ClockWatch(lambda: float(torch.cuda.clock_rate(index)), note, default)


def _default_sm_clock(index: int) -> float | None:
    """The GPU's default SM clock (NVML's default applications clock, MHz), through the handle torch's own
    ``clock_rate`` uses (``CUDA_VISIBLE_DEVICES`` mapped); None where NVML does not say."""
    import torch

    try:
        import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]

        handle = torch.cuda._get_pynvml_handler(index)
        return float(pynvml.nvmlDeviceGetDefaultApplicationsClock(handle, pynvml.NVML_CLOCK_SM)) or None
    except Exception:  # no pynvml, an NVML without a driver, a GPU that does not report it (NVMLError_NotSupported)
        return None


# Calls of a workload on a side stream before its CUDA graph is captured (torch's CUDA-graph notes).
_GRAPH_WARMUP_CALLS = 3


def _driver_version() -> str:
    """The NVIDIA driver's version, e.g. ``580.159.04``; "unknown" when neither way answers.

    torch 2.11 (the H200 run, 2026-12-01) has no ``torch._C._cuda_getDriverVersion`` any more, so
    NVML (nvidia-ml-py, on every CUDA image we know) is asked first."""
    try:
        import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # no NVML, or no driver to answer: the older torch hook, then unknown
        import torch

        driver = getattr(torch._C, "_cuda_getDriverVersion", None)
        return str(driver()) if driver is not None else "unknown"
