"""How a DataLoader's delivery order moves the main process's operator counts, block by block.

With worker processes, the main process rebuilds each batch's tensors as it receives them
(``aten::empty`` + ``aten::set_`` per tensor); a batch that arrives before its turn is received,
kept, and handed out by a later call without any operator. So the count per profiled block is
``calls + (batches kept at its end) - (kept at its start)``, not ``calls``.

Each trial runs the README suite's smoke data path a few calls, pauses (as the timed rounds'
probes and the end of the rounds do), then profiles ``CHECK_BLOCKS`` blocks back to back, as the
structural record does, and keeps each block's batches received. Then it replays two rules on
every trial whose first block differs from ``calls`` (what the stored record says): "changed"
when the first 2 blocks agree on another count (the rule before), and when all ``CHECK_BLOCKS``
do (the rule now).

    python docs/studies/structure/delivery_order.py 1 > docs/studies/structure/delivery-order.json
    python docs/studies/structure/delivery_order.py 2 --beside > docs/studies/structure/delivery-order-beside.json

``--beside``: a second perf suite runs beside it (docs/studies/shared/neighbour.py), as in CI's
neighbour-heavy hours.
"""

from __future__ import annotations

import json
import platform
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "perf_tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))
from neighbour import Neighbour
from workloads import bridgetower, images

from pytest_accel.engine.devices.cpu import CpuDevice
from pytest_accel.engine.profiling import event_counts, profiled
from pytest_accel.engine.structure import CHECK_BLOCKS

TRIALS = 100
TENSORS_PER_BATCH = 3  # pixel_values, input_ids, attention_mask


def trials(workers: int, calls: int, consumer_seconds: float, rng: random.Random) -> list[list[int]]:
    """Batches received per profiled block of ``calls`` calls: ``CHECK_BLOCKS`` blocks per trial."""
    dataset = images.JpegCaptionDataset(images.make_jpegs(64), vocab=1000)
    device = CpuDevice()

    def call() -> None:
        next_batch()
        if consumer_seconds:
            time.sleep(consumer_seconds)  # a training step that takes longer than a batch's decode

    with bridgetower.loader_batches(dataset, 8, workers) as next_batch:
        for _ in range(20):
            call()
        runs = []
        for _ in range(TRIALS):
            for _ in range(rng.randrange(8)):
                call()
            time.sleep(rng.choice((0.0, 0.05, 0.2, 0.5)))
            counts = []
            for _ in range(CHECK_BLOCKS):
                events = event_counts(profiled(call, device, calls, [torch.profiler.ProfilerActivity.CPU]))
                received = sum(n for (name, _), n in events.items() if name == "aten::set_")
                counts.append(received // TENSORS_PER_BATCH)
            runs.append(counts)
    return runs


def replay(runs: list[list[int]], calls: int) -> dict[str, int]:
    """Trials whose first block differs from ``calls``; of those, called "changed" by 2 and by all blocks."""
    differing = [counts for counts in runs if counts[0] != calls]
    return {
        "trials": len(runs),
        "first_block_differs": len(differing),
        "changed_by_2_blocks": sum(len(set(counts[:2])) == 1 for counts in differing),
        f"changed_by_{CHECK_BLOCKS}_blocks": sum(len(set(counts)) == 1 for counts in differing),
        "longest_run_of_one_other_count": max((_longest(counts, calls) for counts in runs), default=0),
    }


def _longest(counts: list[int], calls: int) -> int:
    longest = run = 0
    for index, count in enumerate(counts):
        run = run + 1 if count != calls and index and count == counts[index - 1] else int(count != calls)
        longest = max(longest, run)
    return longest


def main() -> None:
    rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    beside = "--beside" in sys.argv
    stop = threading.Event()
    if beside:
        neighbour = Neighbour(Path(tempfile.mkdtemp()), ["perf_tests/test_mmdit.py"])

        def watch() -> None:
            while not stop.wait(1.0):
                neighbour.keep_running()

        threading.Thread(target=watch, daemon=True).start()
        time.sleep(20)
    out = []
    for workers, calls, consumer in ((2, 2, 0.0), (2, 4, 0.0), (2, 1, 0.0), (1, 2, 0.0), (2, 1, 0.05)):
        runs = trials(workers, calls, consumer, rng)
        summary = replay(runs, calls)
        out.append({"workers": workers, "calls": calls, "consumer_seconds": consumer, **summary, "batches": runs})
        print(workers, calls, consumer, summary, file=sys.stderr, flush=True)
    stop.set()
    if beside:
        neighbour.stop()
    host = {
        "beside": "a second perf suite (perf_tests/test_mmdit.py, looping)" if beside else "quiet",
        "machine": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    json.dump({"host": host, "runs": out}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
