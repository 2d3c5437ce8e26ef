"""How much does pytest-accel's measurement loop add per call? Compared with a bare timed loop.

    python docs/studies/overhead/overhead.py

Times the same callables (a no-op, a 64x64 matmul) with ``measure`` on the CPU device and with a
bare ``perf_counter`` loop, alternating 7 times, and prints the medians and their difference.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

from pytest_accel.engine.devices.cpu import CpuDevice
from pytest_accel.engine.sampling import MeasureConfig, measure

CALLS = 20_000
REPEATS = 7


def bare_loop(fn: Callable[[], object]) -> float:
    """Seconds per call of a plain ``for`` loop around ``fn``."""
    for _ in range(1000):
        fn()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    return (time.perf_counter() - start) / CALLS


def accel(fn: Callable[[], object]) -> float:
    """Median seconds per call as the throughput fixture measures it on the CPU."""
    device = CpuDevice()
    config = MeasureConfig(measure_seconds=0.5)
    result = measure(
        fn,
        timer=device.timer(),
        items_per_call=1,
        unit="calls",
        mark_step=device.mark_step,
        reset_peak_memory=device.reset_peak_memory,
        peak_memory_bytes=device.peak_memory_bytes,
        config=config,
    )
    return result.seconds_per_call


def main() -> None:
    a = torch.randn(64, 64)
    cases: dict[str, Callable[[], object]] = {"no-op": lambda: None, "matmul 64x64": lambda: a @ a}
    print(f"{'workload':<14} {'bare loop':>12} {'measure()':>12} {'overhead/call':>14}")
    for name, fn in cases.items():
        bare = statistics.median(bare_loop(fn) for _ in range(REPEATS))
        ours = statistics.median(accel(fn) for _ in range(REPEATS))
        print(f"{name:<14} {bare * 1e9:>10.0f}ns {ours * 1e9:>10.0f}ns {(ours - bare) * 1e9:>12.0f}ns")


if __name__ == "__main__":
    main()
