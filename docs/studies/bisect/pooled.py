"""What a step's tries would have read as one sequential test: each step that took more than one sitting
in the raw answers, its sittings' pairs pooled.

    python docs/studies/bisect/pooled.py docs/studies/bisect/raw/none-7.json ...

The raw answers keep each sitting's ratio, interval and pairs, not its pairs' log ratios: each
sitting's spread is backed out of its interval (the t quantile at its schedule's calibrated level,
20, 40 and 80 pairs at the defaults), the pooled spread is the within-sitting and between-sitting
spread together, and the interval is taken at the level of the pooled schedule (3 .. 140 pairs).
An estimate of the pooled reading, not a replay of its looks.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from pytest_accel.core.stats import t_quantile
from pytest_accel.judgement.paired import calibrated_level, look_schedule

ALPHA, FIRST, TRIES = 0.02, 20, 3


def spread(ratio: float, low: float, high: float, pairs: int, max_pairs: int) -> float:
    """The SD of a sitting's log ratios, from its interval at its schedule's level."""
    level = calibrated_level(look_schedule(3, max_pairs), ALPHA)
    half = (math.log(high) - math.log(low)) / 2
    return half * math.sqrt(pairs) / t_quantile(1 - level / 2, pairs - 1)


def main(paths: list[str]) -> None:
    pooled_level = calibrated_level(look_schedule(3, FIRST * (2**TRIES - 1)), ALPHA)
    print("answer | step | commit | test | pairs per sitting | last sitting | pooled: ratio [low .. high], SD")
    for path in paths:
        answer = json.loads(Path(path).read_text(encoding="utf-8"))
        steps: dict[tuple[str, str, str, str], list[dict]] = {}
        for sitting in answer["sittings"]:
            for test, reading in sitting["tests"].items():
                if reading["ratio"] is not None and reading["pairs"] >= 2:
                    steps.setdefault((sitting["kind"], sitting["base"], sitting["head"], test), []).append(reading)
        for (kind, _, head, test), readings in steps.items():
            if len(readings) < 2 or kind == "culprit":
                continue
            counts = [r["pairs"] for r in readings]
            caps = [FIRST * 2**i for i in range(len(readings))]
            sds = [
                spread(r["ratio"], r["low"], r["high"], r["pairs"], cap) for r, cap in zip(readings, caps, strict=True)
            ]
            logs = [math.log(r["ratio"]) for r in readings]
            total = sum(counts)
            mean = sum(n * x for n, x in zip(counts, logs, strict=True)) / total
            within = sum((n - 1) * s * s for n, s in zip(counts, sds, strict=True))
            between = sum(n * (x - mean) ** 2 for n, x in zip(counts, logs, strict=True))
            sd = math.sqrt((within + between) / (total - 1))
            half = t_quantile(1 - pooled_level / 2, total - 1) * sd / math.sqrt(total)
            last = readings[-1]
            print(
                f"{path.rsplit('/', 1)[-1]} | {kind} | {head[:7]} | {test.split('[')[-1].rstrip(']')} | {counts} | "
                f"{last['outcome']} {last['ratio']:.3f} [{last['low']:.3f} .. {last['high']:.3f}] | "
                f"{math.exp(mean):.3f} [{math.exp(mean - half):.3f} .. {math.exp(mean + half):.3f}], {sd:.3f}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
