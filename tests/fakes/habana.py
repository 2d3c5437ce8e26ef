"""A contract fake of the ``habana_frameworks`` calls that ``pytest_accel/devices/hpu.py`` makes.

Only the calls listed in that module's docstring exist here, with the signatures of Habana's documented
API, so a backend that calls anything else fails with ``AttributeError`` instead of passing by accident.
One more is the suite's own: ``hpu.wrap_in_hpu_graph`` (``perf_tests/workloads/mmdit.py``, HPU graphs).

The execution mode follows the bridge's source: in gaudi-pytorch-bridge 1.19
(``python_packages/habana_frameworks/torch/utils/internal.py``) ``is_lazy()`` reads ``PT_HPU_LAZY_MODE`` once,
unset meaning lazy, and ``hpu/__init__.py`` imports ``.graphs`` (``wrap_in_hpu_graph``) only ``if is_lazy()``.
Releases after it default to eager + torch.compile (Habana's "PyTorch Gaudi Theory of Operations": "Eager mode
with torch.compile ... is the default", lazy "a legacy fallback"); their source was not available here, so
``release="eager-default"`` keeps 1.19's code and changes only the unset variable's meaning.
Every call is appended, in order, to one shared log (``FakeHabana.calls``); events read a fake device
clock in milliseconds that only ``FakeHabana.advance`` moves.
"""

from __future__ import annotations

import enum
import os
import sys
from types import ModuleType
from typing import Any, final

import pytest

__all__ = ["GENERATIONS", "RELEASES", "FakeHabana", "SynDeviceType", "install_fake_habana"]

# The bridge release -> what an unset PT_HPU_LAZY_MODE means ("1": lazy).
RELEASES = {"1.19": "1", "eager-default": "0"}


class SynDeviceType(enum.IntEnum):
    """Stand-in for synapse's ``synDeviceType`` enum, Gaudi members only."""

    # The values are arbitrary: the backend compares members, never numbers.
    synDeviceGaudi = 1
    synDeviceGaudi2 = 2
    synDeviceGaudi3 = 3


# generation name used in device keys -> the member ``_get_device_type()`` returns on that hardware.
GENERATIONS = {
    "gaudi": SynDeviceType.synDeviceGaudi,
    "gaudi2": SynDeviceType.synDeviceGaudi2,
    "gaudi3": SynDeviceType.synDeviceGaudi3,
}
# HBM a Gaudi 2 reports as its allocator limit (96 GiB card, ~94.6 GiB usable); any large figure would do.
_GAUDI2_LIMIT_BYTES = 101_583_306_752


