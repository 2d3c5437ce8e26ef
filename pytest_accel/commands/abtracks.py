"""One test and metric over an ``ab`` sitting: each side's measurements, the pairs' log ratios, the verdict
(paired, or with ``--count`` the count rule's), and its peak memory judged as the gate judges it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_accel.core.measurement import Measurement
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.core.stats import median
from pytest_accel.judgement.paired import PairedVerdict
from pytest_accel.judgement.rules.count import CountVerdict
from pytest_accel.judgement.verdict import Observation, VerdictPolicy, judge_memory

__all__ = ["Key", "Track"]

Key = tuple[str, str]  # (test id, metric)


@dataclass
class Track:
    """One test and metric over the sitting."""

    key: Key
    base: list[Measurement] = field(default_factory=list)
    head: list[Measurement] = field(default_factory=list)
    log_ratios: list[float] = field(default_factory=list)
    verdict: PairedVerdict = field(default_factory=lambda: PairedVerdict(Outcome.PENDING, 0))
    operators: tuple[str, ...] = ()  # a regression's operator diff, base -> head (Sitting.explain)
    failed_on: str = ""  # the side ("base" or "head") whose run of this test failed; "" when none did
    count: CountVerdict | None = None  # ``--count``: the count rule's verdict, head against base

    @property
    def memory(self) -> Verdict | None:
        """Peak memory, head against base: the gate's rule on each side's median peak; None when unknown."""
        if not self.log_ratios:
            return None

        def peak(side: list[Measurement]) -> int | None:
            known = [m.peak_memory_bytes for m in side if m.peak_memory_bytes is not None]
            return round(median(known)) if known else None

        head, base = (
            Observation((), peak_memory_bytes=peak(self.head)),
            Observation((), peak_memory_bytes=peak(self.base)),
        )
        return judge_memory(head, base, VerdictPolicy())

    @property
    def regressed(self) -> bool:
        memory = self.memory
        return self.verdict.outcome is Outcome.REGRESSED or (memory is not None and memory.outcome is Outcome.REGRESSED)

    @staticmethod
    def figure(measurement: Measurement) -> float:
        """A process's figure: its median probe-normalised time per call."""
        return median(measurement.compared_samples)

    def to_dict(self) -> dict[str, Any]:
        def rates(side: list[Measurement]) -> float | None:
            return median([m.items_per_second for m in side]) if side else None

        unit = (self.base or self.head)[0].unit if (self.base or self.head) else ""
        return {
            "test": self.key[0],
            "metric": self.key[1],
            "unit": unit,
            **self.verdict.to_dict(),
            "base_items_per_second": rates(self.base),
            "head_items_per_second": rates(self.head),
            "base_figures": [self.figure(m) for m in self.base],
            "head_figures": [self.figure(m) for m in self.head],
            "log_ratios": self.log_ratios,
            "memory": None if self.memory is None else self.memory.to_dict(),
            "operators": list(self.operators),
            "count": None if self.count is None else self.count.to_dict(),
        }
