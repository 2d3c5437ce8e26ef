"""The one vocabulary of outcomes: what the gate, the structural verdict and ``ab`` may conclude.

Each kind of verdict uses a part of it, named here (``TIME``, ``STRUCTURE``, ``PAIRED``), so a word
means one thing wherever a person reads it: ``regressed`` is always slower beyond the tolerance
and significant, ``new`` always "nothing to compare with". ``Verdict`` is one time or memory
conclusion with its figures; an abstention (noisy, new) carries the rule that abstained in a few
words and what would let it be judged (``Abstention``). Pure: no torch, no pytest.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, final

__all__ = ["PAIRED", "STRUCTURE", "TIME", "Abstention", "Cause", "Outcome", "Rule", "Sight", "Verdict", "outcome_of"]


class Outcome(enum.Enum):
    """What a comparison concluded."""

    REGRESSED = "regressed"  # slower (or fatter) beyond the tolerance, and significant
    IMPROVED = "improved"  # faster beyond the tolerance, and significant
    UNCHANGED = "unchanged"  # neither (time, memory, ab), or the same counts (structure)
    NOISY = "noisy"  # too unsteady to judge: an abstention, not a pass
    NEW = "new"  # nothing comparable to judge against (no baseline, no record, only ab's head)
    CHANGED = "changed"  # a different set of operations ran (structure: counts, no noise)
    INCONCLUSIVE = "inconclusive"  # ab: the last look made no claim
    PENDING = "pending"  # ab: no claim yet, more pairs to come
    GONE = "gone"  # ab: only the base measured it
    ERROR = "error"  # ab: a side could not measure it (its test failed or errored)


# The outcomes of each kind of verdict; PAIRED in the order ab's table lists them.
TIME = (Outcome.REGRESSED, Outcome.IMPROVED, Outcome.UNCHANGED, Outcome.NOISY, Outcome.NEW)
STRUCTURE = (Outcome.CHANGED, Outcome.UNCHANGED, Outcome.NEW)
PAIRED = (
    Outcome.REGRESSED, Outcome.IMPROVED, Outcome.UNCHANGED, Outcome.INCONCLUSIVE, Outcome.PENDING,
    Outcome.NEW, Outcome.GONE, Outcome.ERROR,
)  # fmt: skip


def outcome_of(value: object, kind: tuple[Outcome, ...], what: str) -> Outcome:
    """The outcome a file names, when it is one of ``kind``; ``ValueError`` naming ``what`` otherwise."""
    for outcome in kind:
        if outcome.value == value:
            return outcome
    raise ValueError(f"{what}: unknown outcome {value!r}")


class Rule(enum.Enum):
    """Which rule of the time and memory verdicts decided (judgement/rules/, in the order they are folded)."""

    SAMPLES = "samples"  # nothing to compare, or the state probes could not run
    UNSTEADY = "unsteady"  # the rounds spread too far
    PROBE_DRIFT = "probe-drift"  # the reference kernel ran at another speed
    STATE = "state"  # the machine's state could explain the reading
    NEIGHBOUR = "neighbour"  # another process on the host could explain it
    CARDS = "cards"  # the run's other cards measured beside it in a regime its recordings never saw
    INTERVAL = "interval"  # the ratio's interval against the tolerance
    MEMORY = "memory"  # peak memory against its tolerance
    ENERGY = "energy"  # energy per item against its tolerance, in every window read (judgement/energy.py)
    COUNT = "count"  # the work counted under callgrind against its recordings (a verdict of its own)


class Cause(enum.Enum):
    """Which rule abstained: what the summary groups by and what code tests, never the words."""

    NO_BASELINE = "no-baseline"  # nothing recorded for this figure on this device and profile
    NOT_COMPARED = "not-compared"  # its baseline was recorded in another configuration
    # The run's setup differs from its baseline's in what the user can restore (host allocator, huge pages,
    # threads): a broken gate, which fails its test unless the run allows it (--accel-allow-setup-mismatch).
    SETUP = "setup"
    NO_SAMPLES = "no-samples"
    UNSTEADY = "unsteady"  # the rounds spread too much
    PROBE_DRIFT = "probe-drift"  # the reference kernel ran at another speed than when recorded
    STATE = "state"  # the machine's state could explain the slowdown
    STATE_UNPROBED = "state-unprobed"  # the state probes could not run
    NEIGHBOUR = "neighbour"  # a neighbour could explain the slowdown
    UNCALIBRATED = "uncalibrated"  # a neighbour the baselines were never calibrated beside
    CARDS_BUSY = "cards-busy"  # as many of the run's other cards measuring beside it as no recording saw
    THROTTLED = "throttled"  # the device's clock dropped during the rounds
    REMEASUREMENT = "remeasurement"  # a re-measurement could not tell
    FRESH_PROCESS = "fresh-process"  # a fresh process could not tell, said the opposite, or read too far away
    BIASED_PROCESS = "biased-process"  # earlier suspects of this process were refuted by fresh ones
    RECORDED_BUILD = "recorded-build"  # beside the recorded build, the sitting could not tell
    UNNAMED = "unnamed"  # read from a file written before causes were kept


class Sight(enum.Enum):
    """What limits a verdict's sight when its interval, not the tolerance, sets it (judgement/sight.py): the
    summary counts verdicts by it. Its value is how a summary and a result file say it."""

    RECORDINGS = "its recordings' spread"
    NIGHTS = "its drift between nights"
    TYPICAL = "the file's typical spread"
    FLOOR = "the assumed spread between processes"
    ROUNDS = "this run's rounds"
    STATE = "the machine's state"
    HIDDEN = "what a neighbour could hide"  # what a calibrated neighbour could hide


@final
@dataclass(frozen=True)
class Abstention:
    """Why a figure was not judged: its rule (``cause``), in a few words (``a neighbour at 51% of the host``),
    and what would let it be judged (``calibrate beside a neighbour: --accel-calibrate``)."""

    why: str
    remedy: str
    waits: bool = False  # the cause may pass (a neighbour, the machine's state): worth measuring again later
    cause: Cause = field(kw_only=True)

    @property
    def setup(self) -> bool:
        """The run's setup differs from its baseline's: fails unless the run allows it."""
        return self.cause is Cause.SETUP


@final
@dataclass(frozen=True)
class Verdict:
    """A conclusion with its figures and one sentence that explains it."""

    outcome: Outcome
    metric: str  # "time" or "memory"
    reason: str
    ratio: float | None = None  # now / baseline (time or bytes): > 1 is slower or fatter
    low: float | None = None  # confidence interval of the ratio
    high: float | None = None
    p_value: float | None = None  # Mann-Whitney, two-sided
    normalized: bool = False  # whether the time ratio was taken on probe-normalised samples
    detectable: float | None = None  # the smallest slowdown (fraction) this comparison could have called
    # The failure's short form (files keep ``reason``): what could have explained a regression and did not,
    ruled_out: tuple[str, ...] = field(default=(), compare=False)  # "the machine's state (up to 13%)"
    remeasured: tuple[float, ...] = field(default=(), compare=False)  # ... and the confirming re-measurements' ratios
    # A noisy or new verdict's short form, for the summary (files keep it beside ``reason``).
    abstention: Abstention | None = field(default=None, compare=False)
    # What limits ``detectable`` when the interval rather than the tolerance sets it, in a few words
    # ("its recordings' spread"): the summary counts them (judgement/sight.py).
    sight: Sight | None = field(default=None, compare=False)
    rule: Rule | None = field(default=None, compare=False)  # which rule decided; None: a gate's own step

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (result files, test reports)."""
        return {
            "outcome": self.outcome.value,
            "reason": self.reason,
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "p_value": self.p_value,
            "normalized": self.normalized,
            "detectable": self.detectable,
            **({} if self.abstention is None else {"abstention": _abstention_json(self.abstention)}),
            **({} if self.sight is None else {"sight": self.sight.value}),
            **({} if self.rule is None else {"rule": self.rule.value}),
        }

    @classmethod
    def from_dict(cls, data: object, metric: str) -> Verdict:
        """Inverse of ``to_dict``; raises ``ValueError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{metric} verdict: expected an object, got {type(data).__name__}")
        outcome = outcome_of(data.get("outcome"), TIME, f"{metric} verdict")
        reason = data.get("reason", "")
        if not isinstance(reason, str):
            raise ValueError(f"{metric} verdict: 'reason' must be a string")
        ratio, low, high, p_value, detectable = (
            _optional_number(data.get(name), f"{metric} verdict: {name!r}") for name in _FIGURES
        )
        normalized = data.get("normalized") is True
        abstention = _abstention(data.get("abstention"), f"{metric} verdict: 'abstention'")
        said = data.get("sight")
        if said is not None and said not in _SIGHTS:
            raise ValueError(f"{metric} verdict: 'sight' must be one of {sorted(_SIGHTS)} or absent, got {said!r}")
        sight = None if said is None else _SIGHTS[said]
        named = data.get("rule")
        if named is not None and named not in _RULES:
            raise ValueError(f"{metric} verdict: 'rule' must be one of {sorted(_RULES)} or absent, got {named!r}")
        rule = None if named is None else _RULES[named]
        figures = (ratio, low, high, p_value, normalized, detectable)
        return cls(outcome, metric, reason, *figures, abstention=abstention, sight=sight, rule=rule)


_FIGURES = ("ratio", "low", "high", "p_value", "detectable")


def _abstention_json(abstention: Abstention) -> dict[str, Any]:
    """An abstention as result files keep it."""
    return {
        "why": abstention.why,
        "remedy": abstention.remedy,
        "waits": abstention.waits,
        "cause": abstention.cause.value,
    }


_CAUSES = {cause.value: cause for cause in Cause}
_SIGHTS = {sight.value: sight for sight in Sight}
_RULES = {rule.value: rule for rule in Rule}


def _abstention(value: object, where: str) -> Abstention | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(value.get(k), str) for k in ("why", "remedy")):
        raise ValueError(f"{where} must be an object with the strings 'why' and 'remedy', got {value!r}")
    named = value.get("cause")
    if named is not None and named not in _CAUSES:
        raise ValueError(f"{where}['cause']: unknown cause {named!r}")
    # Files written before causes were kept said only whether the setup differed.
    cause = _CAUSES[named] if named is not None else Cause.SETUP if value.get("setup") is True else Cause.UNNAMED
    return Abstention(value["why"], value["remedy"], value.get("waits") is True, cause=cause)


def _optional_number(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{where} must be a finite number or null, got {value!r}")
    return float(value)
