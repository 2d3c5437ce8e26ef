"""The correctness guard: every available attention backend matches a float64 reference.

Property tests over random shapes, GQA ratios, dtypes, masks and causal flags; they run in CI on
the CPU and on whatever device is present. A fast wrong answer must fail, and NaN never passes.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workloads.attention import BACKENDS, Backend, reference_attention
from workloads.correctness import check_backend

from pytest_accel.engine.devices.base import Device

_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def problems(draw: st.DrawFn) -> dict[str, object]:
    """A random valid attention problem (never zeros: random normal inputs)."""
    kv_heads = draw(st.sampled_from([1, 2, 4]))
    return {
        "batch": draw(st.integers(1, 3)),
        "kv_heads": kv_heads,
        "heads": kv_heads * draw(st.sampled_from([1, 2])),
        "q_len": draw(st.integers(1, 40)),
        "kv_len": draw(st.integers(1, 40)),
        "head_dim": draw(st.sampled_from([8, 16, 64])),
        "causal": draw(st.booleans()),
        "masked": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**16)),
    }


def _tensors(problem: dict[str, object], device: Device, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(int(problem["seed"]))  # type: ignore[call-overload]
    b, h, kh = problem["batch"], problem["heads"], problem["kv_heads"]
    sq, sk, d = problem["q_len"], problem["kv_len"], problem["head_dim"]
    query = torch.randn(b, h, sq, d, generator=g)  # type: ignore[call-overload]
    key, value = (torch.randn(b, kh, sk, d, generator=g) for _ in range(2))  # type: ignore[call-overload]
    return tuple(t.to(device.torch_device(), dtype) for t in (query, key, value))


def _mask(problem: dict[str, object], device: Device) -> torch.Tensor | None:
    if not problem["masked"]:
        return None
    g = torch.Generator().manual_seed(int(problem["seed"]) + 1)  # type: ignore[call-overload]
    mask = torch.rand(problem["batch"], 1, problem["q_len"], problem["kv_len"], generator=g) > 0.3  # type: ignore[call-overload]
    mask[..., 0] = True  # every query sees at least one key: a fully masked row has no defined answer
    return mask.to(device.torch_device())


def _dtypes(device: Device) -> list[torch.dtype]:
    return [torch.float32] if device.kind == "cpu" else [torch.float32, torch.bfloat16]


def _available(name: str, device: Device) -> Backend:
    backend = BACKENDS[name]
    reason = backend.unavailable(device)
    if reason is not None:
        pytest.skip(reason)
    return backend


@pytest.mark.parametrize("name", [name for name in BACKENDS if name != "reference"])
@_SETTINGS
@given(problem=problems())
def test_backend_matches_float64_reference(accel_device: Device, name: str, problem: dict[str, object]) -> None:
    backend = _available(name, accel_device)
    causal = bool(problem["causal"])
    # SDPA takes a mask or is_causal, not both: causal problems go unmasked.
    mask = _mask(problem, accel_device) if backend.supports_mask and not causal else None
    for dtype in _dtypes(accel_device):
        query, key, value = _tensors(problem, accel_device, dtype)
        check_backend(backend, query, key, value, causal, mask)


def _wrong_scale(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, causal: bool, mask: object
) -> torch.Tensor:
    # A plausible bug: the 1/sqrt(d) scale forgotten. Fast, finite, and wrong.
    return reference_attention(query * query.shape[-1] ** 0.5, key, value, causal, None)


def _nan_output(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, causal: bool, mask: object
) -> torch.Tensor:
    out = reference_attention(query, key, value, causal, None)
    out[..., 0, 0] = float("nan")
    return out


@pytest.mark.parametrize("broken, message", [(_wrong_scale, "max error"), (_nan_output, "NaN or Inf")])
def test_the_guard_catches_a_wrong_or_nan_backend(accel_device: Device, broken: object, message: str) -> None:
    backend = Backend("broken", broken, lambda device: None)  # type: ignore[arg-type]
    query, key, value = _tensors(
        {"batch": 2, "heads": 4, "kv_heads": 2, "q_len": 16, "kv_len": 16, "head_dim": 64, "seed": 3},
        accel_device,
        torch.float32,
    )
    with pytest.raises(AssertionError, match=message):
        check_backend(backend, query, key, value, False, None)
