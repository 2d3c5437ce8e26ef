"""Which reference kernel tracks a workload's drift? One process's worth of alternating rounds.

    for i in $(seq 10); do NT=1 python docs/studies/cpu-threads/probe_study.py >> runs.jsonl; sleep 3; done
    python docs/studies/cpu-threads/probe_study.py --summarize runs.jsonl

Each run times 25 alternating rounds (~10 ms each) of SDPA at the SD3 smoke shape and of three
candidate reference kernels (a 384x384 matmul, a 16 MiB copy, a SHA-256 of 1 MiB), and prints the
medians and the median per-round ratios as one JSON line. NT sets torch's thread count.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

ROUNDS = 25
ROUND_SECONDS = 0.01


def _per_call(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def run() -> dict[str, float]:
    """One process: calibrated alternating rounds of the workload and each candidate."""
    torch.set_num_threads(int(os.environ.get("NT", "2")))
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 24, 410, 64) for _ in range(3))
    a, big, buffer = torch.randn(384, 384), torch.randn(4 * 2**20), bytes(range(256)) * 4096
    kernels: dict[str, Callable[[], object]] = {
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v),
        "mm": lambda: a @ a,
        "copy": big.clone,
        "sha": lambda: hashlib.sha256(buffer).digest(),
    }
    calls = {}
    for name, fn in kernels.items():
        for _ in range(3):
            fn()
        calls[name] = max(1, int(ROUND_SECONDS / _per_call(fn, 3)))
    times: dict[str, list[float]] = {name: [] for name in kernels}
    for _ in range(ROUNDS):
        for name, fn in kernels.items():
            times[name].append(_per_call(fn, calls[name]))
    result = {name: statistics.median(values) for name, values in times.items()}
    for probe in ("mm", "copy", "sha"):
        result[f"ratio_{probe}"] = statistics.median(w / p for w, p in zip(times["sdpa"], times[probe], strict=True))
    return result


def summarize(path: str) -> None:
    """CV and range (over the median) of each figure across the runs in a JSON-lines file."""
    with open(path) as lines:
        rows = [json.loads(line) for line in lines]
    for key in rows[0]:
        values = [row[key] for row in rows]
        centre = statistics.median(values)
        cv = statistics.stdev(values) / statistics.mean(values)
        print(f"{key:11s} CV {cv:6.1%}  range {min(values) / centre:.2f} .. {max(values) / centre:.2f}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--summarize":
        summarize(sys.argv[2])
    else:
        print(json.dumps(run()))
