"""The recorded build measured beside this tree: whether its commit can be measured again as it was, and the
``pytest-accel ab`` sitting that measures it (``judgement/recorded_build.py`` weighs its word; the gate, when)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from pytest_accel.core.environment import ENVIRONMENT_PROVENANCE
from pytest_accel.engine.processes import GitError, git, run_child
from pytest_accel.judgement.baselines import BaselineEntry
from pytest_accel.judgement.comparison import ComparisonError, load_comparison
from pytest_accel.judgement.confirm import ChildSettings
from pytest_accel.judgement.recorded_build import RecordedWord, word_from_comparison

__all__ = ["measure_beside_recorded", "recorded_commit"]

# Beyond the sitting's own budget: the worktree's checkout, the workers' imports, the last pair.
_GRACE_SECONDS = 300


def recorded_commit(
    entry: BaselineEntry,
    provenance: Mapping[str, str],
    rootdir: Path,
    environment_changes: Callable[[str], str] = lambda digest: "",
) -> tuple[str, str]:
    """The commit the baseline's newest recording measured, when it can be measured again as it was:
    (commit, ""), or ("", why not). ``environment_changes``: what changed since the environment of that
    digest, in a few words ("diffusers 0.30.0 -> 0.31.0"), or "" where its record is not kept.

    A sitting runs both builds in this run's environment: it can only say "not the code" when that
    environment is the recordings' own, proved by equal digests (``core/environment.py``)."""
    commit = entry.provenance.get("commit", "")
    if not commit or commit == "unknown":
        return "", "the recordings name no commit"
    if commit.endswith("+dirty"):
        return "", f"recorded with local changes to {commit.removesuffix('+dirty')}"
    if changes := _environment_changes(entry.provenance, provenance):
        return "", f"{changes} since the recordings, which a checkout does not undo"
    then, now = entry.provenance.get(ENVIRONMENT_PROVENANCE), provenance.get(ENVIRONMENT_PROVENANCE)
    if then is None or now is None:
        whose = "the recordings do not" if then is None else "this run does not"
        return "", f"{whose} name their environment, so nothing proves it unchanged"
    if then != now:
        said = environment_changes(then) or f"environment {then} -> {now}"
        return "", f"the environment changed since the recordings: {said}"  # no checkout undoes it
    try:
        git(rootdir, "cat-file", "-e", f"{commit}^{{commit}}", timeout=30)
    except GitError:
        return "", f"commit {commit} is not in this clone (a shallow one?)"
    return commit, ""


# What a run's provenance says of the code and the moment rather than of its environment, and the environment's
# digest (weighed apart, to name what changed).
_NOT_ENVIRONMENT = frozenset({"commit", "date", "profile", "world_size", ENVIRONMENT_PROVENANCE})


def _environment_changes(then: Mapping[str, str], now: Mapping[str, str]) -> str:
    """'torch 2.12.1+cpu -> 2.13.0+cpu, python 3.11.7 -> 3.12.1' for what both name and differ in; '' if none."""
    changed = sorted(key for key in then.keys() & now.keys() - _NOT_ENVIRONMENT if then[key] != now[key])
    return ", ".join(f"{key} {then[key]} -> {now[key]}" for key in changed)


def measure_beside_recorded(
    test: str, metric: str, commit: str, rootdir: Path, settings: ChildSettings, tolerance: float, minutes: float
) -> RecordedWord:
    """An ``ab`` sitting of ``commit`` (the base) against the working tree (the head) for ``test`` alone, run
    with this run's device, profile and settings, within ``minutes``; its word on ``metric``."""
    started = time.monotonic()
    word = _sit(test, metric, commit, rootdir, settings, tolerance, minutes)
    return replace(word, seconds=time.monotonic() - started)


def _sit(
    test: str, metric: str, commit: str, rootdir: Path, settings: ChildSettings, tolerance: float, minutes: float
) -> RecordedWord:
    with tempfile.TemporaryDirectory(prefix="pytest-accel-recorded-") as scratch:
        out = Path(scratch) / "ab"
        command = [
            sys.executable, "-m", "pytest_accel", "ab", "--base", commit, "--out", str(out), "--no-operators",
            "--tolerance", f"{tolerance}", "--max-minutes", f"{minutes:g}",
            "--", test, *settings.arguments(baselines=False),
        ]  # fmt: skip
        log = Path(scratch) / "output.log"
        try:
            with log.open("w", encoding="utf-8") as sink:
                ran = run_child(command, rootdir, os.environ, sink, timeout=minutes * 60 + _GRACE_SECONDS)
        except OSError as error:
            return RecordedWord(commit, f"the sitting did not start: {error}")
        if ran.timed_out:
            return RecordedWord(commit, f"the sitting did not finish in {minutes:g} minutes")
        try:
            comparison = load_comparison(out)
        except ComparisonError as error:
            return RecordedWord(commit, f"the sitting wrote an unreadable answer: {error}")
        if comparison is None:
            tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-2:]
            return RecordedWord(commit, f"the sitting wrote no answer (exit {ran.returncode}): {' '.join(tail)}")
        return word_from_comparison(comparison, test, metric, commit)
