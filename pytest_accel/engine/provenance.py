"""Provenance of a run beyond the device's: commit, date, profile, world size."""

from __future__ import annotations

import datetime
from pathlib import Path

from pytest_accel.engine.processes import GitError, git

__all__ = ["git_commit", "run_provenance"]


def git_commit(folder: Path) -> str:
    """The checked-out commit of ``folder`` (with ``+dirty`` for local changes), or ``unknown``."""
    try:
        commit = git(folder, "rev-parse", "--short=12", "HEAD", timeout=10)
        dirty = git(folder, "status", "--porcelain", "--untracked-files=no", timeout=10)
    except GitError:
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
