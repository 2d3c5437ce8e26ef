"""The run's other cards beside a figure: the board its workers keep (engine/board.py), and the verdict's rule
that judges a figure only against recordings of its regime (judgement/rules/cards_busy.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_accel.core.measurement import BUSY_CARDS, FOREIGN_CPU, OTHER_CARDS
from pytest_accel.core.outcomes import Cause, Outcome, Rule
from pytest_accel.engine.board import BOARD_ENV, Beside, CardBoard, busy_over, make_board
from pytest_accel.engine.cards import WORKER_CARD_ENV, WORKER_CPUS_ENV
from pytest_accel.judgement.rules.cards_busy import CARDS_MARGIN, uncovered
from pytest_accel.judgement.verdict import Observation, VerdictPolicy, judge_time


class Clock:
    """The monotonic clock every process of a node reads, set by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_card_reads_how_many_others_measured_over_its_own_window(tmp_path: Path) -> None:
    clock = Clock()
    board = make_board(3)
    a, b, c = (CardBoard(board, card, clock) for card in ("0", "1", "2"))
    assert a.others == 2
    a.begin()  # t=0: card 0 starts
    clock.now = 5.0
    b.begin()
    clock.now = 10.0
    assert b.end() == pytest.approx(1.0)  # card 0 measured through all of card 1's window
    c.begin()  # t=10, still open when card 0 ends
    clock.now = 20.0
    assert a.end() == pytest.approx(5 / 20 + 10 / 20)  # card 1 over a quarter, card 2 over half of it
    assert a.end() is None  # not measuring: nothing to say
    shutil.rmtree(board)


def test_a_new_board_removes_those_of_runs_that_were_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    killed = tmp_path / f"pytest-accel-board-{dead.pid}-x1"
    running = tmp_path / f"pytest-accel-board-{os.getpid()}-x2"  # a run that is still going: this one
    for folder in (killed, running):
        folder.mkdir()
    board = make_board(2)
    assert not killed.exists() and running.exists() and board.parent == tmp_path
    assert board.name.startswith(f"pytest-accel-board-{os.getpid()}-")


def test_a_torn_last_line_is_left_out_and_a_board_that_went_away_says_nothing(tmp_path: Path) -> None:
    clock = Clock()
    mine = CardBoard(tmp_path, "3", clock)
    (tmp_path / "4.busy").write_text("begin 0.0\nend 4.0\nbegin 6.")  # card 4 is writing its line
    mine.begin()
    clock.now = 8.0
    assert mine.end() == pytest.approx(0.5 + 2 / 8)  # 0-4 whole; "6." parses, open till now: 6-8
    (tmp_path / "4.busy").write_text("begin 0.0\nend 4.0\nbeg")
    mine.begin()
    clock.now = 10.0
    assert mine.end() == 0.0  # card 4's window ended before this one began; the torn word is no window
    shutil.rmtree(tmp_path)
    mine.begin()
    assert mine.end() is None


@given(st.lists(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 50)), max_size=4), max_size=8),
       st.floats(0, 100), st.floats(0.001, 50))  # fmt: skip
def test_busy_cards_lie_between_none_and_every_other_card(
    cards: list[list[tuple[float, float]]], begin: float, span: float
) -> None:
    # each card's windows one after another, never overlapping (one card measures one figure at a time)
    intervals = {}
    for index, windows in enumerate(cards):
        at, own = 0.0, []
        for gap, length in windows:
            own.append((at + gap, at + gap + length))
            at += gap + length
        intervals[str(index)] = own
    assert 0.0 <= busy_over(intervals, begin, begin + span) <= len(cards) + 1e-9


def test_a_worker_finds_its_board_and_its_card_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (BOARD_ENV, WORKER_CARD_ENV, WORKER_CPUS_ENV):
        monkeypatch.delenv(name, raising=False)
    assert CardBoard.of_worker() is None  # a run without workers
    monkeypatch.setenv(BOARD_ENV, str(tmp_path))
    monkeypatch.setenv(WORKER_CPUS_ENV, "2,3")
    cpu = CardBoard.of_worker()
    assert cpu is not None and cpu.card == "cpus 2 3"
    monkeypatch.setenv(WORKER_CARD_ENV, "GPU-5f1c")
    card = CardBoard.of_worker()
    assert card is not None and card.card == "GPU-5f1c" and card.folder == tmp_path


