"""Does page-fault cost explain the math SDPA's process-to-process swings? (the "fresh" state probe)

    for i in 1 2 3 4 5 6; do python docs/studies/false-alarms/page_faults.py; done

In a fresh process: torch's math SDPA at the suite's SD3 256 px smoke shape (2 x 24 x 410 x 64,
one thread), a 256^2 fp32 matmul, and mapping + touching 16 MiB of fresh memory;
the medians of 10 rounds each, their ratios, and the minor page faults one SDPA call takes. If the
SDPA's time over the fresh-memory time is steadier across processes than its time over the
matmul's, page faults are what moves it.
"""

from __future__ import annotations

import mmap
import resource
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

torch.set_num_threads(1)
query = torch.randn(2, 24, 410, 64)
matrix = torch.randn(256, 256)


def attention() -> object:
    with sdpa_kernel([SDPBackend.MATH]):
        return F.scaled_dot_product_attention(query, query, query)


def fresh() -> None:
    mapping = mmap.mmap(-1, 16 * 2**20)
    view = torch.frombuffer(mapping, dtype=torch.uint8)
    view.fill_(1)
    del view
    mapping.close()


def per_call(fn: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls


def main() -> None:
    for _ in range(3):
        attention()
        fresh()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    attention()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    rounds: dict[str, list[float]] = {"sdpa": [], "fresh": [], "matmul": []}
    for _ in range(10):
        rounds["sdpa"].append(per_call(attention, 1))
        rounds["fresh"].append(per_call(fresh, 3))
        rounds["matmul"].append(per_call(lambda: matrix @ matrix, 20))
    sdpa, memory, compute = (statistics.median(rounds[name]) for name in ("sdpa", "fresh", "matmul"))
    print(
        f"sdpa {sdpa * 1e3:.1f} ms ({faults} minor faults per call)  fresh 16 MiB {memory * 1e3:.2f} ms  "
        f"matmul {compute * 1e3:.3f} ms  sdpa/matmul {sdpa / compute:.0f}  fresh/matmul {memory / compute:.1f}  "
        f"sdpa/fresh {sdpa / memory:.1f}"
    )


if __name__ == "__main__":
    main()
