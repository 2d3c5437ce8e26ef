"""Shared helpers for the plugin's own tests."""

from __future__ import annotations

import pytest

# pytester's in-process runs drop modules first imported inside them; re-importing torch's C
# extension in the next run segfaults. Importing it here keeps it loaded for the whole session.
import torch  # noqa: F401

try:  # Same for Pillow's format registry: filled once, here, not inside a run that pytester then unloads.
    from PIL import Image

    Image.init()
except ImportError:
    pass

# A perf test file for pytester runs: a tiny matmul, measured with small budgets.
PERF_TEST = """
import pytest
import torch

def test_matmul(throughput, accel_device):
    a = torch.randn(64, 64, device=accel_device.torch_device())
    m = throughput(lambda: a @ a, items=64, unit="rows", flops=2 * 64**3)
    assert m.disabled or m.items_per_second > 0
"""

FAST_OPTIONS = ("--accel-measure-seconds", "0.05", "-p", "no:cacheprovider")


@pytest.fixture
def perf_pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester with fast measurement settings in its ini."""
    pytester.makeini("[pytest]\naccel_warmup_max_seconds = 0.2\n")
    return pytester
