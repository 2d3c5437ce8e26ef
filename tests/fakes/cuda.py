"""A contract fake of the ``torch.cuda`` calls the CUDA backend's timing modes make, and of NVML's clock.

Installed with ``install_fake_cuda(monkeypatch)`` over the real ``torch.cuda`` attributes, it runs
the backend's code on the CPU: graph capture (``Stream``, ``stream``, ``current_stream``, ``set_stream``,
``CUDAGraph``, ``graph``, ``synchronize``), the device properties (``L2_cache_size``) and the SM
clock (``clock_rate``, which asks NVML). Only the calls the backend makes, with the behaviour torch
documents for them: a capture records the callable's calls and a replay runs them again.

``graph`` follows torch 2.13's ``torch.cuda.graphs.graph`` (read from its source): ``__enter__`` enters
the capture stream's context, then ``capture_begin``; ``__exit__`` calls ``capture_end`` first and leaves
the stream only after it. A capture whose body failed makes ``capture_end`` raise (the capture was
invalidated), so the thread stays on the capture stream unless the caller restores its own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch

__all__ = ["FakeCuda", "counting", "install_fake_cuda"]


@dataclass
class FakeCuda:
    """What the fake saw, and what it answers: the log of calls, the L2 size, the clock readings."""

    l2_bytes: int = 60 * 2**20  # an H200's L2 (60 MiB)
    clocks: list[float] = field(default_factory=list)  # SM clock readings in MHz, consumed one per call
    clock_error: Exception | None = None  # what clock_rate raises (no pynvml: ModuleNotFoundError)
    # NVML's default applications clock (nvmlDeviceGetDefaultApplicationsClock, nvidia-ml-py 12/13; an H100 SXM
    # reports 1980 MHz); None: the query is not supported (NVMLError_NotSupported)
    default_clock: float | None = None
    capture_error: Exception | None = None  # what a capture raises (a workload that syncs)
    log: list[str] = field(default_factory=list)
    captured_calls: int = 0  # calls made inside the last capture
    replays: int = 0
    capturing: bool = False  # a capture is open
    current: str = "default"  # the thread's current stream: "default", "side" or "capture"

    def clock_rate(self, device: Any = None) -> int:
        """``torch.cuda.clock_rate``: NVML's SM clock; the last reading repeats once the list runs out."""
        if self.clock_error is not None:
            raise self.clock_error
        self.log.append("clock_rate")
        value = self.clocks.pop(0) if len(self.clocks) > 1 else self.clocks[0]
        return int(value)


class _FakeGraph:
    def __init__(self, cuda: FakeCuda) -> None:
        self._cuda = cuda

    def replay(self) -> None:
        self._cuda.replays += 1
        self._cuda.log.append("replay")


def install_fake_cuda(monkeypatch: pytest.MonkeyPatch, cuda: FakeCuda | None = None) -> FakeCuda:
    """Replace the ``torch.cuda`` calls the backend makes with ``cuda``'s (a fresh ``FakeCuda`` by default)."""
    cuda = cuda or FakeCuda()

    @contextmanager
    def stream(side: Any) -> Iterator[None]:
        cuda.log.append("side stream")
        before, cuda.current = cuda.current, side.name
        yield
        cuda.current = before

    class Graph:  # torch.cuda.graphs.graph, torch 2.13: capture_end before the stream context's exit
        def __init__(self, fake_graph: _FakeGraph) -> None:
            self._before = cuda.current

        def __enter__(self) -> None:
            cuda.current = "capture"
            cuda.log.append("capture begin")
            cuda.capturing = True

        def __exit__(self, *args: object) -> None:
            cuda.capturing = False
            cuda.log.append("capture end")
            if args[0] is not None:  # the body failed: the capture is invalidated, capture_end raises
                raise RuntimeError("CUDA error: operation failed due to a previous error during capture")
            cuda.current = self._before

    def body_check() -> None:  # a call the workload makes while capturing: a host sync is refused
        if cuda.capturing and cuda.capture_error is not None:
            raise cuda.capture_error

    def properties(index: int = 0) -> Any:
        return SimpleNamespace(L2_cache_size=cuda.l2_bytes, total_memory=141 * 2**30, major=9, minor=0)

    side_stream = SimpleNamespace(name="side", wait_stream=lambda other: None)

    def set_stream(chosen: Any) -> None:
        cuda.current = chosen.name

    for name, value in {
        "Stream": lambda index=None: side_stream,
        "current_stream": lambda index=None: SimpleNamespace(name=cuda.current, wait_stream=lambda other: None),
        "set_stream": set_stream,
        "stream": stream,
        "CUDAGraph": lambda: _FakeGraph(cuda),
        "graph": Graph,
        "synchronize": lambda index=None: cuda.log.append("synchronize"),
        "get_device_properties": properties,
        "clock_rate": cuda.clock_rate,
    }.items():
        monkeypatch.setattr(torch.cuda, name, value, raising=False)
    monkeypatch.setattr(torch.cuda, "_get_pynvml_handler", lambda device=None: ("nvml handle", device), raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(cuda))
    cuda.body_check = body_check  # type: ignore[attr-defined]
    return cuda


def _fake_pynvml(cuda: FakeCuda) -> ModuleType:
    """The nvidia-ml-py calls the backend makes beyond torch's: the default applications clock."""
    module = ModuleType("pynvml")
    module.NVML_CLOCK_SM = 1  # type: ignore[attr-defined]  # nvml.h: NVML_CLOCK_SM = 1

    def default_clock(handle: Any, clock_type: int) -> int:
        if cuda.default_clock is None:
            raise RuntimeError("NVMLError_NotSupported: Not Supported")
        return int(cuda.default_clock)

    module.nvmlDeviceGetDefaultApplicationsClock = default_clock  # type: ignore[attr-defined]
    return module


def counting(cuda: FakeCuda, fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn``, counting the calls made while a capture is open (what the graph would hold)."""

    def call() -> Any:
        if cuda.capturing:
            cuda.captured_calls += 1
            cuda.body_check()  # type: ignore[attr-defined]
        return fn()

    return call
