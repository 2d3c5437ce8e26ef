"""Attention kernels: every backend at the shapes of SD3's MMDiT and Llama-2-70B, forward and backward."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from workloads.attention import BACKENDS, AttentionShape, shapes
from workloads.checks import check_measurement

from pytest_accel.engine.devices.base import Device

# Parametrize over the shapes of both profiles by name; a test skips the ones outside its profile.
_ALL_SHAPES = {shape.name: shape for profile in ("smoke", "full") for shape in shapes(profile)}


def _inputs(shape: AttentionShape, device: Device, grad: bool) -> tuple[torch.Tensor, ...]:
    # bf16 on accelerators, as the studies ran; fp32 on the CPU, where bf16 is emulated and slow.
    dtype = device.autocast_dtype()
    generator = torch.Generator().manual_seed(0)
    dims = ((shape.heads, shape.q_len), (shape.kv_heads, shape.kv_len), (shape.kv_heads, shape.kv_len))
    return tuple(
        torch.randn(shape.batch, heads, length, shape.head_dim, generator=generator)
        .to(device.torch_device(), dtype)
        .requires_grad_(grad)
        for heads, length in dims
    )


def _case(backend_name: str, shape_name: str, device: Device, profile: str) -> tuple[AttentionShape, Callable]:
    shape = _ALL_SHAPES[shape_name]
    if shape not in shapes(profile):
        pytest.skip(f"{shape_name} is not in the {profile} profile")
    backend = BACKENDS[backend_name]
    reason = backend.unavailable(device)
    if reason is not None:
        pytest.skip(reason)
    return shape, backend.run


@pytest.mark.parametrize("shape_name", list(_ALL_SHAPES))
@pytest.mark.parametrize("backend_name", list(BACKENDS))
def test_attention_forward(
    throughput, accel_device: Device, accel_profile: str, backend_name: str, shape_name: str
) -> None:
    """Forward latency, TFLOP/s and (decode) bytes/s of one backend at one named shape."""
    shape, run = _case(backend_name, shape_name, accel_device, accel_profile)
    query, key, value = _inputs(shape, accel_device, grad=False)
    element_bytes = query.element_size()
    with torch.no_grad():
        result = throughput(
            lambda: run(query, key, value, shape.causal, None),
            items=shape.batch,
            unit="sequences",
            flops=shape.flops(),
            bytes_moved=shape.bytes_moved(element_bytes) if shape.memory_bound else None,
            shape=shape.name,
        )
    check_measurement(result, unit="sequences", items=shape.batch, flops=shape.flops())


@pytest.mark.parametrize("shape_name", [name for name, shape in _ALL_SHAPES.items() if shape.training])
@pytest.mark.parametrize("backend_name", list(BACKENDS))
def test_attention_forward_backward(
    throughput, accel_device: Device, accel_profile: str, backend_name: str, shape_name: str
) -> None:
    """Forward + backward (the training step's attention) of one backend at one named training shape."""
    shape, run = _case(backend_name, shape_name, accel_device, accel_profile)
    query, key, value = _inputs(shape, accel_device, grad=True)
    grad_out = torch.randn_like(query)

    def step() -> torch.Tensor:
        for tensor in (query, key, value):
            tensor.grad = None  # as do_bench does: no gradient accumulation across calls
        run(query, key, value, shape.causal, None).backward(grad_out)
        assert query.grad is not None
        return query.grad

    flops = shape.flops() + shape.flops(backward=True)
    result = throughput(step, items=shape.batch, unit="sequences", flops=flops)
    check_measurement(result, unit="sequences", items=shape.batch, flops=flops)
