"""FLOP and byte accounting, and the peak rates a figure is judged against. Pure: no torch."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import final

__all__ = ["DatasheetPeak", "attention_bytes", "attention_flops", "datasheet_peak"]


def attention_flops(
    batch: int, heads: int, q_len: int, kv_len: int, head_dim: int, *, causal: bool = False, backward: bool = False
) -> float:
    """FLOPs of softmax(QK^T)V counted analytically: 4*B*H*Sq*Sk*D forward (two matmuls, 2 FLOPs per
    multiply-add), halved when causal (about half the score matrix is masked), 2.5x that for the
    backward pass (five matmuls instead of two), as FlashAttention's papers count it.

    Analytic on purpose: torch's FlopCounterMode counts zero for the CPU flash kernel.
    """
    forward = 4.0 * batch * heads * q_len * kv_len * head_dim
    if causal:
        forward /= 2
    return forward * 2.5 if backward else forward


def attention_bytes(
    batch: int, heads: int, kv_heads: int, q_len: int, kv_len: int, head_dim: int, element_bytes: int
) -> float:
    """Bytes a fused attention must move at least: read Q, K, V once, write O once.

    For single-token decode this is dominated by the KV cache, which makes decode memory-bound.
    """
    q_and_o = 2 * batch * heads * q_len * head_dim
    k_and_v = 2 * batch * kv_heads * kv_len * head_dim
    return float((q_and_o + k_and_v) * element_bytes)


@final
@dataclass(frozen=True)
class DatasheetPeak:
    """A vendor's published peak for one device class (dense, no sparsity)."""

    tflops_bf16: float  # matrix-engine peak at bf16
    memory_gbps: float  # HBM bandwidth, GB/s (10^9 bytes)
    source: str


# Device-key pattern -> published figures. Dense bf16 (NVIDIA's datasheets list 2x with sparsity).
_DATASHEET: tuple[tuple[str, DatasheetPeak], ...] = (
    (r"^cuda-nvidia-a100.*40gb", DatasheetPeak(312.0, 1555.0, "NVIDIA A100 datasheet (SXM 40GB)")),
    (r"^cuda-nvidia-a100", DatasheetPeak(312.0, 2039.0, "NVIDIA A100 datasheet (SXM 80GB)")),
    (r"^cuda-nvidia-h100.*pcie", DatasheetPeak(756.0, 2000.0, "NVIDIA H100 datasheet (PCIe)")),
    (r"^cuda-nvidia-h100", DatasheetPeak(989.0, 3350.0, "NVIDIA H100 datasheet (SXM)")),
    (r"^cuda-nvidia-h200", DatasheetPeak(989.0, 4800.0, "NVIDIA H200 datasheet (SXM)")),
    (r"^hpu-gaudi2$", DatasheetPeak(432.0, 2460.0, "Intel Gaudi 2 white paper (MME bf16, 96 GB HBM2E)")),
    (r"^hpu-gaudi3$", DatasheetPeak(1835.0, 3700.0, "Intel Gaudi 3 white paper (MME bf16, 128 GB HBM2E)")),
)


def datasheet_peak(device_key: str) -> DatasheetPeak | None:
    """The published peak for a device key, or None (CPUs, unknown accelerators)."""
    for pattern, peak in _DATASHEET:
        if re.search(pattern, device_key):
            return peak
    return None
