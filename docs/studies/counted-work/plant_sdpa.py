"""A slowdown from the environment: a pytest plugin on ``PYTHONPATH`` (``-p plant_sdpa``) that makes every SDPA
call do more of the same work, as a slower kernel build would. Not a sleep: extra arithmetic.

``PLANT_SDPA_FRACTION=0.02``: each call also attends all its queries to the first 2% of its keys (rounded up),
a second SDPA call of that share of the work: a share of the keys, not of the queries, so a decode step (one
query) gets 2% more too. ``PLANT_SDPA_COPY=1``: each call's output is copied once more.
``PLANT_SDPA_COPY=inputs``: each call's keys and values are copied before it (what a ``.contiguous()`` after a
layout change does to a KV cache). Unset: nothing changes (the plugin still loads, so unchanged runs load it too).
"""

from __future__ import annotations

import math
import os

import torch
import torch.nn.functional as F

_ORIGINAL = F.scaled_dot_product_attention
_FRACTION = float(os.environ.get("PLANT_SDPA_FRACTION", "0") or 0)
_COPY = os.environ.get("PLANT_SDPA_COPY") == "1"
_COPY_INPUTS = os.environ.get("PLANT_SDPA_COPY") == "inputs"


def _planted(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *args: object, **kwargs: object
) -> torch.Tensor:
    if _COPY_INPUTS:
        key, value = key.clone(), value.clone()
    out = _ORIGINAL(query, key, value, *args, **kwargs)
    if _FRACTION > 0:
        keys = max(1, math.ceil(_FRACTION * key.shape[-2]))
        mask = kwargs.get("attn_mask")
        extra = dict(kwargs, attn_mask=mask[..., :keys]) if isinstance(mask, torch.Tensor) else kwargs
        _ORIGINAL(query, key[..., :keys, :], value[..., :keys, :], *args, **extra)
    if _COPY:
        out = out.clone()
    return out


F.scaled_dot_product_attention = _planted
