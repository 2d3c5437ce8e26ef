"""One memory-bound kernel's level in forked runs, with torch's large blocks on 4 KiB or on huge pages.

A parent process set up as the plugin's CPU device sets up its own (``CpuDevice.activate``: one
torch thread on a 2-core host, the steady host allocator) forks RUNS children, as ``pytest-accel ab``
forks its runs from a worker; each child first runs the suite's other forward SDPA kernels (30 calls
each: the heap a perf run's later test finds) unless ``alone``, then times 300 calls of math SDPA at
the smoke decode shape, and prints one JSON line: its median, its 10th and 90th percentiles, the
medians of its three thirds, and its minor page faults per call. Each setting runs in a parent of
its own, with ``THP_MEM_ALLOC_ENABLE`` set before torch is imported (hostalloc.HUGE_PAGES_ENV); the
two settings' parents alternate, REPEATS times, so that a host whose level moves with time moves both.

    python docs/studies/huge-pages/forks.py RUNS REPEATS [alone|after ...]
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time

DECODE = ("sdpa-math", "llama70b-decode-kv384")


def parent(pages: str, order: str, runs: int, repeat: int) -> None:
    """In a parent of its own (torch imported under this setting): fork ``runs`` children, one after another."""
    sys.path.insert(0, "perf_tests")
    import torch
    from workloads.attention import BACKENDS, shapes

    from pytest_accel.engine.devices.cpu import CpuDevice

    device = CpuDevice(host_allocator="steady")
    device.activate()
    named = {shape.name: shape for shape in shapes("smoke")}

    def time_calls(backend: str, name: str, calls: int) -> tuple[list[float], float]:
        shape = named[name]
        generator = torch.Generator().manual_seed(0)
        dims = ((shape.heads, shape.q_len), (shape.kv_heads, shape.kv_len), (shape.kv_heads, shape.kv_len))
        q, k, v = (torch.randn(shape.batch, h, n, shape.head_dim, generator=generator) for h, n in dims)
        run = BACKENDS[backend].run
        with torch.no_grad():
            for _ in range(20):
                run(q, k, v, shape.causal, None)
            times, faults = [], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for _ in range(calls):
                started = time.perf_counter()
                run(q, k, v, shape.causal, None)
                times.append(time.perf_counter() - started)
        return times, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / calls

    others = [(backend, name) for backend in ("sdpa-flash", "sdpa-math") for name in named if (backend, name) != DECODE]
    for index in range(runs):
        pid = os.fork()
        if pid == 0:
            if order == "after":
                for backend, name in others:
                    time_calls(backend, name, 30)
            times, faults = time_calls(*DECODE, 300)
            deciles = statistics.quantiles(times, n=10)
            row = {
                "pages": pages, "order": order, "repeat": repeat, "run": index,
                "allocator": device.provenance()["host_allocator"],
                "median_ms": round(statistics.median(times) * 1e3, 3),
                "p10_ms": round(deciles[0] * 1e3, 3), "p90_ms": round(deciles[-1] * 1e3, 3),
                "thirds_ms": [round(statistics.median(times[j * 100 : (j + 1) * 100]) * 1e3, 3) for j in range(3)],
                "faults_per_call": round(faults, 2),
            }  # fmt: skip
            print(json.dumps(row), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)


def main(runs: int, repeats: int, orders: list[str]) -> None:
    for repeat in range(repeats):
        for order in orders or ["after"]:
            for pages, value in (("4k", "0"), ("huge", "1")) if repeat % 2 == 0 else (("huge", "1"), ("4k", "0")):
                environment = {**os.environ, "THP_MEM_ALLOC_ENABLE": value}
                command = [sys.executable, __file__, "--parent", pages, order, str(runs), str(repeat)]
                subprocess.run(command, env=environment, check=True)


if __name__ == "__main__":
    if sys.argv[1] == "--parent":
        parent(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])
