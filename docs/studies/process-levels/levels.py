"""Each fresh process's level of one forward SDPA kernel at a smoke shape, under host allocator modes.

Runs PROCESSES fresh Python processes per mode, interleaved (mode A, B, ..., A, B, ...), each set up
as the plugin's CPU device sets up its process (``CpuDevice.activate``: torch threads, the host
allocator's mode), timing CALLS calls after a warm-up, and prints one JSON line per process: its
median call time, minor page faults per call and the mode. Usage (from the repository root, quiet):

    python docs/studies/process-levels/levels.py BACKEND SHAPE PROCESSES CALLS [MODE[+PAD] ...]

A mode is one of the plugin's ``--accel-host-allocator`` choices (steady, system); +PAD allocates
PAD bytes between the inputs and the first call, which moves where the kernel's buffers land.
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import json, resource, statistics, sys, time
sys.path.insert(0, "perf_tests")
import torch
from workloads.attention import BACKENDS, shapes
from pytest_accel.engine.devices.cpu import CpuDevice
backend, shape_name, calls, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
CpuDevice(host_allocator=mode).activate()
shape = next(s for s in shapes("smoke") if s.name == shape_name)
g = torch.Generator().manual_seed(0)
dims = ((shape.heads, shape.q_len), (shape.kv_heads, shape.kv_len), (shape.kv_heads, shape.kv_len))
q, k, v = (torch.randn(shape.batch, h, n, shape.head_dim, generator=g) for h, n in dims)
pad = torch.empty(int(sys.argv[5]), dtype=torch.uint8)  # shifts what is allocated next against the inputs
run = BACKENDS[backend].run
with torch.no_grad():
    for _ in range(max(5, calls // 10)):
        run(q, k, v, shape.causal, None)
    times = []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        t = time.perf_counter()
        run(q, k, v, shape.causal, None)
        times.append(time.perf_counter() - t)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
print(json.dumps({"median_ms": statistics.median(times) * 1e3, "faults_per_call": faults / calls}))
"""


def main(backend: str, shape: str, processes: int, calls: int, modes: list[str]) -> None:
    for index in range(processes):
        for mode, pad in (_mode(m) for m in modes or ["steady"]):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, backend, shape, str(calls), mode, str(pad)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            row = json.loads(out.strip().splitlines()[-1])
            print(json.dumps({"mode": mode, "pad": pad, "process": index, **row}), flush=True)


def _mode(text: str) -> tuple[str, int]:
    """``steady`` or ``steady+1024``: the allocator mode, and bytes allocated between the inputs and the calls."""
    mode, _, pad = text.partition("+")
    return mode, int(pad or 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
