"""Each result file's math SDPA decode figure: its median call, that median over the reference
kernel's (the figure the gate compares), the share of its time its own page faults took, its rounds.

Usage: python docs/studies/first-in-process/levels.py docs/studies/first-in-process/raw/*.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

TEST = "sdpa-math-llama70b-decode-kv384"

for name in sys.argv[1:]:
    for result in json.loads(Path(name).read_text())["results"]:
        if TEST in result["test"] and "forward_backward" not in result["test"]:
            call = statistics.median(result["samples"])
            level = call / statistics.median(result["probe_samples"])
            faults = result["state"].get("fault_share", 0.0)
            print(
                f"{Path(name).name:18} {call * 1e3:5.2f} ms  {level:5.2f}x  faults {faults * 100:4.1f}%  "
                f"{len(result['samples'])} rounds"
            )
