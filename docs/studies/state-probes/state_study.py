"""Do the machine-state probes see what a real neighbour does to the workloads? One process, two phases.

    python docs/studies/state-probes/state_study.py --quiet 40 --busy 90 --out state.json
    python docs/studies/state-probes/state_study.py --processes 8      # the probes' own noise across fresh processes

Times alternating rounds (~20 ms) of three workloads (SDPA forward+backward at the SD3 smoke shape,
an MLP forward+backward, a LayerNorm over 16 MiB: compute-, mixed- and memory-bound) and of the
three state probes of ``pytest_accel.engine.machine`` (compute: a 384^2 matmul; memory: a 2 x 32 MiB
copy; latency: a random gather over 64 MiB), on one torch thread, first on a quiet machine, then
with the neighbour this project's users have: a second ``pytest perf_tests --device cpu`` (memory-
bound kernels, allocation, DataLoader worker processes). Prints, per workload, how much it slowed
(busy median / quiet median) raw and relative to each probe, and how much each probe slowed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

ROUND_SECONDS = 0.02


def workloads() -> dict[str, Callable[[], object]]:
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 24, 410, 64, requires_grad=True) for _ in range(3))
    grad = torch.randn(2, 24, 410, 64)
    mlp = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512))
    x = torch.randn(256, 512)
    norm_in = torch.randn(4096, 1024)

    def sdpa() -> object:
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v).backward(grad)
        return q.grad

    def mlp_step() -> object:
        mlp.zero_grad(set_to_none=True)
        mlp(x).square().mean().backward()
        return mlp[0].weight.grad

    return {"sdpa_fwd_bwd": sdpa, "mlp_fwd_bwd": mlp_step, "layernorm_16mib": lambda: F.layer_norm(norm_in, (1024,))}


def calls_for(fn: Callable[[], object]) -> int:
    for _ in range(3):
        fn()
    start = time.perf_counter()
    fn()
    return max(1, round(ROUND_SECONDS / max(time.perf_counter() - start, 1e-7)))


def timed(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def phase(kernels: dict[str, Callable[[], object]], counts: dict[str, int], seconds: float) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in kernels}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for name, fn in kernels.items():
            times[name].append(timed(fn, counts[name]))
    return times


def one_process() -> None:
    """Print the state medians ``measure()`` records for a 128^2 matmul, at the 1 s and 0.05 s budgets."""
    from pytest_accel.engine.devices.cpu import CpuDevice
    from pytest_accel.engine.machine import state_probes
    from pytest_accel.engine.sampling import MeasureConfig, measure

    torch.set_num_threads(1)
    device, a = CpuDevice(1), torch.randn(128, 128)
    probes = state_probes(device)
    others = {name: probe for name, probe in probes.items() if name != "compute"}
    states = {}
    for budget in (1.0, 0.05):
        config = MeasureConfig(measure_seconds=budget, warmup_max_seconds=0.2 if budget < 1 else 3.0)
        m = measure(lambda: a @ a, timer=device.timer(), items_per_call=1, unit="x", config=config,
                    probe=probes["compute"], state_probes=others)  # fmt: skip
        states[str(budget)] = dict(m.state)
    print(json.dumps(states))


def processes(count: int) -> None:
    """Each probe's median (ms) in ``count`` fresh processes, and its range around their median."""
    runs = [
        json.loads(
            subprocess.run([sys.executable, __file__, "--one"], capture_output=True, text=True, check=True).stdout
        )
        for _ in range(count)
    ]
    for budget in ("1.0", "0.05"):
        for name in ("compute", "latency", "memory"):
            values = [run[budget][name] for run in runs]
            centre = statistics.median(values)
            print(f"budget {budget} s, {name}: {min(values) * 1e3:.3f}-{max(values) * 1e3:.3f} ms "
                  f"({min(values) / centre - 1:+.0%}..{max(values) / centre - 1:+.0%})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quiet", type=float, default=40)
    parser.add_argument("--busy", type=float, default=90)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--processes", type=int, help="instead: the probes' noise across this many fresh processes")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root
    if options.one:
        one_process()
        return
    if options.processes:
        processes(options.processes)
        return
    from pytest_accel.engine.devices.cpu import CpuDevice
    from pytest_accel.engine.machine import state_probes

    torch.set_num_threads(1)
    kernels = {**workloads(), **{f"probe_{k}": v for k, v in state_probes(CpuDevice(1)).items()}}
    counts = {name: calls_for(fn) for name, fn in kernels.items()}
    quiet = phase(kernels, counts, options.quiet)
    neighbour = subprocess.Popen(
        [sys.executable, "-m", "pytest", "perf_tests", "--device", "cpu", "-q", "-p", "no:cacheprovider",
         "--accel-baselines", "/tmp/state-study-baselines"],
        cwd=Path(__file__).resolve().parents[3], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(15)  # past the neighbour's imports and collection, into its measuring
        busy = phase(kernels, counts, options.busy)
    finally:
        neighbour.kill()
        neighbour.wait()
    med = {p: {n: statistics.median(v) for n, v in t.items()} for p, t in (("quiet", quiet), ("busy", busy))}
    slowdown = {n: med["busy"][n] / med["quiet"][n] for n in kernels}
    report = {
        "rounds": {"quiet": len(quiet["probe_compute"]), "busy": len(busy["probe_compute"])},
        "slowdown": slowdown,
        "relative": {
            w: {p: slowdown[w] / slowdown[p] for p in kernels if p.startswith("probe_")}
            for w in kernels
            if not w.startswith("probe_")
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    if options.out:
        options.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
