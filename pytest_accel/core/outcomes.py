"""The one vocabulary of outcomes: what the gate, the structural verdict and ``ab`` may conclude.

Each kind of verdict uses a part of it, named here (``TIME``, ``STRUCTURE``, ``PAIRED``), so a word
means one thing wherever a person reads it: ``regressed`` is always slower beyond the tolerance
and significant, ``new`` always "nothing to compare with". Pure: no torch, no pytest.
"""

from __future__ import annotations

import enum

__all__ = ["PAIRED", "STRUCTURE", "TIME", "Outcome", "outcome_of"]


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
