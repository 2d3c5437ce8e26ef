"""The time and memory verdicts as reports keep them, and the confirmation rule.

The rules that judge one measurement against its baseline live in ``judgement/rules/`` (one module
each, folded by ``judge_time``); here: ``combine``, by which a regression (or an improvement) stands
only if every re-measurement confirms it, and what a report keeps of one measurement's verdicts
(``VerdictRecord``, with the recorded build's sitting ``BesideRecorded``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, final

from pytest_accel.core import wording
from pytest_accel.core.outcomes import Outcome, Verdict
from pytest_accel.core.stats import median
from pytest_accel.core.wording import RECORD
from pytest_accel.judgement.policy import VerdictPolicy
from pytest_accel.judgement.rules import judge_memory, judge_time
from pytest_accel.judgement.rules.case import Observation, pooled_run_spread
from pytest_accel.judgement.rules.count import CountVerdict
from pytest_accel.judgement.sight import detectable_slowdown
from pytest_accel.judgement.structures import StructureVerdict

__all__ = [
    "RECORD",
    "BesideRecorded",
    "Observation",
    "Outcome",
    "VerdictPolicy",
    "VerdictRecord",
    "combine",
    "detectable_slowdown",
    "judge_memory",
    "judge_time",
    "pooled_run_spread",
]


@final
@dataclass(frozen=True)
class BesideRecorded:
    """What a sitting of a figure's recorded build beside this tree said (judgement/recorded_build.py), as reports
    keep it; ``said`` None: no word (no sitting was held, or it gave no answer), ``detail`` says why."""

    commit: str  # the recorded build's commit; empty when the baseline names none that can be checked out
    said: Outcome | None  # this tree against the recorded build, measured in one sitting
    detail: str  # the sitting's figures, or why it gave no word
    minutes: float = 0.0  # what the sitting took

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as stored under each verdict's ``beside_recorded``."""
        said = None if self.said is None else self.said.value
        return {"commit": self.commit, "said": said, "detail": self.detail, "minutes": round(self.minutes, 2)}

    @classmethod
    def from_dict(cls, data: object) -> BesideRecorded:
        """Inverse of ``to_dict``; raises ``ValueError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"beside_recorded: expected an object, got {type(data).__name__}")
        commit, said, detail, minutes = (data.get(key) for key in ("commit", "said", "detail", "minutes"))
        if not isinstance(commit, str) or not isinstance(detail, str):
            raise ValueError("beside_recorded: 'commit' and 'detail' must be strings")
        if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not minutes >= 0:
            raise ValueError(f"beside_recorded: 'minutes' must be a number >= 0, got {minutes!r}")
        try:
            outcome = None if said is None else Outcome(said)
        except ValueError:
            raise ValueError(f"beside_recorded: unknown 'said' {said!r}") from None
        return cls(commit, outcome, detail, float(minutes))


@final
@dataclass(frozen=True)
class VerdictRecord:
    """One measurement's verdict as reports see it: time, memory (when known), re-measurements taken,
    for a confirmed regression the lines that say which operators changed (core/operator_table.py), and
    the structural verdict (judgement/structures.py) when a record was taken."""

    time: Verdict
    memory: Verdict | None = None
    remeasurements: int = 0
    operators: tuple[str, ...] = ()
    structure: StructureVerdict | None = None
    beside_recorded: BesideRecorded | None = None  # the recorded build's sitting, when a suspect asked for one
    count: CountVerdict | None = None  # the work counted under callgrind (--accel-count), when it was asked for
    energy: Verdict | None = None  # energy per item (judgement/energy.py), where it and its recording were read

    @property
    def _beside_read_the_same(self) -> bool:
        """Read slower than its stored figure, and its recorded build, measured beside it, read the same (or slower)."""
        said = None if self.beside_recorded is None else self.beside_recorded.said
        return self.time.outcome is Outcome.UNCHANGED and said in (Outcome.UNCHANGED, Outcome.IMPROVED)

    @property
    def ran_other(self) -> bool:
        """Other operators ran than at the recordings (the structural record changed, enforced or not)."""
        return self.structure is not None and self.structure.outcome is Outcome.CHANGED

    @property
    def host_moved(self) -> bool:
        """Read slower than its stored figure and passed: its recorded build, measured beside it, read the same
        (or slower), and the same operators ran. Not the code: the host moved since the recordings (a sitting is
        held only in their environment)."""
        return self._beside_read_the_same and not self.ran_other

    @property
    def environment_moved(self) -> bool:
        """Read slower than its stored figure, its recorded build beside it the same, yet other operators ran: not
        the host (a host does not change what runs) but the environment, which the sitting carried on both sides
        (a variable or a plugin the environment's fingerprint does not name): a regression, never "not the code"."""
        return self._beside_read_the_same and self.ran_other

    @property
    def outcome(self) -> Outcome:
        """The worst outcome: a memory regression, a structural change that fails, or a slowdown the environment
        carried into both builds of its sitting (``environment_moved``) counts like a time regression."""
        if self.environment_moved:
            return Outcome.REGRESSED
        if self.memory is not None and self.memory.outcome is Outcome.REGRESSED:
            return Outcome.REGRESSED
        if self.energy is not None and self.energy.outcome is Outcome.REGRESSED:
            return Outcome.REGRESSED
        if self.structure is not None and self.structure.fails:
            return Outcome.REGRESSED
        if self.count is not None and self.count.fails:
            return Outcome.REGRESSED
        return self.time.outcome

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as stored in ``--accel-json`` under each result's ``verdict``."""
        return {
            "outcome": self.outcome.value,
            "time": self.time.to_dict(),
            "memory": None if self.memory is None else self.memory.to_dict(),
            "remeasurements": self.remeasurements,
            "operators": list(self.operators),
            "structure": None if self.structure is None else self.structure.to_dict(),
            "beside_recorded": None if self.beside_recorded is None else self.beside_recorded.to_dict(),
            **({} if self.count is None else {"count": self.count.to_dict()}),
            **({} if self.energy is None else {"energy": self.energy.to_dict()}),
        }

    @classmethod
    def from_dict(cls, data: object) -> VerdictRecord:
        """Inverse of ``to_dict``; raises ``ValueError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"verdict: expected an object, got {type(data).__name__}")
        memory = data.get("memory")
        remeasurements = data.get("remeasurements", 0)
        if isinstance(remeasurements, bool) or not isinstance(remeasurements, int) or remeasurements < 0:
            raise ValueError(f"verdict: 'remeasurements' must be an integer >= 0, got {remeasurements!r}")
        operators = data.get("operators", [])
        if not isinstance(operators, list) or not all(isinstance(line, str) for line in operators):
            raise ValueError(f"verdict: 'operators' must be a list of strings, got {type(operators).__name__}")
        structure, beside, count = data.get("structure"), data.get("beside_recorded"), data.get("count")
        energy = data.get("energy")
        return cls(
            Verdict.from_dict(data.get("time"), "time"),
            None if memory is None else Verdict.from_dict(memory, "memory"),
            remeasurements,
            tuple(operators),
            None if structure is None else StructureVerdict.from_dict(structure),
            None if beside is None else BesideRecorded.from_dict(beside),
            None if count is None else CountVerdict.from_dict(count),
            None if energy is None else Verdict.from_dict(energy, "energy"),
        )


def combine(first: Verdict, confirmations: Sequence[Verdict]) -> Verdict:
    """A regression (or an improvement) stands only if every re-measurement confirms it; a confirmation that
    is noisy makes the whole noisy, one that disagrees decides."""
    if first.outcome not in (Outcome.REGRESSED, Outcome.IMPROVED) or not confirmations:
        return first
    if any(v.outcome is Outcome.NOISY for v in confirmations):
        noisy = next(v for v in confirmations if v.outcome is Outcome.NOISY)
        reason = wording.confirmation_noisy(first.reason, noisy.reason)
        return Verdict(
            Outcome.NOISY, first.metric, reason, ratio=first.ratio, abstention=noisy.abstention, rule=noisy.rule
        )
    if all(v.outcome is first.outcome for v in confirmations):
        ratios = [first.ratio or 1.0, *(v.ratio or 1.0 for v in confirmations)]
        return Verdict(
            first.outcome,
            first.metric,
            wording.confirmed(first.reason, ratios[1:]),
            ratio=median(ratios),
            low=first.low,
            high=first.high,
            p_value=first.p_value,
            normalized=first.normalized,
            detectable=first.detectable,
            ruled_out=first.ruled_out,
            remeasured=tuple(ratios[1:]),
            rule=first.rule,
        )
    last = confirmations[-1]
    return Verdict(
        last.outcome,
        first.metric,
        wording.not_confirmed(first.ratio or 1.0, last.reason),
        ratio=last.ratio,
        low=last.low,
        high=last.high,
        p_value=last.p_value,
        normalized=last.normalized,
        detectable=last.detectable,
        sight=last.sight,
        rule=last.rule,
    )
