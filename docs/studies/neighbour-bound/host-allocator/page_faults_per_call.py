"""Seconds and minor page faults per call of math SDPA at SD3's 256 px smoke shape, per host allocator mode.

    python docs/studies/neighbour-bound/host-allocator/page_faults_per_call.py steady
    python docs/studies/neighbour-bound/host-allocator/page_faults_per_call.py system

One thread, 30 calls after 3 warm-up calls; prints the median, min and max seconds per call and the
median faults per call (run from the repository root).
"""

from __future__ import annotations

import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, "perf_tests")
from workloads.attention import BACKENDS, shapes

from pytest_accel.engine.devices.hostalloc import configure_host_allocator

mode = sys.argv[1]
print("host allocator:", configure_host_allocator(mode))
torch.set_num_threads(1)
shape = next(s for s in shapes("smoke") if s.name == "sd3-256px-b2")
generator = torch.Generator().manual_seed(0)
q = torch.randn(shape.batch, shape.heads, shape.q_len, shape.head_dim, generator=generator)
k = torch.randn(shape.batch, shape.kv_heads, shape.kv_len, shape.head_dim, generator=generator)
v = k.clone()
run = BACKENDS["sdpa-math"].run
seconds, faults = [], []
with torch.no_grad():
    for call in range(33):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        started = time.perf_counter()
        run(q, k, v, shape.causal, None)
        elapsed = time.perf_counter() - started
        if call >= 3:
            seconds.append(elapsed)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(
    f"{mode}: median {statistics.median(seconds) * 1e3:.1f} ms (min {min(seconds) * 1e3:.1f}, "
    f"max {max(seconds) * 1e3:.1f}), faults per call median {statistics.median(faults):.0f} "
    f"(min {min(faults)}, max {max(faults)})"
)
