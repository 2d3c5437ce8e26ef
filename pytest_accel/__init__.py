"""pytest-accel: performance-regression tests for AI accelerators, as a pytest plugin.

The public API is small: the ``throughput`` fixture (see ``pytest_accel.plugin.fixture.Throughput``)
returns a ``Measurement``; ``measure`` and ``MeasureConfig`` time a callable outside pytest.
Importing this package does not import torch.
"""

from __future__ import annotations

from pytest_accel.core.measurement import Measurement
from pytest_accel.engine.sampling import MeasureConfig, MeasurementError, measure

__all__ = ["MeasureConfig", "Measurement", "MeasurementError", "measure"]
__version__ = "0.1.0"
