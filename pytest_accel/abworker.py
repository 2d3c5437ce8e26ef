"""One side's pytest process for ``pytest-accel ab``, kept for a few runs of the selection.

``ab`` starts it as ``python -c <this file's source>`` in the side's folder and environment, so
that nothing of the installed pytest-accel is imported before the side's own copy (a base revision
of pytest-accel itself measures its own plugin). Standard library and pytest only.

Protocol, one JSON object per line: the parent writes ``{"args": [...], "log": PATH}`` on stdin;
the worker runs ``pytest.main(args)`` with its output (file descriptors 1 and 2, so child processes'
too) going to the log, and answers ``{"returncode": N}`` on its original stdout. End of stdin ends it.

A second ``pytest.main`` in one process re-collects (new config, new plugin manager) but imports
nothing again: process start, ``import torch`` and the test modules' imports are paid once per
worker, not once per run. ``ab`` starts a new worker every few pairs (``--reuse``).
"""

from __future__ import annotations

import json
import os
import sys


def _serve(requests: object, answers: object) -> int:
    import pytest

    for line in requests:  # type: ignore[attr-defined]
        if not line.strip():
            continue
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        with open(request["log"], "w", encoding="utf-8") as sink:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            try:
                code = int(pytest.main(list(request["args"])))
            except SystemExit as stop:  # pytest.exit() from a plugin or a test
                code = stop.code if isinstance(stop.code, int) else 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                os.close(saved[0])
                os.close(saved[1])
        answers.write(json.dumps({"returncode": code}) + "\n")  # type: ignore[attr-defined]
        answers.flush()  # type: ignore[attr-defined]
    return 0


def main() -> int:
    """Serve requests from stdin; answers go to a duplicate of the original stdout."""
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # between runs, a stray print goes where the worker's own words go, never into the answers
    return _serve(sys.stdin, answers)


if __name__ == "__main__":
    sys.exit(main())
