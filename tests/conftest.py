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


@pytest.fixture
def perf_pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester with fast measurement settings in its ini."""
    pytester.makeini("[pytest]\naccel_warmup_max_seconds = 0.2\n")
    return pytester
