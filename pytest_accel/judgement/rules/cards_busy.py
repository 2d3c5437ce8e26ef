"""The time verdict beside the run's other cards: a figure measured in a regime its recordings never saw.

Spread over a node's cards (xdist, one card a worker), a figure is measured while other cards run their own
tests, sharing the node's host CPU, PCIe switches and power. Each figure keeps its regime (engine/board.py): how
many other cards its run had (``OTHER_CARDS``) and how many of them were measuring, on average, over its rounds
(``BUSY_CARDS``). A figure is judged against recordings of its regime:

- recordings taken in a run of as many cards (the same ``-n``): how much the cards overlapped varies from run to
  run with the tests' order and length, and the recordings' spread holds it (they are the calibration of that
  regime);
- or recordings that saw as many busy cards, from the fewest to the most, widened by ``CARDS_MARGIN`` either way
  (a figure measured alone at the tail of an ``-n 8`` run is a figure measured alone).

Any other figure is not judged, whichever way it reads: beside more busy cards than recorded it can read slower
than the code is; beside fewer, faster, hiding a slowdown. Recordings made before the regime was kept do not say:
a figure measured alone (``CARDS_MARGIN`` or fewer busy) is judged against them as before, one beside busy cards is
not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_accel.core import wording
from pytest_accel.core.measurement import BUSY_CARDS, OTHER_CARDS
from pytest_accel.core.outcomes import Abstention, Cause, Outcome, Rule, Verdict
from pytest_accel.judgement.rules.case import Case, Reading

__all__ = ["CARDS_MARGIN", "Regime", "check", "uncovered"]

# Half a card: a sibling that measured through half of this figure's rounds, or one more or fewer busy through
# half of them, is the regime the recordings saw.
CARDS_MARGIN = 0.5


@dataclass(frozen=True)
class Regime:
    """Now's regime, outside its recordings': ``busy`` of ``others`` cards; the recordings saw ``low`` to
    ``high`` busy (None: none of them says)."""

    busy: float
    others: int
    low: float | None
    high: float | None


def uncovered(now: Mapping[str, float], recorded: Sequence[Mapping[str, float]]) -> Regime | None:
    """Now's regime where the recordings cover it not (see the module); None where they do, or now's figure
    does not say what was beside it (a result file written before the regime was kept)."""
    busy = now.get(BUSY_CARDS)
    if busy is None:
        return None
    others = int(now.get(OTHER_CARDS, 0))
    kept = [state for state in recorded if BUSY_CARDS in state]
    if others > 0 and any(int(state.get(OTHER_CARDS, 0)) == others for state in kept):
        return None
    if not kept:
        return None if busy <= CARDS_MARGIN else Regime(busy, others, None, None)
    low, high = min(s[BUSY_CARDS] for s in kept), max(s[BUSY_CARDS] for s in kept)
    return None if low - CARDS_MARGIN <= busy <= high + CARDS_MARGIN else Regime(busy, others, low, high)


def check(case: Case, reading: Reading) -> Verdict | Reading:
    regime = uncovered(case.current.state, case.baseline.run_states)
    if regime is None:
        return reading
    short = wording.cards_busy_short(regime.busy, regime.low, regime.high)
    abstention = Abstention(short, wording.REMEDY[Cause.CARDS_BUSY], cause=Cause.CARDS_BUSY)
    reason = wording.cards_busy(case.ratio, regime.busy, regime.others, regime.low, regime.high)
    return Verdict(
        Outcome.NOISY, "time", reason, ratio=case.ratio, normalized=case.normalized, abstention=abstention,
        rule=Rule.CARDS,
    )  # fmt: skip
