"""Provenance of a run beyond the device's: commit, date, profile, world size."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

__all__ = ["git_commit", "run_provenance"]


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=folder, capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()


def git_commit(folder: Path) -> str:
    """The checked-out commit of ``folder`` (with ``+dirty`` for local changes), or ``unknown``."""
    try:
        commit = _git(folder, "rev-parse", "--short=12", "HEAD")
        dirty = _git(folder, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit}+dirty" if dirty else commit


def run_provenance(folder: Path, profile: str, world_size: int) -> dict[str, str]:
    """Commit, UTC date, profile and world size, as strings for the baseline store."""
    return {
        "commit": git_commit(folder),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "profile": profile,
        "world_size": str(world_size),
    }
