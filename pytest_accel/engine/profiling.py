"""Take a workload's operator table with ``torch.profiler`` (and, when asked, its Chrome trace).

Never on the hot path: the fixture calls this after the timed rounds, at ``--accel-update`` (the
table goes into the baseline entry), on a confirmed regression (the table is diffed against the
entry's), or for every measurement with ``--accel-operators=always`` (``pytest-accel ab``).

Activities come from the device seam (``Device.profiler_activities``): the host always; CUDA's
kernels on ``cuda``; on ``hpu`` the ``ProfilerActivity.HPU`` that Habana's "Profiling with
PyTorch" passes, with the bridge imported first (**not yet run on Gaudi**). The bridge's profiler
writes HPU events to the exported trace only, so a Gaudi table holds host times, its device times
unknown.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pytest_accel.core.measurement import DEFAULT_METRIC
from pytest_accel.core.operator_table import OperatorProfile
from pytest_accel.engine.devices.base import Device, DeviceUnavailable

__all__ = [
    "PROFILER_OWN",
    "PROFILE_SECONDS",
    "OperatorProfileError",
    "TraceError",
    "event_counts",
    "profile_calls",
    "profile_operators",
    "profiled",
    "trace_path",
]

# Workload time one profile aims at: enough calls that a table per call is not one call's luck,
# few enough that a long workload (a 2048-token generation) is profiled once.
PROFILE_SECONDS = 0.5
_MAX_CALLS = 10
# Rows the profiler adds about itself, not the workload's.
PROFILER_OWN = ("Activity Buffer Request", "ProfilerStep", "[memory]")
# Longest test-id part of a trace's file name (file systems allow 255 bytes).
_NAME_CHARS = 150


class OperatorProfileError(Exception):
    """The profile could not be taken (the verdict stands without its diff)."""


class TraceError(Exception):
    """The table was taken but its trace could not be written; ``profile`` holds the table."""

    def __init__(self, message: str, profile: OperatorProfile) -> None:
        super().__init__(message)
        self.profile = profile


def profile_calls(seconds_per_call: float) -> int:
    """How many calls one profile takes: about PROFILE_SECONDS of work, at least 1, at most 10."""
    if not math.isfinite(seconds_per_call) or seconds_per_call <= 0:
        return 1
    return max(1, min(_MAX_CALLS, round(PROFILE_SECONDS / seconds_per_call)))


def trace_path(folder: Path, test: str, metric: str) -> Path:
    """``<folder>/<test id, made a file name>[--<metric>].json``, unique per test and metric."""
    name = test if metric == DEFAULT_METRIC else f"{test}--{metric}"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "test"
    if len(safe) > _NAME_CHARS or safe != name.replace("/", "_"):
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]  # two ids that clean to one name stay apart
        safe = f"{safe[:_NAME_CHARS]}-{digest}"
    return folder / f"{safe}.trace.json"


def _activities(device: Device) -> list[Any]:
    """The device's profiler activities; what is missing becomes this module's error."""
    try:
        return device.profiler_activities()
    except DeviceUnavailable as error:
        raise OperatorProfileError(str(error)) from None


# What the profiler itself writes to file descriptor 2 when it starts and stops (kineto:
# "USDT:2026-12-02 20:08:01 28421:28421 SyncActivityProfilerHandler.cpp:52] profiler_start").
_PROFILER_LINE = re.compile(rb"^USDT:.*\] profiler_(start|stop)\b")


@contextlib.contextmanager
def _without_profiler_lines() -> Iterator[None]:
    """The profiler's own start/stop lines are the plugin's, not the test's: kept out of its captured
    stderr. Everything else written to file descriptor 2 meanwhile (a C++ warning of the workload's)
    passes through, in order, when the block ends."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            kept = [line for line in sink.read().splitlines(keepends=True) if not _PROFILER_LINE.match(line)]
            if kept:
                os.write(2, b"".join(kept))


def profiled(fn: Callable[[], Any], device: Device, calls: int, activities: list[Any]) -> Any:
    """``calls`` calls of ``fn`` (each ending its step) under ``torch.profiler``, the device drained before
    and inside: the profile. Shared with the structural record (engine/structure.py)."""
    from torch.profiler import profile

    device.synchronize()
    # The profiler warns about its own cycles and missing counters; a project that makes warnings
    # errors must not lose a regression's verdict to them.
    with warnings.catch_warnings(), _without_profiler_lines():
        warnings.simplefilter("ignore")
        with profile(activities=activities) as prof:
            for _ in range(calls):
                fn()
                device.mark_step()
            device.synchronize()
    return prof


def event_counts(prof: Any) -> dict[tuple[str, str], int]:
    """(event name, device type) -> events in a profile, read from the profiler's raw events.

    What ``key_averages()`` counts, without building its event tree: on a workload of 44,000
    operators that tree took 2.9 s, this count 0.04 s (docs/studies/structure/README.md). The
    raw events are the profiler's internals; where they are not there (another torch), the
    averages are counted instead.
    """
    try:
        from torch.autograd import profiler_util

        left_out: Any = profiler_util._filter_name
        renamed: Any = profiler_util._rewrite_name
        events = prof.profiler.kineto_results.events()
    except (AttributeError, ImportError):
        events = None
    counts: dict[tuple[str, str], int] = {}
    if events is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for average in prof.key_averages():
                key = (average.key, _device_name(getattr(average, "device_type", "")))
                counts[key] = counts.get(key, 0) + int(average.count)
        return counts
    for event in events:
        name = event.name()
        if left_out(name) or getattr(event, "is_hidden_event", lambda: False)():
            continue  # what key_averages() leaves out
        key = (renamed(name=name, with_wildcard=True), _device_name(event.device_type()))
        counts[key] = counts.get(key, 0) + 1
    return counts


def _device_name(device_type: Any) -> str:
    """'CPU', 'CUDA', ... for a profiler event's device type ('' where it has none)."""
    return str(device_type).rsplit(".", 1)[-1]


def profile_operators(
    fn: Callable[[], Any], device: Device, seconds_per_call: float, trace: Path | None = None
) -> OperatorProfile:
    """Run ``fn`` (already warm) a few times under ``torch.profiler``; its complete operator table.

    Operators are the host-side events (aten ops, runtime calls); each carries the device time of
    the kernels it launched, so kernel rows themselves are left out (their names are templates
    hundreds of characters long, and they would count the device time twice).
    """
    import torch

    kind = device.kind
    calls = profile_calls(seconds_per_call)
    prof = profiled(fn, device, calls, _activities(device))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        averages = prof.key_averages()
    host = torch.autograd.DeviceType.CPU  # type: ignore[attr-defined]  # public, not re-exported in the stubs
    events: list[tuple[str, int, float, float | None]] = []
    for event in averages:
        if getattr(event, "device_type", host) != host or event.key.startswith(PROFILER_OWN):
            continue
        device_us: Any = getattr(event, "self_device_time_total", None)
        if device_us is None:  # torch before 2.4 named it after CUDA
            device_us = getattr(event, "self_cuda_time_total", 0.0)
        events.append((event.key, int(event.count), float(event.self_cpu_time_total), float(device_us or 0.0)))
    if not events:
        raise OperatorProfileError("the profiler saw no operator (does the workload run torch operations?)")
    if not any(device for *_, device in events):
        # No device time at all: not a device that did nothing but one whose events the averages lack (Habana's
        # profiler writes HPU events to the exported trace only). Unknown, so the diff reads host times.
        events = [(op, count, host, None) for op, count, host, _ in events]
    table = OperatorProfile.from_events(kind if kind in ("cuda", "hpu") else "cpu", calls, events)
    if trace is not None:
        try:
            trace.parent.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(trace))
        except OSError as error:  # a full disk or a read-only folder must not cost the diff
            raise TraceError(f"trace not written to {trace}: {error.strerror or error}", table) from None
    return table
