"""The CPU state probe's random gather alone, in a fresh process: ``python gather_series.py N`` prints N medians (ms).

Each: a fresh 64 MiB table, 128 Ki random indices, the median of 30 gathers, one thread (what
engine/machine.py's "latency" probe does). The series file was taken with a loop of 30 processes
10 s apart (``for i in $(seq 30); do echo "$(date +%T) $(python gather_series.py 3)"; sleep 8; done``).
"""

import statistics
import sys
import time

import torch

torch.set_num_threads(1)


def probe():
    buf = torch.rand(16 * 1024 * 1024)  # 64 MiB, fresh
    idx = torch.randint(0, buf.numel(), (128 * 1024,))
    ts = []
    for _ in range(30):
        t = time.perf_counter()
        buf[idx].sum()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


print(" ".join(f"{probe():.2f}" for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5)), flush=True)
