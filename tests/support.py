"""Constants shared by the plugin's tests (importable as ``support``: tests/ is on the import path)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["FAST_OPTIONS", "PERF_TEST", "SPREAD_UNJUDGED", "STEADINESS_UNJUDGED", "commit", "git"]

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

# For tests of what follows a verdict (a slowdown's message, the confirmations, the operator diff),
# not of the machine-steadiness rules (tests/test_verdict.py checks them). With 0.05 s budgets on the
# shared 2-core VM a burst now and then spread a run's rounds past the 25% floor, and a planted 3x
# slowdown read "noisy: too unsteady" (twice in 3 full runs on 2026-12-01); between a recording and
# the next run the reference kernel (a 128x128 matmul) went from 57 us to 214 us (2026-12-02), past
# the 2x drift limit. The normalised comparison still holds there: the probe moved with the workload.
SPREAD_UNJUDGED = ("-o", "accel_noisy_spread_floor=100")
STEADINESS_UNJUDGED = (*SPREAD_UNJUDGED, "-o", "accel_probe_drift_limit=1000")


def git(repo: Path, *args: str) -> str:
    """``git ARGS`` in ``repo`` as a fixed author; its output."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, message: str, **files: str) -> str:
    """Write ``files`` into ``repo`` and commit everything; the new commit."""
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")
