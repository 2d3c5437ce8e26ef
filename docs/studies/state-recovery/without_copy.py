"""A pytest plugin for this study only (``-p without_copy``): the state probes without the large copy."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: Any) -> None:
    import pytest_accel.plugin.fixture as fixture

    every = fixture.state_probes
    fixture.state_probes = lambda device: {k: v for k, v in every(device).items() if k != "memory"}
