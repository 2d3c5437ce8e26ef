"""Attention shapes from the models the studies benchmarked, and every attention backend we measure.

All backends take and return ``[batch, heads, seq, head_dim]`` tensors (K and V may have fewer
heads: grouped-query attention), with ``is_causal`` aligned top-left as in PyTorch's SDPA.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, final

from workloads import installed

if TYPE_CHECKING:
    import torch

    from pytest_accel.engine.devices.base import Device

__all__ = [
    "BACKENDS",
    "SD3_TEXT_TOKENS",
    "AttentionShape",
    "Backend",
    "attention_bytes",
    "attention_flops",
    "reference_attention",
    "shapes",
]

# Text tokens in SD3's joint attention: 77 CLIP + 77 T5, as Stability's reference code and diffusers'
# own tests use (the diffusers pipeline default is 77 + 256 = 333).
SD3_TEXT_TOKENS = 154


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
class AttentionShape:
    """One attention problem: queries [batch, heads, q_len, head_dim] against kv_len keys."""

    name: str
    batch: int
    heads: int
    q_len: int
    kv_len: int
    head_dim: int
    kv_heads: int
    causal: bool = False
    training: bool = False  # measured forward + backward as well

    def flops(self, backward: bool = False) -> float:
        """Analytic FLOPs (see ``attention_flops``)."""
        return attention_flops(
            self.batch, self.heads, self.q_len, self.kv_len, self.head_dim, causal=self.causal, backward=backward
        )

    def bytes_moved(self, element_bytes: int) -> float:
        """Minimum bytes a fused kernel moves (Q, K, V in, O out)."""
        return attention_bytes(
            self.batch, self.heads, self.kv_heads, self.q_len, self.kv_len, self.head_dim, element_bytes
        )

    @property
    def memory_bound(self) -> bool:
        """Single-token decode: reading the KV cache dominates."""
        return self.q_len == 1


def _sd3(side: int, batch: int) -> AttentionShape:
    # MMDiT-ps2: a side x side image is a (side/8)^2 latent cut into 2x2 patches, plus the text tokens.
    tokens = (side // 8 // 2) ** 2 + SD3_TEXT_TOKENS
    return AttentionShape(f"sd3-{side}px-b{batch}", batch, 24, tokens, tokens, 64, 24, training=True)


def _llama(name: str, batch: int, q_len: int, kv_len: int, causal: bool, training: bool) -> AttentionShape:
    # Llama-2-70B attention: 64 query heads, 8 KV heads (GQA), head dim 128.
    return AttentionShape(name, batch, 64, q_len, kv_len, 128, 8, causal=causal, training=training)


def shapes(profile: str) -> list[AttentionShape]:
    """The named shapes of a profile: the studies' sizes in ``full``, sequence lengths cut in ``smoke``.

    Smoke keeps the real head counts and head dims (the kernels' inner loops) and shortens the
    sequences, so a CPU runs each case in seconds.
    """
    if profile == "full":
        return [
            _sd3(256, 16), _sd3(512, 16), _sd3(1024, 16), _sd3(1024, 32),
            _llama("llama70b-prefill-128", 2, 128, 128, causal=True, training=True),
            _llama("llama70b-prefill-4096", 2, 4096, 4096, causal=True, training=True),
            _llama("llama70b-decode-kv2176", 1, 1, 128 + 2048, causal=False, training=False),
        ]  # fmt: skip
    return [
        _sd3(128, 2), _sd3(256, 2),
        _llama("llama70b-prefill-128", 1, 128, 128, causal=True, training=True),
        _llama("llama70b-prefill-512", 1, 512, 512, causal=True, training=False),
        _llama("llama70b-decode-kv384", 1, 1, 128 + 256, causal=False, training=False),
    ]  # fmt: skip


def _repeat_kv(key: torch.Tensor, value: torch.Tensor, heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    groups = heads // key.shape[1]
    return key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)


def reference_attention(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, causal: bool, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(QK^T / sqrt(d) + mask) V, written out: the yardstick for speed and correctness."""
    import torch

    key, value = _repeat_kv(key, value, query.shape[1])
    scores = (query @ key.transpose(-2, -1)) * query.shape[-1] ** -0.5
    if causal:
        allowed = torch.ones(query.shape[-2], key.shape[-2], dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ value


@final
@dataclass(frozen=True)
class Backend:
    """One attention implementation: how to call it and why it might not be available."""

    name: str
    run: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool, torch.Tensor | None], torch.Tensor]
    unavailable: Callable[[Device], str | None]  # the skip reason on this device, None when it runs
    supports_mask: bool = True


