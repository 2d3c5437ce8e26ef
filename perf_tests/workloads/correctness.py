"""The correctness guard: a backend's output against a float64 reference, with a dtype-derived tolerance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workloads.attention import Backend, reference_attention

if TYPE_CHECKING:
    import torch

__all__ = ["check_backend", "tolerance"]


def tolerance(dtype: torch.dtype) -> float:
    """Absolute and relative tolerance for attention outputs in ``dtype``.

    Outputs are convex combinations of V (|V| ~ 1), so errors are set by the dtype's epsilon times
    the few roundings in a fused kernel (scores, exp, normalisation, the PV matmul): 64 eps covers
    fp32's online-softmax rescaling and bf16's 8-bit mantissa (eps 2^-7 -> 0.5 would be too
    loose, so bf16 gets 4 eps = 0.03, its observed error being ~1 ulp per rounding).
    """
    import torch

    eps = torch.finfo(dtype).eps
    return 64 * eps if dtype == torch.float32 else 4 * eps if dtype == torch.bfloat16 else 8 * eps


def check_backend(
    backend: Backend,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    causal: bool,
    mask: torch.Tensor | None,
) -> None:
    """Raise AssertionError (naming the backend, worst error and where) unless ``backend`` is right."""
    import torch

    output = backend.run(query, key, value, causal, mask)
    assert output.shape == query.shape, f"{backend.name}: output shape {tuple(output.shape)} != {tuple(query.shape)}"
    assert bool(torch.isfinite(output).all()), f"{backend.name}: output has NaN or Inf"
    expected = reference_attention(query.double(), key.double(), value.double(), causal, mask)
    error = (output.double() - expected).abs()
    allowed = tolerance(query.dtype) * (1 + expected.abs())
    worst = int(torch.argmax(error - allowed))
    assert bool((error <= allowed).all()), (
        f"{backend.name}: max error {float(error.max()):.3g} exceeds {tolerance(query.dtype):.3g} (1 + |ref|) "
        f"at flat index {worst} ({query.dtype}, causal={causal}, mask={'yes' if mask is not None else 'no'})"
    )
