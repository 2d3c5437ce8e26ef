"""The reference kernel timed in alternation with every workload, to tell machine drift from change.

On a shared machine the raw time of a kernel drifts by tens of percent over minutes (clock, steal,
neighbours); the ratio of a workload's round to an adjacent round of a fixed matmul on the same
device and threads cancels most of that drift (docs/measurements.md has the figures).
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_accel.devices.base import Device

__all__ = ["reference_kernel"]

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
