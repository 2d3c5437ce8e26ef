"""The perf suite. Profiles: ``--accel-profile smoke`` (default; seconds on a CPU) or ``full`` (the studies' sizes).

Each test module picks its sizes from the ``accel_profile`` fixture; ``workloads/`` builds the
models and data (no pytest there), so the sizes live next to the code that uses them.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Full profile: a test named in its module's ``FULL_PROFILE_PERF`` gets those perf marker settings
    (fewer rounds for calls of seconds); the smoke profile keeps the defaults."""
    profile = config.getoption("accel_profile") or config.getini("accel_profile")
    if profile != "full":
        return
    for item in items:
        module = getattr(item, "module", None)
        settings = getattr(module, "FULL_PROFILE_PERF", {}).get(getattr(item, "originalname", ""))
        if settings:
            item.add_marker(pytest.mark.perf(**settings))
