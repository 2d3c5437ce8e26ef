"""Judge again every call ``rules_capture.py`` recorded, with the rules of the tree on ``sys.path``, and compare.

    PYTHONPATH=<tree> python docs/studies/rules-replay/replay.py CAPTURE...   (a capture may be gzipped: .gz)

A call's verdict is the same when every figure, word and cause a person or a file sees is the same:
``to_dict()`` (outcome, reason, ratio, interval, p, normalised, detectable, abstention, sight) less the
``rule`` it names, which the rules-as-data tree adds, and the failure's short forms (``ruled_out``,
``remeasured``). Prints one line per kind of call and each difference; exits 1 on any.
"""

from __future__ import annotations

import gzip
import pickle
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest_accel.judgement.verdict as verdict


def _seen(result: Any) -> Any:
    if result is None:
        return None
    said = result.to_dict()
    said.pop("rule", None)
    return said, tuple(result.ruled_out), tuple(result.remeasured)


def main(paths: list[str]) -> int:
    rules = {"judge_time": verdict.judge_time, "judge_memory": verdict.judge_memory, "combine": verdict.combine}
    counts: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    differ = 0
    for path in paths:
        data = Path(path).read_bytes()
        calls = pickle.loads(gzip.decompress(data) if path.endswith(".gz") else data)
        for name, args, before in calls:
            after = rules[name](*args)
            counts[name] += 1
            if before is not None:
                outcomes[f"{name} {before.outcome.value}"] += 1
            if _seen(before) != _seen(after):
                differ += 1
                print(f"DIFFERS ({path}, {name}):\n  before {_seen(before)}\n  after  {_seen(after)}")
    print(f"module: {verdict.__file__}")
    for name, count in sorted(counts.items()):
        print(f"{name}: {count} calls")
    for name, count in sorted(outcomes.items()):
        print(f"  {name}: {count}")
    print(f"{differ} of {sum(counts.values())} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
