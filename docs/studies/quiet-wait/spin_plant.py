"""A pytest plugin that makes every SDPA call slower without changing what runs (``-p spin_plant``).

After each real call it spins on the host for ``ACCEL_SPIN`` (default 0.25) of that call's time, so
the operators and their counts stay the same and only time can see the slowdown. Used by
``quiet_wait.sh`` beside it, which puts this folder on PYTHONPATH to load it.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import torch.nn.functional as F

FRACTION = float(os.environ.get("ACCEL_SPIN", "0.25"))
_original = F.scaled_dot_product_attention


@functools.wraps(_original)
def _slower(*args: Any, **kwargs: Any) -> Any:
    began = time.perf_counter()
    result = _original(*args, **kwargs)
    until = time.perf_counter() + FRACTION * (time.perf_counter() - began)
    while time.perf_counter() < until:
        pass
    return result


F.scaled_dot_product_attention = _slower
