"""A pytest plugin that makes every SDPA call run PyTorch's math kernel (``-p force_math_sdpa``).

The regression a kernel developer fears most: a change of shapes, dtypes or flags quietly makes
``scaled_dot_product_attention`` fall back from the flash kernel to math. Loading this plugin
plants exactly that in unchanged test code, for ``backend_switch.py`` (beside it in
docs/studies/backend-switch/): the wrapper's ``sdpa_kernel([MATH])`` is the innermost context, so it
wins over a test's own backend choice.
"""

from __future__ import annotations

import functools
from typing import Any

import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

_original = F.scaled_dot_product_attention


@functools.wraps(_original)
def _math_only(*args: Any, **kwargs: Any) -> Any:
    with sdpa_kernel([SDPBackend.MATH]):
        return _original(*args, **kwargs)


F.scaled_dot_product_attention = _math_only
