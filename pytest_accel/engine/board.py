"""What was beside a figure: the host's other processes, and the run's other cards that were measuring.

On a node spread over xdist workers (one card each), a figure is measured while other cards may be running their
own tests: they share the node's host CPU, its PCIe switches and its power budget, so a figure recorded alone and
measured beside seven busy cards is measured in another regime. The workers of one run keep a board, a folder the
controller made (``BOARD_ENV``), with the run's card count in it (``CARDS_FILE``): each writes, in a file named
after its card, when it measured (``begin``/``end`` around a measurement, on the system-wide monotonic clock every
process reads the same); a worker's figure keeps how many of the other cards were measuring, on average, over its
own window (``BUSY_CARDS`` in its state), and how many other cards its run had (``OTHER_CARDS``).

A run without workers has no board, and its figures say 0: nothing of this run was beside them (another run on the
node's other cards is its host share, ``HostShare``, where it uses the host's CPU).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import final

from pytest_accel.core.measurement import BUSY_CARDS, FOREIGN_CPU, OTHER_CARDS
from pytest_accel.engine.cards import worker_place
from pytest_accel.engine.machine import HostShare

__all__ = ["BOARD_ENV", "CARDS_FILE", "Beside", "CardBoard", "busy_over", "make_board"]

BOARD_ENV = "PYTEST_ACCEL_WORKER_BOARD"  # the folder where one run's workers say when they measure
CARDS_FILE = "cards"  # in the board: how many cards (workers) the run has


def make_board(cards: int) -> Path:
    """A new board for a run of ``cards`` workers, named after this process (the caller removes it when the run
    ends). A run ended by a signal cannot: the boards of controllers that no longer exist are removed here."""
    prefix = "pytest-accel-board-"
    for stale in Path(tempfile.gettempdir()).glob(f"{prefix}*-*"):
        owner = stale.name.removeprefix(prefix).partition("-")[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(stale, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))
    (folder / CARDS_FILE).write_text(f"{cards}\n", encoding="ascii")
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def busy_over(intervals: Mapping[str, list[tuple[float, float]]], begin: float, end: float) -> float:
    """How many of the cards in ``intervals`` (card -> its measuring windows) were measuring, on average, over
    ``[begin, end]``: each card's overlap with the window over the window's length, summed (0 .. the cards)."""
    span = end - begin
    if span <= 0:
        return 0.0
    busy = sum(max(0.0, min(end, b) - max(begin, a)) for windows in intervals.values() for a, b in windows)
    return busy / span


@final
class CardBoard:
    """One card's view of its run's board: it says when it measures, and reads when the others did."""

    def __init__(self, folder: Path, card: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.folder, self.card, self._clock = folder, card, clock
        self._began: float | None = None

    @property
    def others(self) -> int | None:
        """How many other cards this run has (None where the board does not say)."""
        try:
            return max(0, int((self.folder / CARDS_FILE).read_text(encoding="ascii")) - 1)
        except (OSError, ValueError):
            return None

    @classmethod
    def of_worker(cls) -> CardBoard | None:
        """This worker's view of its run's board (a CPU worker's card is its cores); None in a run without
        workers. A worker's fresh-process confirmation is its card's, as its worker waits for it."""
        folder, card = os.environ.get(BOARD_ENV), worker_place()
        return cls(Path(folder), card) if folder and card else None

    def _file(self, card: str) -> Path:
        return self.folder / f"{card.replace('/', '_')}.busy"

    def _say(self, line: str) -> None:
        # one short write in append mode: whole on every POSIX filesystem, whoever reads at the same time
        with self._file(self.card).open("a", encoding="ascii") as file:
            file.write(line)

    def begin(self) -> None:
        """This card starts measuring (a board that went away is not this measurement's failure: ``end`` says
        nothing then)."""
        self._began = self._clock()
        with contextlib.suppress(OSError):
            self._say(f"begin {self._began!r}\n")

    def end(self) -> float | None:
        """This card stops measuring: how many other cards measured beside it, on average, since ``begin``
        (None where the board cannot be read: its folder went away)."""
        if self._began is None:
            return None
        began, ended = self._began, self._clock()
        self._began = None
        try:
            self._say(f"end {ended!r}\n")
            others = {
                path.stem: _windows(path.read_text(encoding="ascii"), ended)
                for path in self.folder.glob("*.busy")
                if path != self._file(self.card)
            }
        except OSError:
            return None
        return busy_over(others, began, ended)


def _windows(text: str, now: float) -> list[tuple[float, float]]:
    """A card's measuring windows from its board file; one still open ends ``now``. A torn last line (the
    card is writing it) is left out."""
    windows, opened = [], None
    for line in text.splitlines():
        word, _, value = line.partition(" ")
        try:
            moment = float(value)
        except ValueError:
            continue
        if word == "begin":
            opened = moment
        elif word == "end" and opened is not None:
            windows.append((opened, moment))
            opened = None
    if opened is not None:
        windows.append((opened, now))
    return windows


@final
class Beside:
    """What was beside one measurement (engine/sampling.py's ``HostShareMeter``): the share of the host's CPU
    other processes used (``FOREIGN_CPU``) and, in a worker, how many of the run's other cards were measuring
    (``BUSY_CARDS``), of how many (``OTHER_CARDS``); both 0 in a run without workers."""

    def __init__(self, host: HostShare | None = None, board: CardBoard | None = None) -> None:
        self._host, self._board = host or HostShare(), board

    def start(self) -> None:
        self._host.start()
        if self._board is not None:
            self._board.begin()

    def stop(self) -> dict[str, float]:
        busy, others = (self._board.end(), self._board.others) if self._board is not None else (0.0, 0)
        foreign = self._host.stop()
        return {
            **({} if foreign is None else {FOREIGN_CPU: foreign}),
            **({} if busy is None or others is None else {BUSY_CARDS: round(busy, 2), OTHER_CARDS: float(others)}),
        }
