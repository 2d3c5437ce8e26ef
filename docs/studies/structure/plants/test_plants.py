"""Planted structural changes (docs/studies/structure/structure_study.py): one eager and one compiled workload.

``STRUCTURE_PLANT`` picks the change: ``math`` (the SDPA flash kernel falls back to math),
``contiguous`` (a copy added before attention), ``sync`` (a host sync in the loop: ``.item()``),
``break`` (a graph break in the compiled step: ``.item()`` inside it), ``recompile`` (the compiled
step sees a changing shape). Unset: the unchanged code the records were taken from.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

PLANT = os.environ.get("STRUCTURE_PLANT", "")
torch.manual_seed(0)
QUERY = torch.randn(2, 4, 256, 32)


def attention(q: torch.Tensor) -> torch.Tensor:
    if PLANT == "math":
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, q, q)
    if PLANT == "contiguous":
        q = q.transpose(1, 2).contiguous().transpose(1, 2)
    out = F.scaled_dot_product_attention(q, q, q)
    if PLANT == "sync":
        out.sum().item()
    return out


def test_eager_attention(throughput: Any) -> None:
    def step() -> torch.Tensor:
        with torch.no_grad():
            return attention(QUERY)

    throughput(step, items=2, unit="sequences")


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = torch.nn.Linear(32, 128), torch.nn.Linear(128, 32)

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        x = F.scaled_dot_product_attention(q, q, q)
        if PLANT == "break" and x.sum().item() > 0:
            x = x * 1.0
        return self.down(F.gelu(self.up(x))) + q


def test_compiled_step(throughput: Any) -> None:
    torch.manual_seed(0)
    block = torch.compile(Block().eval())
    lengths = itertools.cycle([256, 192, 128]) if PLANT == "recompile" else itertools.repeat(256)

    def step() -> torch.Tensor:
        with torch.no_grad():
            return block(QUERY[:, :, : next(lengths)])

    throughput(step, items=2, unit="sequences")
