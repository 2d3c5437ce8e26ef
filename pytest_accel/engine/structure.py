"""Take a workload's structural record (core/structure.py): counts from the profiler and from dynamo.

Never on the hot path: the fixture takes it after the timed rounds (or, with
``--accel-structure-only``, after a short warm-up instead of them). Profiled blocks of the same
number of calls: an operator whose count per call differs between them is marked unstable, so what
is compared is what every call of the workload runs. When a stored record is given and the first
block equals it, no other is taken. A recording takes ``CHECK_BLOCKS``; a difference takes blocks
until it is gone (the operator varied: unstable) or ``CHECK_BLOCKS`` agree on it (a change); a
record that is only shown (no stored one, no recording: "new") takes two.

Compiled code: when dynamo is loaded, ``CompileWatch.start`` resets it at the start of the test
(``torch._dynamo.reset``: "as if you had started a fresh process"), so a test compiles the same
graphs whichever tests ran before it in the process, and the graph breaks dynamo reports are this
test's. Each compiled region the profiler sees ("Torch-Compiled Region: <frame>/<compile>") counts
as a graph run; frame and compile ids, and compiled-graph hashes, are normalised away.

Gaudi: ``Device.structure_counters`` reads the bridge's documented metrics (graph compilations),
counted per call (**not yet run on Gaudi**).
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, final

from pytest_accel.core.structure import Structure, changes, stable_counts
from pytest_accel.engine.devices.base import Device
from pytest_accel.engine.profiling import PROFILER_OWN, event_counts, profiled

__all__ = [
    "BLOCK_SECONDS",
    "CHECK_BLOCKS",
    "CompileWatch",
    "StructureError",
    "block_calls",
    "structure_key",
    "take_structure",
]

# Workload time one profiled block aims at. At least 1 call, at most 5.
BLOCK_SECONDS = 0.1
_MAX_BLOCK_CALLS = 5
# Blocks that must agree before a count is recorded, or before a difference is called a change. Two
# are not enough where a producer's timing moves a count: a DataLoader's workers deliver batches out
# of order, the main process rebuilds a batch's tensors (``empty``, ``set_``) when it receives one
# and hands out one received earlier with no operator, so a block of c calls receives c + (batches
# kept at its end) - (kept at its start). Two blocks in a row read the same other count (a false
# change seen in CI); the same other count in n blocks in a row needs n more batches kept, and a
# loader of 2 workers keeps at most 3 (docs/studies/structure, "Delivery order").
CHECK_BLOCKS = 6
_REGION = re.compile(r"^Torch-Compiled Region: \d+/\d+$")
_GRAPH_CALL = re.compile(r"^## Call CompiledFxGraph \S+ ##$")
# What ``torch.cuda.synchronize`` shows as in a CUDA profile (**not yet run on a GPU**).
_BLOCK_SYNC = "cudaDeviceSynchronize"


class StructureError(Exception):
    """The record could not be taken (the test's time verdict stands without it)."""


def block_calls(seconds_per_call: float) -> int:
    """Calls per profiled block: about BLOCK_SECONDS of work, at least 1, at most 5."""
    if not math.isfinite(seconds_per_call) or seconds_per_call <= 0:
        return 1
    return max(1, min(_MAX_BLOCK_CALLS, round(BLOCK_SECONDS / seconds_per_call)))


def structure_key(device: Device) -> str:
    """What decides a workload's structure: the device kind and what its dispatch depends on, and torch.

    CPU: the vector ISA torch dispatches kernels for (``torch.backends.cpu.get_cpu_capability``);
    CUDA: the GPU model (cuBLAS and cuDNN pick kernels by model: an H100 PCIe has fewer SMs than an
    SXM); HPU: the Gaudi generation. Never the host generation: a new VM class of the same ISA, or a
    new host with the same GPU, compares its structure from the first run.
    """
    import torch

    kind = device.kind
    if kind == "cpu":
        capability = torch.backends.cpu.get_cpu_capability().lower()
    elif kind == "cuda":
        capability = device.key().removeprefix("cuda-")
    else:
        capability = re.sub(r"[^a-z0-9]+", "", str(device.provenance().get("device_model", kind)).lower()) or kind
    version = re.sub(r"[^A-Za-z0-9.]+", "_", torch.__version__)
    return f"{kind}-{capability}-torch{version}"


@final
@dataclass
class CompileWatch:
    """Dynamo's state for one test: reset when the test's first measurement begins, read at the record."""

    started: bool = False
    _graphs_before: int = 0
    _counter: dict[str, Any] = field(default_factory=dict)

    def start(self) -> None:
        """Reset dynamo (when loaded: a suite that never compiles does not import it) and note its counters."""
        self.started = True
        if "torch._dynamo" not in sys.modules:
            return
        import torch._dynamo

        torch._dynamo.reset()
        self._graphs_before = _unique_graphs()

    def read(self) -> tuple[int, int, tuple[str, ...]]:
        """(graphs compiled, recompilations, graph-break reasons) since ``start``."""
        if "torch._dynamo" not in sys.modules:
            return 0, 0, ()
        from torch._dynamo import convert_frame, utils

        per_frame: Mapping[Any, int] = getattr(convert_frame, "FRAME_COMPILE_COUNTER", {})
        recompilations = sum(max(0, int(count) - 1) for count in per_frame.values())
        breaks = sorted(_break_line(reason) for reason in getattr(utils, "graph_break_reasons", ()))
        return max(0, _unique_graphs() - self._graphs_before), recompilations, tuple(breaks)


def _unique_graphs() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def _break_line(reason: Any) -> str:
    """'<first line of the reason> at <file name>:<line>': the user frame dynamo broke the graph in."""
    text = str(getattr(reason, "reason", reason)).strip().splitlines()
    line = text[0] if text else "graph break"
    stack = getattr(reason, "user_stack", None) or ()
    if stack:
        frame = stack[-1]
        line += f" at {os.path.basename(frame.filename)}:{frame.lineno}"
    return line


def _normalised(name: str) -> str:
    if _GRAPH_CALL.match(name):
        return "## Call CompiledFxGraph ##"
    return name


def _block(fn: Callable[[], Any], device: Device, calls: int, activities: list[Any]) -> tuple[dict[str, float], int]:
    """One profiled block: event name -> count (host and device events), and compiled regions run."""
    events = event_counts(profiled(fn, device, calls, activities))
    # The block's own closing wait is not the workload's: one device-wide sync per block, taken off.
    counts: dict[str, float] = {_BLOCK_SYNC: -1.0} if device.kind == "cuda" else {}
    regions = 0
    for (name, kind), count in events.items():
        if name.startswith(PROFILER_OWN):
            continue
        if _REGION.match(name):
            if kind in ("", "CPU"):  # the host's annotation; a device's copy of it is not another run
                regions += count
            continue
        if kind not in ("", "CPU") and _GRAPH_CALL.match(name):
            continue  # a device's copy of the host's graph-call annotation (its hash is inductor's, per build)
        key = _normalised(name) if kind in ("", "CPU") else f"[{kind.lower()} kernel] {name}"
        counts[key] = counts.get(key, 0.0) + float(count)
    return {name: n for name, n in counts.items() if n > 0}, regions


def take_structure(
    fn: Callable[[], Any],
    device: Device,
    seconds_per_call: float,
    watch: CompileWatch,
    key: str,
    expected: Structure | None = None,
    kept: bool = True,
) -> Structure:
    """Profile ``fn`` (already warm); its structural record. Raises ``StructureError``.

    One block when ``expected`` (the stored record) is given and the block equals it: what ran is
    unchanged, and the stored record's unstable operators stay uncompared. A difference takes
    more blocks until it is gone (the operator's count moved from block to block: unstable, never
    compared) or ``CHECK_BLOCKS`` blocks agree on it: a change. With no ``expected``, a record that
    is ``kept`` (a recording: later runs are judged against it) takes ``CHECK_BLOCKS`` blocks, one
    that is only shown ("new") two.
    """
    try:
        activities = device.profiler_activities()
    except Exception as error:
        raise StructureError(f"no profiler for {device.kind}: {error}") from None
    calls = block_calls(seconds_per_call)
    before = device.structure_counters()
    blocks = [_block(fn, device, calls, activities)]
    if expected is not None:
        alone = _record(blocks, calls, watch, key, before, device.structure_counters(), expected.unstable)
        if not changes(expected, alone):
            return alone
    wanted = CHECK_BLOCKS if expected is not None or kept else 2
    while True:
        blocks.append(_block(fn, device, calls, activities))
        record = _record(blocks, calls, watch, key, before, device.structure_counters(), ())
        if len(blocks) >= wanted or (expected is not None and not changes(expected, record)):
            return record


def _record(
    blocks: list[tuple[dict[str, float], int]],
    calls: int,
    watch: CompileWatch,
    key: str,
    before: Mapping[str, float],
    after: Mapping[str, float],
    unstable: tuple[str, ...],
) -> Structure:
    """The record of the profiled blocks; ``unstable`` adds the operators not to compare (a stored record's)."""
    # A workload that runs no torch operation (pure Python) has an empty record: that is what it runs.
    operators, moved = stable_counts([counts for counts, _ in blocks], calls)
    regions = [n for _, n in blocks]
    if len(set(regions)) > 1:
        moved = (*moved, "compiled graphs")
    compiles, recompilations, breaks = watch.read() if watch.started else (0, 0, ())
    extra = {name: (after[name] - before.get(name, 0.0)) / (len(blocks) * calls) for name in after}
    return Structure(
        operators=operators,
        graphs=max(regions) / calls,
        compiles=compiles,
        recompilations=recompilations,
        breaks=breaks,
        unstable=tuple(dict.fromkeys((*unstable, *moved))),
        key=key,
        calls=calls,
        extra={f"{name} per call": value for name, value in extra.items()},
    )
