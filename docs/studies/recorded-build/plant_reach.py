"""The raw seconds per call of plant_reach.sh's plain and planted processes, per test (medians of rounds)."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(out: Path) -> None:
    seconds: dict[str, dict[str, list[float]]] = {}
    for path in sorted(out.glob("*-[0-9].json")):
        case = path.stem.rsplit("-", 1)[0]
        for row in json.loads(path.read_text())["results"]:
            if row["samples"]:
                test = row["test"].split("::")[1]
                seconds.setdefault(test, {}).setdefault(case, []).append(statistics.median(row["samples"]))
    for test, cases in seconds.items():
        plain, planted = cases.get("plain", []), cases.get("planted", [])
        if plain and planted:
            moved = statistics.median(planted) / statistics.median(plain) - 1
            shown = " ".join(f"{s * 1e3:.2f}" for s in plain), " ".join(f"{s * 1e3:.2f}" for s in planted)
            print(f"{test:45s} plain {shown[0]} ms; planted {shown[1]} ms: {moved:+.1%}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