def test_beside_says_no_card_was_busy_in_a_run_without_workers() -> None:
    beside = Beside()
    beside.start()
    state = beside.stop()
    assert state[BUSY_CARDS] == state[OTHER_CARDS] == 0.0 and 0.0 <= state.get(FOREIGN_CPU, 0.0) <= 1.0


# --- the rule ----------------------------------------------------------------------------------------------

POLICY = VerdictPolicy()


def observation(centre: float, busy: float | None, others: int = 7) -> Observation:
    samples = [centre * (1 + 0.01 * ((i * 7) % 5 - 2)) for i in range(30)]
    state = {} if busy is None else {BUSY_CARDS: busy, OTHER_CARDS: float(others)}
    return Observation(samples, [1e-3] * 30, None, (), state)


def recorded(*regimes: tuple[float, int] | None) -> Observation:
    """Recordings, each (busy, other cards in its run), or None: written before the regime was kept."""
    then = observation(0.01, None)
    states = tuple({} if r is None else {BUSY_CARDS: r[0], OTHER_CARDS: float(r[1])} for r in regimes)
    return Observation(then.samples, then.probe_samples, None, (10.0,) * len(regimes), {}, states)


@pytest.mark.parametrize(
    ("now", "then", "judged"),
    [
        ((7.0, 7), ((0.0, 0), (0.1, 0)), False),  # recorded alone, measured beside seven busy cards
        ((0.2, 1), ((0.9, 2), (1.0, 2)), False),  # recorded beside busy cards, measured nearly alone
        ((0.0, 0), ((6.5, 7), (7.0, 7)), False),  # recorded on a busy node, measured in a run of its own
        ((0.6, 2), ((0.9, 2), (1.0, 2)), True),  # a sibling that ended part-way: within half a card
        ((0.2, 1), ((1.0, 1), (0.9, 1)), True),  # a run of as many cards: its recordings hold how they overlap
        ((7.0, 7), ((0.1, 7), (0.0, 0)), True),
        ((0.3, 7), ((0.0, 0), (0.0, 0)), True),  # alone at the tail of an -n 8 run: alone
        ((1.0, 1), (None, None), False),  # recordings from before the regime was kept do not say
        ((0.0, 0), (None, None), True),  # ...and were taken alone as far as anything was beside them
        ((0.0, 0), (None, (0.0, 0)), True),
    ],
)
def test_a_figure_is_judged_only_against_recordings_of_its_regime(
    now: tuple[float, int], then: tuple[tuple[float, int] | None, ...], judged: bool
) -> None:
    for centre in (0.01, 0.02):  # unchanged, and twice as slow: either way the same rule
        verdict = judge_time(observation(centre, *now), recorded(*then), POLICY)
        if judged:
            assert verdict.rule is not Rule.CARDS and verdict.outcome is not Outcome.NOISY, verdict.reason
        else:
            assert verdict.outcome is Outcome.NOISY and verdict.rule is Rule.CARDS, verdict.reason
            assert verdict.abstention is not None and verdict.abstention.cause is Cause.CARDS_BUSY
            assert not verdict.abstention.waits  # waiting would not bring the recordings' regime back


def test_a_figure_that_does_not_say_what_was_beside_it_is_not_held_to_it() -> None:
    assert uncovered({}, [{BUSY_CARDS: 7.0, OTHER_CARDS: 7.0}]) is None  # a file written before the regime was kept
    assert uncovered({BUSY_CARDS: 1.0 + CARDS_MARGIN, OTHER_CARDS: 2.0}, [{BUSY_CARDS: 1.0}]) is None
    regime = uncovered({BUSY_CARDS: 1.01 + CARDS_MARGIN, OTHER_CARDS: 2.0}, [{BUSY_CARDS: 1.0, OTHER_CARDS: 1.0}, {}])
    assert regime is not None and (regime.low, regime.high, regime.others) == (1.0, 1.0, 2)
