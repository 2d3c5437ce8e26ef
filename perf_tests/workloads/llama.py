"""A Llama-2-70B-shaped LLM from transformers' ``LlamaForCausalLM``, random weights, no download.

80 layers (138 GB in bf16) fit no single device, so the ``full`` profile keeps the real layer shape
(hidden 8192, 64 heads, 8 KV heads, MLP 28672, vocab 32000) with ``FULL_LAYERS`` layers. A
whole-model figure is extrapolated, not measured: time(80) = time(L) + (80 - L) x per-layer time,
where the per-layer time is (time(L2) - time(L1)) / (L2 - L1) from two runs with different
``ACCEL_LLAMA_LAYERS``; the embedding and the LM head are counted once in time(L).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, final

from workloads.training import finish_step

if TYPE_CHECKING:
    import torch

    from pytest_accel.engine.devices.base import Device

__all__ = ["LLAMA2_70B_PARAMETERS", "LlamaShape", "build", "config", "generate", "shape", "train_step"]

LLAMA2_70B_PARAMETERS = 68_976_648_192  # all 80 layers, counted on the meta device (REFERENCE.md)
FULL_LAYERS = int(os.environ.get("ACCEL_LLAMA_LAYERS", "2"))  # layers kept in the full profile


@final
@dataclass(frozen=True)
class LlamaShape:
    """The model size and the workload sizes of one profile."""

    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    layers: int
    vocab: int
    train_batch: int  # micro batch 2, as Stable Beluga 2.5 70B was trained
    train_tokens: int
    prompt_tokens: int  # 128 in / 2048 out, as the inference comparison
    new_tokens: int


def shape(profile: str) -> LlamaShape:
    """Llama-2-70B's layer shape in ``full``; a tiny model and short sequences in ``smoke``."""
    if profile == "full":
        return LlamaShape(8192, 28672, 64, 8, FULL_LAYERS, 32000, 2, 4096, 128, 2048)
    return LlamaShape(256, 688, 8, 2, 2, 1024, 2, 128, 128, 64)


def config(size: LlamaShape, layers: int | None = None) -> Any:
    """The ``LlamaConfig``: RMSNorm eps 1e-5, rope theta 1e4, 4096 positions, as Llama-2-70B."""
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=size.hidden,
        intermediate_size=size.intermediate,
        num_attention_heads=size.heads,
        num_key_value_heads=size.kv_heads,
        num_hidden_layers=layers if layers is not None else size.layers,
        vocab_size=size.vocab,
        max_position_embeddings=4096,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=False,
    )


def build(size: LlamaShape, device: Device | None, dtype: torch.dtype | None = None, layers: int | None = None) -> Any:
    """``LlamaForCausalLM`` with random weights (on the meta device when ``device`` is None)."""
    import torch
    from transformers import LlamaForCausalLM

    if device is None:
        with torch.device("meta"):
            return LlamaForCausalLM(config(size, layers))
    torch.manual_seed(0)
    model = LlamaForCausalLM(config(size, layers))
    return model.to(device.torch_device(), dtype or torch.float32)


def tokens(size: LlamaShape, batch: int, length: int, device: Device, seed: int = 0) -> torch.Tensor:
    """Random token ids (a fixed batch: the same every call)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, size.vocab, (batch, length), generator=g).to(device.torch_device())


def train_step(model: Any, input_ids: torch.Tensor, device: Device) -> Any:
    """Forward with labels (next-token loss), backward, AdamW: returns a callable giving the loss."""
    import contextlib

    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dtype = device.autocast_dtype()
    precision = (
        contextlib.nullcontext() if dtype == torch.float32 else torch.autocast(device_type=device.kind, dtype=dtype)
    )

    def step() -> torch.Tensor:
        with precision:
            loss = model(input_ids=input_ids, labels=input_ids).loss
        return finish_step(loss, optimizer, device)

    return step


def generate(model: Any, prompt: torch.Tensor, new_tokens: int) -> Any:
    """Greedy generation of exactly ``new_tokens`` (min = max: transformers has no ignore_eos)."""
    import torch

    @torch.no_grad()
    def run() -> torch.Tensor:
        out = model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=0,
        )
        if out.shape[1] != prompt.shape[1] + new_tokens:
            raise AssertionError(f"generated {out.shape[1] - prompt.shape[1]} tokens, wanted {new_tokens}")
        return out

    return run
