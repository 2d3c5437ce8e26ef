"""The perf suite's shared settings: what each profile means."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def smoke(accel_profile: str) -> bool:
    """True in the smoke profile (shapes scaled down to run in seconds on a CPU)."""
    return accel_profile == "smoke"