@final
class FakeHabana:
    """The state behind the fake modules: the call log, the device clock and the memory counters."""

    def __init__(
        self, generation: str = "gaudi2", available: bool = True, device_count: int = 8, release: str = "1.19"
    ) -> None:
        if release not in RELEASES:
            raise ValueError(f"unknown bridge release {release!r}; choose one of {', '.join(RELEASES)}")
        if generation not in GENERATIONS:
            raise ValueError(f"unknown Gaudi generation {generation!r}; choose one of {', '.join(GENERATIONS)}")
        self.generation = generation
        self.release = release
        self.available = available
        self.device_count = device_count
        self.calls: list[str] = []  # qualified names of every call, in order: "core.mark_step", "Event.record"
        self.clock_ms = 0.0  # the device clock events stamp; moves only through advance()
        self.limit_bytes = _GAUDI2_LIMIT_BYTES
        self.in_use_bytes = 0
        self.peak_bytes = 0  # high-water mark of in_use_bytes since the last reset_peak_memory_stats()
        # The bridge's global metrics (``hpu.metrics.metric_global``): name -> TotalNumber so far.
        self.metrics = {"graph_compilation": 0, "cpu_fallback": 0}
        self.modules = self._build_modules()

    def advance(self, milliseconds: float) -> None:
        """Let device time pass, as if queued work ran for ``milliseconds``."""
        self.clock_ms += milliseconds

    def allocate(self, nbytes: int) -> None:
        """Pretend a tensor of ``nbytes`` was allocated on the device."""
        self.in_use_bytes += nbytes
        self.peak_bytes = max(self.peak_bytes, self.in_use_bytes)

    def free(self, nbytes: int) -> None:
        """Pretend ``nbytes`` of tensors were freed."""
        self.in_use_bytes -= nbytes

    def _build_modules(self) -> dict[str, ModuleType]:
        fake = self

        lazy_cache: list[bool] = []

        def is_lazy() -> bool:
            """``utils.internal.is_lazy``: the variable, read once (1.19 caches it on the function). A query, so
            not logged: the call log is the device's work."""
            if not lazy_cache:
                lazy_cache.append(os.environ.get("PT_HPU_LAZY_MODE", RELEASES[fake.release]) != "0")
            return lazy_cache[0]

        def mark_step(device_str: str = "", sync: bool = False) -> None:
            fake.calls.append("core.mark_step")

        def is_available() -> bool:
            fake.calls.append("hpu.is_available")
            return fake.available

        def device_count() -> int:
            fake.calls.append("hpu.device_count")
            return fake.device_count if fake.available else 0

        def synchronize() -> None:
            fake.calls.append("hpu.synchronize")

        def max_memory_allocated(device: object = None) -> int:
            fake.calls.append("hpu.max_memory_allocated")
            return fake.peak_bytes

        def reset_peak_memory_stats(device: object = None) -> None:
            fake.calls.append("hpu.reset_peak_memory_stats")
            fake.peak_bytes = fake.in_use_bytes

        def memory_stats(device: object = None) -> dict[str, int]:
            fake.calls.append("hpu.memory_stats")
            return {"Limit": fake.limit_bytes, "InUse": fake.in_use_bytes, "MaxInUse": fake.peak_bytes}

        def get_device_name(device: object = None) -> str:
            # A tripwire, not part of the contract: on real hardware this occupies the device.
            fake.calls.append("hpu.get_device_name")
            raise AssertionError("get_device_name() occupies the Gaudi; the backend must not call it")

        def _get_device_type() -> SynDeviceType:
            fake.calls.append("experimental._get_device_type")
            return GENERATIONS[fake.generation]

        class Event:
            """``habana_frameworks.torch.hpu.Event``: a marker on the device stream that can time work."""

            def __init__(self, enable_timing: bool = False) -> None:
                fake.calls.append("hpu.Event")
                self.enable_timing = enable_timing
                self.recorded_ms: float | None = None

            def record(self, stream: object = None) -> None:
                fake.calls.append("Event.record")
                self.recorded_ms = fake.clock_ms

            def synchronize(self) -> None:
                fake.calls.append("Event.synchronize")

            def query(self) -> bool:
                fake.calls.append("Event.query")
                return True

            def elapsed_time(self, end_event: Event) -> float:
                """Milliseconds between this event's record and ``end_event``'s."""
                fake.calls.append("Event.elapsed_time")
                if not (self.enable_timing and end_event.enable_timing):
                    raise RuntimeError("Both events must be created with argument 'enable_timing=True'")
                if self.recorded_ms is None or end_event.recorded_ms is None:
                    raise RuntimeError("Both events must be recorded before calculating elapsed time")
                return end_event.recorded_ms - self.recorded_ms

        def wrap_in_hpu_graph(module: Any, asynchronous: bool = False, disable_tensor_cache: bool = False) -> Any:
            """The suite's call (HPU graphs for inference): replaces ``module.forward`` in place, as the real one."""
            fake.calls.append("hpu.wrap_in_hpu_graph")
            captured = module.forward

            def replayed(*args: Any, **kwargs: Any) -> Any:
                fake.calls.append("hpu_graph.replay")
                return captured(*args, **kwargs)

            module.forward = replayed
            return module

        root = _module("habana_frameworks", package=True)
        torch_package = _module("habana_frameworks.torch", package=True)
        core = _module("habana_frameworks.torch.core", mark_step=mark_step)

        def metric_global(name: str) -> Any:
            """``hpu.metrics.metric_global``: a global metric whose ``stats()`` is a list of (name, value) pairs."""
            fake.calls.append("metrics.metric_global")
            if name not in fake.metrics:
                raise ValueError(f"unknown metric {name!r}")

            class Metric:
                def stats(self) -> list[tuple[str, Any]]:
                    fake.calls.append("metric.stats")
                    return [("TotalNumber", fake.metrics[name]), ("TotalTime", 0), ("AvgTime", 0.0)]

            return Metric()

        metrics = _module("habana_frameworks.torch.hpu.metrics", metric_global=metric_global)
        hpu = _module(
            "habana_frameworks.torch.hpu",
            package=True,
            is_available=is_available,
            device_count=device_count,
            synchronize=synchronize,
            Event=Event,
            max_memory_allocated=max_memory_allocated,
            reset_peak_memory_stats=reset_peak_memory_stats,
            memory_stats=memory_stats,
            get_device_name=get_device_name,
        )
        if is_lazy():  # hpu/__init__.py: ``if is_lazy(): from .graphs import *``
            hpu.__dict__["wrap_in_hpu_graph"] = wrap_in_hpu_graph
        fake.calls.clear()  # the import's own reading is not the backend's call
        utils = _module("habana_frameworks.torch.utils", package=True)
        internal = _module("habana_frameworks.torch.utils.internal", is_lazy=is_lazy)
        experimental = _module(
            "habana_frameworks.torch.utils.experimental", _get_device_type=_get_device_type, synDeviceType=SynDeviceType
        )
        # Submodules are attributes of their packages, as after a real import.
        root.__dict__["torch"] = torch_package
        torch_package.__dict__.update(core=core, hpu=hpu, utils=utils)
        hpu.__dict__["metrics"] = metrics
        utils.__dict__.update(experimental=experimental, internal=internal)
        modules = (root, torch_package, core, hpu, metrics, utils, experimental, internal)
        return {module.__name__: module for module in modules}


