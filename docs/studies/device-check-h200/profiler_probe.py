"""What torch.profiler reports for one device's operators (the operator diff's device seam): attribute names, the
device-time fields, and the cost of a profiled call, on an SDPA forward with two backends.

    python docs/studies/device-check-h200/profiler_probe.py --device cuda
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    options = parser.parse_args()
    device = torch.device(options.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    q, k, v = (torch.randn(2, 24, 4429, 64, device=device, dtype=dtype) for _ in range(3))
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    from torch.nn.attention import SDPBackend, sdpa_kernel

    report: dict[str, object] = {"torch": torch.__version__}
    for backend in ("FLASH_ATTENTION", "MATH"):
        with sdpa_kernel(getattr(SDPBackend, backend)):
            for _ in range(3):
                F.scaled_dot_product_attention(q, k, v)
            if device.type == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
            with profile(activities=activities) as prof:
                for _ in range(5):
                    F.scaled_dot_product_attention(q, k, v)
                if device.type == "cuda":
                    torch.cuda.synchronize()
            profiled = time.perf_counter() - started
            started = time.perf_counter()
            averages = prof.key_averages()
            rows = []
            for event in sorted(averages, key=lambda e: -getattr(e, "self_device_time_total", 0))[:8]:
                rows.append(
                    {
                        "key": event.key,
                        "count": event.count,
                        "self_cpu_us": event.self_cpu_time_total,
                        "self_device_us": getattr(event, "self_device_time_total", None),
                        "device_type": str(getattr(event, "device_type", None)),
                    }
                )
            report[backend] = {
                "profiled_seconds": profiled,
                "aggregate_seconds": time.perf_counter() - started,
                "fields": sorted(n for n in dir(averages[0]) if "time" in n)[:40],
                "rows": rows,
            }
    print(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
