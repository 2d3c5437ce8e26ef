"""ab's stopping rule, simulated: Bonferroni's equal shares against the calibrated constant level.

    python3 docs/studies/ab-looks/simulate.py            # about 3 minutes on a 2-core VM

Normal per-pair log ratios of SD 3%, 5%, 8% and 12% (the range of the PR selection's per-pair
spreads, docs/sensitivity.md); a build 10% slower and an unchanged one; 3,000 seeded sittings per
cell, the schedule 3, 4, 5, 7, 9, 12, ..., 40 pairs and the claim rule of
pytest_accel/judgement/paired.py (regressed: interval above 1 and estimate above 1.05).
"""

from __future__ import annotations

import math
import random
import statistics

from pytest_accel.core.stats import t_quantile
from pytest_accel.judgement.paired import calibrated_level, look_schedule

LOOKS = look_schedule(3, 40)
TOLERANCE = 0.05


def sittings(level: float, shift: float, sigma: float, count: int = 3000) -> tuple[float, int, int]:
    """(share called regressed, median pairs to a claim, 7/8 quantile of pairs; 99 = no claim)."""
    rng, decided, regressed = random.Random(2), [], 0
    limits = {n: t_quantile(1 - level / 2, n - 1) for n in LOOKS}
    for _ in range(count):
        ratios: list[float] = []
        for n in range(1, LOOKS[-1] + 1):
            ratios.append(rng.gauss(math.log1p(shift), sigma))
            if n not in limits:
                continue
            mean, half = statistics.fmean(ratios), limits[n] * statistics.stdev(ratios) / math.sqrt(n)
            low, high, ratio = math.exp(mean - half), math.exp(mean + half), math.exp(mean)
            if low > 1 and ratio > 1 + TOLERANCE:
                regressed += 1
                decided.append(n)
                break
            if (high < 1 and ratio < 1 / (1 + TOLERANCE)) or (low >= 1 / (1 + TOLERANCE) and high <= 1 + TOLERANCE):
                decided.append(n)
                break
        else:
            decided.append(99)
    decided.sort()
    return regressed / count, decided[len(decided) // 2], decided[int(len(decided) * 0.875)]


def main() -> None:
    rules = {
        "Bonferroni, alpha 0.05": 0.05 / len(LOOKS),
        "Bonferroni, alpha 0.02": 0.02 / len(LOOKS),
        "calibrated, alpha 0.02 (ab)": calibrated_level(LOOKS, 0.02),
    }
    print(
        "| per-pair SD | rule | per-look level | 10% slower: regressed | median pairs"
        " | 7/8 of sittings by | A/A: regressed |"
    )
    print("|---|---|---|---|---|---|---|")
    for sigma in (0.03, 0.05, 0.08, 0.12):
        for name, level in rules.items():
            caught, median, late = sittings(level, 0.10, sigma)
            false, _, _ = sittings(level, 0.0, sigma)
            print(f"| {sigma:.0%} | {name} | {level:.4f} | {caught:.1%} | {median} | {late} | {false:.2%} |")


if __name__ == "__main__":
    main()
