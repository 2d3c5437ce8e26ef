"""Two constructed result files from a real CPU run: the same tests on devices that did not run, their key
renamed ("constructed-gpu", "constructed-gaudi"), every figure's time divided by a factor, an energy window and a
price made from stated figures. For the report's cost table only: nothing here was measured on such a device."""

from __future__ import annotations

import json
import sys
from pathlib import Path

# (key, speed-up over the CPU run, watts, price per hour): stated, not measured
CONSTRUCTED = (("constructed-gpu", 40.0, 400.0, 4.00), ("constructed-gaudi", 30.0, 300.0, 3.00))


def main() -> None:
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    for key, speedup, watts, price in CONSTRUCTED:
        document = json.loads(source.read_text())
        document["device"]["key"] = key
        for entry in document["results"]:
            entry["device_key"] = key
            entry["samples"] = [s / speedup for s in entry["samples"]]
            entry["probe_samples"] = []
            rate = entry["items_per_call"] / sorted(entry["samples"])[len(entry["samples"]) // 2]
            items = rate * 1.0  # a 1 s window
            energy = {"meter": "constructed", "joules": watts, "seconds": 1.0, "items": items, "not_measured": None}
            cost = {"price_per_hour": price, "items_per_dollar": rate * 3600 / price,
                    "dollars_per_million_items": price / 3600 / rate * 1e6, "energy_dollars_per_million_items": None}
            entry["extra"] = {**entry["extra"], "energy": energy, "cost": cost}
            entry.pop("figures", None)
            entry["verdict"] = None
        (out / f"{key}.json").write_text(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
