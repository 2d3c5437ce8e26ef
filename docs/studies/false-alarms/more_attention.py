"""A pytest plugin that adds attention work to every SDPA call (``-p more_attention``).

A kernel that got slower by doing more of the same work: after each real call it runs the same
kernel again on the first ``ACCEL_EXTRA_ATTENTION`` share of the queries (default 0.25), with the
same keys, values, flags and backend. Attention's cost grows with the query count, so the call
costs that share more, and the extra work is real kernel work: it meets a neighbour's contention
(threads, caches, memory bandwidth) exactly as the call itself does. A same-thread spin would not:
it is single-threaded where the kernel is parallel, so a neighbour stretches it differently.
Used by ``false_alarms.py --planted`` (beside it in docs/studies/false-alarms/), which puts this folder
on PYTHONPATH to load it.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import torch
import torch.nn.functional as F

EXTRA = float(os.environ.get("ACCEL_EXTRA_ATTENTION", "0.25"))
_original = F.scaled_dot_product_attention


@functools.wraps(_original)
def _with_more_work(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    result = _original(query, key, value, *args, **kwargs)
    rows = max(1, round(query.shape[-2] * EXTRA))
    mask = kwargs.get("attn_mask")
    if mask is not None and mask.dim() >= 2 and mask.shape[-2] == query.shape[-2]:
        kwargs = {**kwargs, "attn_mask": mask[..., :rows, :]}
    extra = _original(query[..., :rows, :], key, value, *args, **kwargs)
    if not extra.requires_grad:
        return result
    return result + extra.sum() * 0  # keeps the extra work in the autograd graph: a backward pays for it too


F.scaled_dot_product_attention = _with_more_work
