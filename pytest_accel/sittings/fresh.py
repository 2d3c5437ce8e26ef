"""A fresh ``pytest`` confirming a suspected regression: the child runs only that test (after the test the
parent measured before it), with the parent's settings (``judgement.confirm.ChildSettings``), one reading,
no children of its own (``FRESH_PROCESS_ENV``); its word is read by ``judgement.confirm.fresh_verdict``."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pytest_accel.engine.processes import run_child
from pytest_accel.judgement.confirm import FRESH_PROCESS_ENV, ChildSettings, FreshVerdict, fresh_verdict
from pytest_accel.judgement.results import ResultsError, load_results

__all__ = ["CHILD_TIMEOUT_SECONDS", "confirm_in_fresh_process", "fresh_launcher"]

# A child that has not answered in this long is abandoned; the in-process verdict then stands.
CHILD_TIMEOUT_SECONDS = 900


def confirm_in_fresh_process(
    nodeid: str,
    metric: str,
    rootdir: Path,
    settings: ChildSettings,
    env: Mapping[str, str] | None = None,
    before: str | None = None,
    environment: str | None = None,
) -> FreshVerdict:
    """Run ``pytest <nodeid>`` with ``settings`` in a child and return its verdict for ``metric``; with
    ``before`` (the test the parent measured before it), that test first, its verdict not read: a test
    measured first in its process can sit at another level than where the recordings measured it.

    ``environment``: the parent's environment digest. A child that ran in another one (a plugin object given
    to ``pytest.main``, which no child inherits) measured other code: its reading confirms and refutes nothing.
    """
    with tempfile.TemporaryDirectory(prefix="pytest-accel-confirm-") as scratch:
        results = Path(scratch) / "results.json"
        tests = [nodeid] if before is None or before == nodeid else [before, nodeid]
        command = [
            sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
            "--accel-json", str(results), *settings.arguments(),
        ]  # fmt: skip
        child_env = {**(env if env is not None else os.environ), FRESH_PROCESS_ENV: "1"}
        log = Path(scratch) / "output.log"
        try:
            with log.open("w", encoding="utf-8") as sink:
                ran = run_child(command, rootdir, child_env, sink, timeout=CHILD_TIMEOUT_SECONDS)
        except OSError as error:
            return FreshVerdict(None, f"the confirmation process did not start: {error}")
        if ran.timed_out:
            return FreshVerdict(None, f"the confirmation process did not finish in {CHILD_TIMEOUT_SECONDS} s")
        if not results.exists():
            tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
            return FreshVerdict(None, f"the confirmation process wrote no results (exit {ran.returncode}): {tail}")
        try:
            read = load_results(results)
        except ResultsError as error:
            return FreshVerdict(None, f"the confirmation process wrote an unreadable result: {error}")
        return fresh_verdict(read, nodeid, metric, environment)


def fresh_launcher(
    nodeid: str, metric: str, rootdir: Path, settings: ChildSettings, before: str | None, environment: str | None
) -> FreshVerdict:
    """``confirm_in_fresh_process`` as the gate calls it (``judgement.gate.Launchers.fresh``)."""
    return confirm_in_fresh_process(nodeid, metric, rootdir, settings, before=before, environment=environment)
