"""Shared helpers for the plugin's own tests."""

from __future__ import annotations

import pytest

# pytester's in-process runs drop modules first imported inside them; re-importing torch's C
# extension in the next run segfaults. Importing it here keeps it loaded for the whole session.
import torch
import torch.profiler

# Same for the profiler, which imports some 800 modules (dynamo, inductor) on its first use; one of
# them registers a torch library that cannot be registered twice. One tiny profile loads them all.
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as _warm:
    torch.ones(2).add_(1)
_warm.key_averages()

try:  # Same for Pillow's format registry: filled once, here, not inside a run that pytester then unloads.
    from PIL import Image

    Image.init()
except ImportError:
    pass


def pytest_configure(config: pytest.Config) -> None:
    """The plugin's tests measure kernels for real inside their pytester runs: two xdist workers time
    beside each other: with ``-n 2`` comparing a run against one with 3x longer naps exited 0, not 1."""
    workers = getattr(config.option, "numprocesses", None)
    if workers not in (None, 0) and not hasattr(config, "workerinput"):
        raise pytest.UsageError(
            f"the plugin's own tests measure for real and must not share the CPU with each other: -n {workers} "
            "is refused; run them without -n (the fast set takes about 3 minutes on 2 cores)"
        )


@pytest.fixture
def perf_pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester with fast measurement settings in its ini."""
    pytester.makeini("[pytest]\naccel_warmup_max_seconds = 0.2\n")
    return pytester
