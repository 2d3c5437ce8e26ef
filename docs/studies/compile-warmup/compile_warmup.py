"""What torch.compile costs and gains on the smoke MMDiT: first-call seconds and steady per-call time.

    python docs/studies/compile-warmup/compile_warmup.py            # the 30-step inference loop, eager then compiled
    python docs/studies/compile-warmup/compile_warmup.py --block    # one JointTransformerBlock forward

Prints one line per mode: the first call (compilation happens there) and the median of the next
calls. Torch's default thread count; run it on a quiet machine. Inductor caches compiled code
across processes: for the cold figure, give it a fresh cache (TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "perf_tests"))  # docs/studies/<study>/ -> root

import torch
from workloads import mmdit

from pytest_accel.engine.devices import make_device


def first_and_steady(call: Callable[[], Any], repeats: int) -> tuple[float, float]:
    began = time.perf_counter()
    call()
    first = time.perf_counter() - began
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return first, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block", action="store_true", help="one JointTransformerBlock forward, not the loop")
    options = parser.parse_args()
    device = make_device("cpu")
    config = mmdit.CONFIGS[("smoke", "sd3")]
    if options.block:
        block = mmdit.build_block(config, device, torch.float32)
        side = mmdit.latent_side(512, "smoke")
        tokens = (side // config.patch_size) ** 2
        inputs = (torch.randn(2, tokens, config.width), torch.randn(2, config.text_tokens, config.width))
        temb = torch.randn(2, config.width)
        compiled = torch.compile(block)
        modes: dict[str, Callable[[], Any]] = {
            "eager": lambda: block(*inputs, temb),
            "compiled": lambda: compiled(*inputs, temb),
        }
        repeats = 20
    else:
        model = mmdit.build(config, device).eval()
        data = mmdit.make_batch(config, 1, mmdit.latent_side(1024, "smoke"), device, torch.float32)
        modes = {
            "eager": mmdit.inference_loop(model, data, device),
            "compiled": mmdit.inference_loop(torch.compile(model), data, device),
        }
        repeats = 5
    with torch.no_grad():
        for name, call in modes.items():
            first, steady = first_and_steady(call, repeats)
            print(f"{name:9s} first call {first:6.2f} s   then {steady * 1e3:8.2f} ms per call (median of {repeats})")


if __name__ == "__main__":
    main()
