"""A pytest plugin that makes every SDPA call slower without changing what runs (``-p spin_plant``).

After each real call it spins on the host for ``ACCEL_SPIN`` (default 0.25) of a time, so the
operators and their counts stay the same and only time can see the slowdown. ``ACCEL_SPIN_OF``
says of which time:

- ``sdpa`` (default): the SDPA call's own. A test whose timed call does more than SDPA moves by
  less: the llama prefill tests by about half.
- ``call``: the SDPA call's and the work since the previous call's spin ended, i.e. the whole timed
  call when calls run back to back, so each test's figure moves by ``ACCEL_SPIN``. A gap longer than
  4 times the SDPA call (between rounds, a probe) counts as the SDPA call alone.

Used by ``quiet_wait.sh`` and ``hours_later.sh``, which put this folder on PYTHONPATH to load it.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import torch.nn.functional as F

FRACTION = float(os.environ.get("ACCEL_SPIN", "0.25"))
OF_CALL = os.environ.get("ACCEL_SPIN_OF", "sdpa") == "call"
GAP_LIMIT = 4.0
_original = F.scaled_dot_product_attention
_last_end = [0.0]


@functools.wraps(_original)
def _slower(*args: Any, **kwargs: Any) -> Any:
    began = time.perf_counter()
    result = _original(*args, **kwargs)
    ended = time.perf_counter()
    own = ended - began
    gap = began - _last_end[0]
    spent = own + gap if OF_CALL and 0 <= gap <= GAP_LIMIT * own else own
    until = ended + FRACTION * spent
    while time.perf_counter() < until:
        pass
    _last_end[0] = time.perf_counter()
    return result


F.scaled_dot_product_attention = _slower
