import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# A kernel developer's change under test: ATTENTION_BACKEND picks the SDPA kernel the block uses.
BACKEND = getattr(SDPBackend, os.environ.get("ATTENTION_BACKEND", "FLASH_ATTENTION"))
q, k, v = (torch.randn(2, 8, 256, 64) for _ in range(3))


def test_attention_block(throughput):
    def attend():
        with sdpa_kernel(BACKEND):
            return F.scaled_dot_product_attention(q, k, v)

    throughput(attend, items=2, unit="sequences", flops=4 * 2 * 8 * 256 * 256 * 64)