def _sdpa(backend_name: str) -> Callable[..., torch.Tensor]:
    def run(
        query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, causal: bool, mask: torch.Tensor | None
    ) -> torch.Tensor:
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([getattr(SDPBackend, backend_name)]):
            gqa = key.shape[1] != query.shape[1]
            return F.scaled_dot_product_attention(
                query, key, value, attn_mask=mask, is_causal=causal and mask is None, enable_gqa=gqa
            )

    return run


# Which SDPA kernels each device kind has (PyTorch 2.x): the CPU implements math and flash only.
_SDPA_ON = {
    "MATH": ("cpu", "cuda", "hpu"),
    "FLASH_ATTENTION": ("cpu", "cuda"),
    "EFFICIENT_ATTENTION": ("cuda",),
    "CUDNN_ATTENTION": ("cuda",),
}


def _sdpa_unavailable(backend_name: str) -> Callable[[Device], str | None]:
    def reason(device: Device) -> str | None:
        kinds = _SDPA_ON[backend_name]
        if device.kind in kinds:
            return None
        return f"SDPA {backend_name.lower()} runs on {', '.join(kinds)}, not on {device.kind}"

    return reason


def _xformers(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, causal: bool, mask: torch.Tensor | None
) -> torch.Tensor:
    import xformers.ops as xops

    key, value = _repeat_kv(key, value, query.shape[1])
    bias = xops.LowerTriangularMask() if causal else None
    # xFormers' layout is [B, M, H, K]: sequence before heads.
    out = xops.memory_efficient_attention(
        query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2), attn_bias=bias
    )
    return out.transpose(1, 2)


def _xformers_unavailable(device: Device) -> str | None:
    if device.kind != "cuda":
        return f"xFormers memory_efficient_attention is CUDA-only (no CPU kernel since 0.0.22), not {device.kind}"
    if not installed("xformers"):
        return "xformers is not installed (pip install 'pytest-accel[cuda]')"
    return None


def _fused_sdpa(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, causal: bool, mask: torch.Tensor | None
) -> torch.Tensor:
    from habana_frameworks.torch.hpex.kernels import FusedSDPA

    key, value = _repeat_kv(key, value, query.shape[1])
    # FusedSDPA.apply(q, k, v, attn_mask, dropout_p, is_causal, scale, softmax_mode, ...):
    # "None" softmax is the exact one; optimum-habana's "fast" trades accuracy for speed.
    return FusedSDPA.apply(query, key, value, mask, 0.0, causal and mask is None, None, "None")


def _fused_sdpa_unavailable(device: Device) -> str | None:
    if device.kind != "hpu":
        return f"Habana FusedSDPA runs on Gaudi (hpu), not {device.kind}"
    if not installed("habana_frameworks"):
        return "habana_frameworks is not installed"
    return None


BACKENDS: dict[str, Backend] = {
    "reference": Backend("reference", reference_attention, lambda device: None),
    "sdpa-math": Backend("sdpa-math", _sdpa("MATH"), _sdpa_unavailable("MATH")),
    "sdpa-flash": Backend("sdpa-flash", _sdpa("FLASH_ATTENTION"), _sdpa_unavailable("FLASH_ATTENTION")),
    "sdpa-efficient": Backend("sdpa-efficient", _sdpa("EFFICIENT_ATTENTION"), _sdpa_unavailable("EFFICIENT_ATTENTION")),
    "sdpa-cudnn": Backend("sdpa-cudnn", _sdpa("CUDNN_ATTENTION"), _sdpa_unavailable("CUDNN_ATTENTION")),
    "xformers": Backend("xformers", _xformers, _xformers_unavailable, supports_mask=False),
    "fused-sdpa": Backend("fused-sdpa", _fused_sdpa, _fused_sdpa_unavailable),
}
