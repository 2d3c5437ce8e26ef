"""Attention kernels: PyTorch SDPA at the SD3 MMDiT joint-attention shape."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from workloads.attention import sd3_joint_attention

from pytest_accel.devices.base import Device


def _dtype(device: Device) -> torch.dtype:
    # bf16 on accelerators (as the studies ran); the CPU measures what is fast there.
    return device.autocast_dtype()


@pytest.mark.perf
def test_sdpa_forward_sd3(throughput, accel_device: Device, smoke: bool) -> None:
    """SDPA forward at SD3 joint attention: 256² in smoke (batch 2), 1024² at batch 16 in full."""
    shape = sd3_joint_attention(256, batch=2) if smoke else sd3_joint_attention(1024, batch=16)
    generator = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(shape.batch, shape.heads, shape.q_len, shape.head_dim, generator=generator).to(
            accel_device.torch_device(), _dtype(accel_device)
        )
        for _ in range(3)
    )
    with torch.no_grad():
        result = throughput(
            lambda: F.scaled_dot_product_attention(q, k, v),
            items=shape.batch,
            unit="samples",
            flops=shape.forward_flops(),
            shape=shape.name,
        )
    assert result.disabled or result.items_per_second > 0
