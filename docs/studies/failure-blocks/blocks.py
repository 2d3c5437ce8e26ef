"""The failure blocks of a pytest log: how many lines each has, and how wide they are.

A block runs from its headline (``perf regressed: ...``, ``perf structure changed: ...``) to its
accept command (``if intended, accept it: pytest ...``), which is one line so that it pastes and is
measured apart. Usage: ``python docs/studies/failure-blocks/blocks.py LOG``; prints a line per
block and a JSON summary last.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_HEADLINE = re.compile(r"^perf (regressed|noisy|no baseline|structure changed)")


def blocks(text: str) -> dict[str, list[str]]:
    """Each block by its headline (pytest's short summary may repeat one under CI=true: kept once)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        bare = re.sub(r"^E\s+", "", line)
        if _HEADLINE.match(bare):
            current = [bare]
        elif current is not None:
            current.append(bare)
            if "accept it: pytest" in bare:
                found.setdefault(current[0], current)
                current = None
    return found


def main() -> None:
    found = blocks(Path(sys.argv[1]).read_text())
    rows = []
    for headline, block in found.items():
        widest = max(len(line) for line in block[:-1])
        rows.append({"headline": headline, "lines": len(block), "widest": widest, "command": len(block[-1])})
        print(f"{len(block)} lines, widest {widest} (command {len(block[-1])}): {headline}")
    summary = {
        "blocks": len(rows),
        "max_lines": max((r["lines"] for r in rows), default=0),
        "max_width_without_command": max((r["widest"] for r in rows), default=0),
        "max_command": max((r["command"] for r in rows), default=0),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