def _module(name: str, *, package: bool = False, **attributes: Any) -> ModuleType:
    module = ModuleType(name)
    if package:
        module.__path__ = []  # so the import system accepts submodules under it
    module.__dict__.update(attributes)
    return module


def install_fake_habana(
    monkeypatch: pytest.MonkeyPatch,
    generation: str = "gaudi2",
    available: bool = True,
    import_error: BaseException | None = None,
    release: str = "1.19",
    profiler: bool = True,
) -> FakeHabana:
    """Put a fake ``habana_frameworks`` into ``sys.modules`` for one test; returns its state.

    ``import_error``: what importing the bridge raises instead. A review of gaudi-pytorch-bridge 1.19
    reported an ``AssertionError`` from ``habana_frameworks.torch``'s import on a torch it was not built for (and
    on stock torch in lazy mode); the bridge's source was not available here to confirm the message.
    ``profiler=False``: torch's profiler as it is, without the bridge's wrapper (see ``_wrap_the_profiler``)."""
    fake = FakeHabana(generation, available, release=release)
    if profiler:
        _wrap_the_profiler(monkeypatch, fake)
    if import_error is not None:
        for name in fake.modules:
            monkeypatch.delitem(sys.modules, name, raising=False)
        monkeypatch.setattr(sys, "meta_path", [_Refusing(import_error), *sys.meta_path])
        return fake
    for name, module in fake.modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return fake


@final
class _Refusing:
    """A meta path finder whose import of ``habana_frameworks`` raises what the real bridge raised."""

    def __init__(self, error: BaseException) -> None:
        self._error = error

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "habana_frameworks" or name.startswith("habana_frameworks."):
            raise self._error


# An HPU kernel as the bridge's activity profiler writes it into an exported trace (and only there).
HPU_TRACE_EVENT = {"name": "fake_hpu_kernel", "ph": "X", "cat": "hpu_op", "ts": 0, "dur": 1, "pid": "HPU"}


def _wrap_the_profiler(monkeypatch: pytest.MonkeyPatch, fake: FakeHabana) -> None:
    """What importing ``habana_frameworks.torch`` does to torch's profiler, from gaudi-pytorch-bridge 1.19's
    ``activity_profiler/activity_profiler.py`` (``register_habana_activity_profiler``):

    - ``torch.profiler.ProfilerActivity`` becomes the bridge's own enum (CPU, CUDA, HPU);
    - ``torch.profiler.profile`` becomes a subclass that hands torch CPU and CUDA as torch's own members and
      HPU as ``None`` (``_exchange_activity``), and starts the bridge's activity profiler when HPU was asked;
    - ``torch.autograd.profiler.profile.export_chrome_trace`` appends the HPU events to the file
      (``hpu_profiler._export_logs``): device events reach the exported trace, never ``key_averages()``.

    The bridge ran on a torch that let the ``None`` through; torch 2.13 refuses it (``_parse_activities``),
    so here it is dropped: what reaches torch is the same, the host's events.
    """
    import json

    import torch
    import torch.autograd.profiler
    import torch.profiler

    original = torch.profiler.ProfilerActivity
    original_profile = torch.profiler.profile

    class HabanaProfilerActivity(enum.Enum):
        CPU = 1
        CUDA = 2
        HPU = 3

    class habana_autograd_profile_wrapper(torch.autograd.profiler.profile):  # type: ignore[misc]
        def export_chrome_trace(self, path: str, *torch_args: Any) -> None:
            super().export_chrome_trace(path, *torch_args)  # 1.19 takes (path) only: its torch passed no more
            with open(path) as trace:
                written = json.load(trace)
            written.setdefault("traceEvents", []).append(HPU_TRACE_EVENT)
            with open(path, "w") as trace:
                json.dump(written, trace)

    class habana_profile(original_profile):  # type: ignore[misc,valid-type]
        def __init__(self, *, activities: Any = None, **kwargs: Any) -> None:
            asked = (HabanaProfilerActivity.CPU, HabanaProfilerActivity.HPU) if activities is None else activities
            self.hpu_profiling_active = HabanaProfilerActivity.HPU in asked
            exchanged = [
                {HabanaProfilerActivity.CPU: original.CPU, HabanaProfilerActivity.CUDA: original.CUDA}.get(a)
                for a in asked
            ]
            super().__init__(activities=[a for a in exchanged if a is not None], **kwargs)

        def start_trace(self) -> None:
            if self.hpu_profiling_active:
                fake.calls.append("activity_profiler.start")
            super().start_trace()

        def stop_trace(self) -> None:
            super().stop_trace()
            if self.hpu_profiling_active:
                fake.calls.append("activity_profiler.stop")

    monkeypatch.setattr(torch.profiler, "ProfilerActivity", HabanaProfilerActivity)
    monkeypatch.setattr(torch.profiler, "profile", habana_profile)
    monkeypatch.setattr(torch.autograd.profiler, "profile", habana_autograd_profile_wrapper)
