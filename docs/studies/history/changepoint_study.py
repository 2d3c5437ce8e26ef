"""Which change-point detector should ``pytest-accel history`` use? Synthetic nights with planted shifts.

    python docs/studies/history/changepoint_study.py --histories 200 --out docs/studies/history/changepoints-raw.json

Each history is one figure's nightly value (time per call, relative): a level of 1.0, per-night noise
drawn log-normal with a coefficient of variation between 2% and 4% (this project's nights: the
spread of one figure's nightly median), and slow outlier nights (2 in 100 on average, 15-50% slower:
a neighbour on the runner, a throttled card). A planted shift makes every night from SHIFT_NIGHT on
slower by 5%, 10% or 25%.

Detection is replayed as the nightly sees it: after each night from the shift on, the detector reads
the history so far; the delay is the number of nights after the shift until a change point is reported
within NEAR nights of it (night 0: the first slow night itself). Not found within HORIZON nights: missed.
False change points, per 100 nights: every change point of a shift-free history of 100 nights, and
(shifted rows) every change point further than NEAR from the planted one in a shifted history read
whole: there a change point three nights off the planted one counts as false. Seeded: the same
command prints the same table. About 10 s of CPU for 200 histories.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from changepoints import DETECTORS  # this folder: the two detectors compared

SHIFT_NIGHT = 40  # nights of history before the shift: a nightly that has run for six weeks
HORIZON = 20  # nights after the shift the replay waits for a detection
NEAR = 2  # a change point within this many nights of the planted one counts as finding it
SHIFTS = (0.05, 0.10, 0.25)
FREE_NIGHTS = 100  # length of the shift-free histories
OUTLIER_RATE = 0.02  # share of nights with a slow outlier
OUTLIER_RANGE = (0.15, 0.50)  # how much slower an outlier night is
CV_RANGE = (0.02, 0.04)  # per-night coefficient of variation, drawn per history


def history(rng: random.Random, nights: int, shift: float, outlier_rate: float) -> list[float]:
    """One figure's nightly values: noise, outliers, and a shift from SHIFT_NIGHT on (none when 0)."""
    cv = rng.uniform(*CV_RANGE)
    sigma = math.sqrt(math.log(1 + cv * cv))  # log-normal with that coefficient of variation
    values = []
    for night in range(nights):
        level = 1.0 + (shift if shift and night >= SHIFT_NIGHT else 0.0)
        value = level * math.exp(rng.gauss(-sigma * sigma / 2, sigma))
        if rng.random() < outlier_rate:
            value *= 1 + rng.uniform(*OUTLIER_RANGE)
        values.append(value)
    return values


def replay(detector: str, values: Sequence[float], tolerance: float) -> tuple[int | None, int]:
    """(delay in nights or None when missed, false change points in the last replay)."""
    detect = DETECTORS[detector]
    delay = None
    for last in range(SHIFT_NIGHT, SHIFT_NIGHT + HORIZON):
        found = detect(values[: last + 1], tolerance)
        if any(abs(c.index - SHIFT_NIGHT) <= NEAR for c in found):
            delay = last - SHIFT_NIGHT
            break
    final = detect(values, tolerance)
    return delay, sum(abs(c.index - SHIFT_NIGHT) > NEAR for c in final)


def study(histories: int, seed: int, tolerance: float, outlier_rate: float) -> dict[str, object]:
    """Every detector on the same seeded histories: delays, detections and false change points."""
    rows: list[dict[str, object]] = []
    for detector in DETECTORS:
        started = time.process_time()
        for shift in SHIFTS:
            rng = random.Random(f"{seed}-{shift}")
            outcomes = [
                replay(detector, history(rng, SHIFT_NIGHT + HORIZON, shift, outlier_rate), tolerance)
                for _ in range(histories)
            ]
            delays = [d for d, _ in outcomes if d is not None]
            rows.append(
                {"detector": detector, "shift": shift, "histories": histories, "detected": len(delays),
                 "median_delay": statistics.median(delays) if delays else None,
                 "delays": delays, "false_in_shifted": sum(f for _, f in outcomes)}
            )  # fmt: skip
        rng = random.Random(f"{seed}-free")
        false = [
            len(DETECTORS[detector](history(rng, FREE_NIGHTS, 0.0, outlier_rate), tolerance)) for _ in range(histories)
        ]
        rows.append(
            {"detector": detector, "shift": 0.0, "histories": histories, "nights": FREE_NIGHTS * histories,
             "false": sum(false), "false_per_100_nights": 100 * sum(false) / (FREE_NIGHTS * histories),
             "cpu_seconds": time.process_time() - started}
        )  # fmt: skip
    return {"seed": seed, "tolerance": tolerance, "outlier_rate": outlier_rate, "rows": rows}


def table(result: dict[str, object]) -> str:
    """The Markdown table of the README: a row per detector and shift (none: the shift-free histories)."""
    lines = [
        "| detector | planted shift | detected within 20 nights | median delay (nights) | false CPs / 100 nights |",
        "|---|---|---|---|---|",
    ]
    rows = result["rows"]
    assert isinstance(rows, list)
    for r in rows:
        if r["shift"] == 0.0:
            lines.append(f"| {r['detector']} | none | - | - | {r['false_per_100_nights']:.2f} |")
            continue
        delay = "-" if r["median_delay"] is None else f"{r['median_delay']:g}"
        false = 100 * r["false_in_shifted"] / (r["histories"] * (SHIFT_NIGHT + HORIZON))
        lines.append(
            f"| {r['detector']} | +{r['shift']:.0%} | {r['detected']}/{r['histories']} | {delay} | {false:.2f} |"
        )
    seconds = ", ".join(f"{r['detector']} {r['cpu_seconds']:.1f} s" for r in rows if r["shift"] == 0.0)
    return "\n".join(lines) + f"\n\nCPU time per detector (every replay): {seconds}"


def main() -> None:
    """Run the study, print the table, keep the raw rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=200, help="histories per shift size and detector (200)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tolerance", type=float, default=0.05, help="the history command's default (0.05)")
    parser.add_argument("--outlier-rate", type=float, default=OUTLIER_RATE, help="share of outlier nights (0.02)")
    parser.add_argument("--out", type=Path, help="write the raw rows here (JSON)")
    options = parser.parse_args()
    result = study(options.histories, options.seed, options.tolerance, options.outlier_rate)
    print(table(result))
    if options.out is not None:
        options.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
