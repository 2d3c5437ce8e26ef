"""Instructions of N SDPA calls counted under callgrind: the workload of the counted-work verdict's first study.

Run under valgrind (see README.md); counts only between the two toggles (``--collect-atstart=no``).
``--adds N``: each call also adds ``q`` to the output N times: extra arithmetic on the same tensors (one add
measured +0.47% of a call's instructions, README.md).
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--adds", type=int, default=0, help="extra elementwise adds per call (the plant)")
    options = parser.parse_args()
    started = time.monotonic()
    torch.set_num_threads(1)
    q = torch.randn(2, 8, 256, 64, generator=torch.Generator().manual_seed(0))

    def call() -> torch.Tensor:
        out = torch.nn.functional.scaled_dot_product_attention(q, q, q)
        for _ in range(options.adds):
            out = out + q
        return out

    for _ in range(3):
        call()
    ready = time.monotonic() - started
    torch._C._valgrind_toggle()
    for _ in range(options.calls):
        call()
    torch._C._valgrind_toggle_and_dump_stats()
    print(f"import+warm-up {ready:.1f} s, counted calls {time.monotonic() - started - ready:.1f} s", flush=True)


if __name__ == "__main__":
    main()
