"""Attention shapes from the models the studies benchmarked, and their analytic FLOP counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

__all__ = ["SD3_TEXT_TOKENS", "AttentionShape", "sd3_joint_attention"]

# Text tokens in SD3's joint attention: 77 CLIP + 77 T5, as Stability's reference code and diffusers'
# own tests use (the diffusers pipeline default is 77 + 256 = 333).
SD3_TEXT_TOKENS = 154


@final
@dataclass(frozen=True)
class AttentionShape:
    """One attention problem: [batch, heads, q_len, head_dim] queries against kv_len keys."""

    name: str
    batch: int
    heads: int
    q_len: int
    kv_len: int
    head_dim: int
    kv_heads: int | None = None  # grouped-query attention when fewer than heads
    causal: bool = False

    def forward_flops(self) -> float:
        """4·B·H·Sq·Sk·D (two matmuls, 2 FLOPs per multiply-add); causal masks away about half."""
        flops = 4.0 * self.batch * self.heads * self.q_len * self.kv_len * self.head_dim
        return flops / 2 if self.causal else flops


def sd3_joint_attention(image_side: int, batch: int, heads: int = 24, head_dim: int = 64) -> AttentionShape:
    """MMDiT-ps2 joint attention at an image side in pixels: (side/8/2)² patches plus the text tokens."""
    patches = (image_side // 8 // 2) ** 2
    tokens = patches + SD3_TEXT_TOKENS
    return AttentionShape(f"sd3-{image_side}px-b{batch}", batch, heads, tokens, tokens, head_dim)
