"""Provenance of a run beyond the device's: commit, date, profile, world size."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

__all__ = ["git_commit", "run_provenance"]


def git_commit(folder: Path) -> str:
    """The checked-out commit of ``folder`` (with ``+dirty`` for local changes), or ``unknown``."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
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
