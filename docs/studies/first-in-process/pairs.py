"""Every fresh-process confirmation in the studies' raw logs, weighed by the gate's ``apart``: the
suspect's figure in its run against the fresh process's, and which of them are too far apart for one
level. A confirmation shows in a log as a "perf regressed" line, one line after it, and a "believed"
line that ends with "a fresh process (+8.9% [+2.3% .. +15.9%])"; the same pair copied into several
files counts once.

Usage (from the repository root): python docs/studies/first-in-process/pairs.py docs/studies
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.judgement.weighing import apart

_FIGURE = r"([+-][\d.]+)% \[([+-][\d.]+)% \.\. ([+-][\d.]+)%\]"
_PAIR = re.compile(rf"perf regressed: (\S+): time {_FIGURE}\n[^\n]*\n  believed: [^\n]*a fresh process \({_FIGURE}\)")


def _verdict(change: str, low: str, high: str) -> Verdict:
    def ratio(percent: str) -> float:
        return 1 + float(percent) / 100

    return Verdict(Outcome.REGRESSED, "time", "", ratio(change), ratio(low), ratio(high))


seen: set[tuple[str, ...]] = set()
far = 0
for path in sorted(Path(sys.argv[1]).rglob("*")):
    if not path.is_file() or path.suffix not in (".log", ".txt"):
        continue
    for match in _PAIR.finditer(path.read_text(errors="replace")):
        test, *figures = match.groups()
        if (test, *figures) in seen:
            continue
        seen.add((test, *figures))
        if apart(_verdict(*figures[:3]), _verdict(*figures[3:])):
            far += 1
            print(f"apart: {path}: {test}: {figures[0]}% here, {figures[3]}% in the fresh process")
print(f"{far} of {len(seen)} confirmations apart")
