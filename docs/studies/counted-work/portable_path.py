"""One math SDPA call at (2, 8, 256, 64) counted under callgrind: how long the counted call takes, on the path torch
dispatches to (AVX2 here) or on the portable one (portable_path.sh sets it). Run under valgrind (README.md)."""

from __future__ import annotations

import os
import subprocess
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

torch.set_num_threads(1)
q = torch.randn(2, 8, 256, 64, generator=torch.Generator().manual_seed(0))


def call() -> torch.Tensor:
    with sdpa_kernel([SDPBackend.MATH]):
        return torch.nn.functional.scaled_dot_product_attention(q, q, q)


call()
call()
subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], capture_output=True, check=True)
started = time.monotonic()
torch._C._valgrind_toggle()
call()
torch._C._valgrind_toggle_and_dump_stats()
took = time.monotonic() - started
print(f"isa {torch.backends.cpu.get_cpu_capability()} counted call {took:.1f} s", flush=True)
