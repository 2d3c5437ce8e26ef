"""Two tiny calls, whose counts show how far the allocator's and the interpreter's paths move a count between
processes (the count floor's figure): a 64x64 matmul and an add of 1,000 floats."""

from __future__ import annotations

from typing import Any

import torch


def test_matmul(throughput: Any) -> None:
    x = torch.randn(64, 64)
    throughput(lambda: x @ x, items=1, unit="matmuls")


def test_add(throughput: Any) -> None:
    x = torch.randn(1000)
    throughput(lambda: x + x, items=1, unit="adds")
