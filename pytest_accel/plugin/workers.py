"""pytest-xdist's hooks: each worker its own card (or its own cores), placed before its Python starts.

``-n N`` with ``--device cuda|hpu``: worker ``i`` gets the caller's ``i``-th visible card through the
vendor's variable, set in the XSpec's environment (engine/cards.py), so the worker's torch, bridge and
conftests see that card alone, as card 0. ``-n auto``: one worker per visible card. With ``--device cpu``
each worker gets a contiguous slice of the allowed CPUs, bound by the worker itself when its plugin
configures. A worker's measurements reach the controller on its test reports; what the controller cannot
see (the device, its provenance, what was written) comes back in ``workeroutput`` (``worker_output``).
"""

from __future__ import annotations

import faulthandler
import json
import os
import shutil
import threading
import time
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any, final

import pytest

from pytest_accel.engine.board import BOARD_ENV, make_board
from pytest_accel.engine.cards import (
    CARD_VARIABLES,
    WORKER_CARD_ENV,
    WORKER_CPUS_ENV,
    CardError,
    assign_cards,
    card_count,
    core_slices,
    visible_cards,
    worker_place,
)

if TYPE_CHECKING:
    from pytest_accel.judgement.results import Recorded
    from pytest_accel.plugin.options import AccelOptions
    from pytest_accel.plugin.parts import RunParts

__all__ = [
    "WORKER_OUTPUT",
    "HangWatch",
    "Workers",
    "auto_workers",
    "fixed_cards",
    "is_controller",
    "is_worker",
    "keep_stderr",
    "place_workers",
    "placed",
    "places",
    "unplaced",
    "watch_controller",
    "worker_output",
    "xdist_problem",
]

WORKER_OUTPUT = "accel"  # the key of a worker's JSON in ``config.workeroutput``


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def is_controller(config: pytest.Config) -> bool:
    """Whether this process hands the tests to xdist workers (and measures nothing itself)."""
    return not is_worker(config) and config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))


def _kind(config: pytest.Config) -> str:
    return str(config.getoption("accel_device", None) or config.getini("accel_device") or "auto")


def placed() -> bool:
    """Whether this process was given a card or cores of its own: an xdist worker this plugin placed, or a
    process such a worker started (its fresh-process confirmation)."""
    return bool(os.environ.get(WORKER_CARD_ENV) or os.environ.get(WORKER_CPUS_ENV))


def places(config: pytest.Config) -> bool:
    """Whether this xdist controller gives each worker a card or cores (``place_workers``)."""
    kind = _kind(config)
    return is_controller(config) and (kind in CARD_VARIABLES or (kind == "cpu" and hasattr(os, "sched_getaffinity")))


def unplaced(config: pytest.Config) -> str | None:
    """In an xdist worker that was given no card or cores of its own: why it must not measure (None: it may).
    A run of other tests with ``-n`` and the default ``--device auto`` is left alone until a perf test asks."""
    if not is_worker(config) or placed():
        return None
    return (
        "pytest-accel measures under xdist (-n) with a card (or cores) per worker, placed when the run names its"
        " device: --device cuda, hpu or cpu (this run's is auto, or the platform cannot bind cores); or run -n 0"
    )


def _cards(kind: str) -> tuple[str, ...]:
    return visible_cards(kind, os.environ, lambda: card_count(kind))


def auto_workers(config: pytest.Config) -> int | None:
    """``-n auto`` on an accelerator: one worker per visible card (None: xdist's own count, the CPU's)."""
    kind = _kind(config)
    return len(_cards(kind)) if kind in CARD_VARIABLES else None


def place_workers(config: pytest.Config, specs: Sequence[Any]) -> None:
    """Each worker's environment before it starts: its card's variable (cuda, hpu) or its cores (cpu), and the
    run's board, where each says when it measures (engine/board.py; removed when the run ends). With
    ``--device auto`` nothing is placed: a perf test in such a worker fails, naming why (``unplaced``)."""
    kind = _kind(config)
    if places(config):
        board = make_board(len(specs))
        config.add_cleanup(lambda: shutil.rmtree(board, ignore_errors=True))
        for spec in specs:
            spec.env[BOARD_ENV] = str(board)
    try:
        if kind in CARD_VARIABLES:
            for spec, card in zip(specs, assign_cards(kind, _cards(kind), len(specs)), strict=True):
                spec.env[CARD_VARIABLES[kind]] = card
                spec.env[WORKER_CARD_ENV] = card
        elif kind == "cpu" and hasattr(os, "sched_getaffinity"):
            for spec, cpus in zip(specs, core_slices(sorted(os.sched_getaffinity(0)), len(specs)), strict=True):
                spec.env[WORKER_CPUS_ENV] = ",".join(map(str, cpus))
    except CardError as error:
        raise pytest.UsageError(str(error)) from None


def fixed_cards(config: pytest.Config, log: Any) -> Any:
    """xdist's scheduler under ``--accel-fixed-cards`` where this controller places its workers: the collection's
    test k on worker k mod N (worker ``gw<i>`` holds the i-th card), all sent at once; None: xdist's own. A worker
    that crashed is replaced on its card, and the tests it had left go to the first worker that asks, as xdist's
    load scheduling does."""
    if not (places(config) and config.getoption("accel_fixed_cards", False)):
        return None
    from xdist.scheduler import LoadScheduling  # xdist is here: it is asking

    class FixedCards(LoadScheduling):  # type: ignore[misc]
        def schedule(self) -> None:
            if getattr(self, "collection", None) is not None or not self._check_nodes_have_same_collection():
                super().schedule()  # a replaced worker, or collections that differ (xdist says so)
                return
            collection: list[str] = next(iter(self.node2collection.values()))
            self.collection = collection
            nodes = sorted(self.nodes, key=lambda node: int(str(node.gateway.id).removeprefix("gw") or 0))
            for index in range(len(collection)):
                self.node2pending[nodes[index % len(nodes)]].append(index)
            self.pending[:] = []
            for node in nodes:
                if self.node2pending[node]:
                    node.send_runtest_some(list(self.node2pending[node]))
                node.shutdown()  # after the tests it was sent

    return FixedCards(config, log)


def xdist_problem(options: AccelOptions) -> str | None:
    """Why this run cannot be spread over xdist workers; None when it can."""
    asked = [flag for flag, on in (("--accel-count", options.count), ("--accel-calibrate", options.calibrate),
             ("--accel-stale/--accel-prune", options.stale)) if on]  # fmt: skip
    if asked:
        return f"{asked[0]} runs its own processes over the whole selection: not under xdist (-n); run it with -n 0"
    if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
        return "a torchrun rank cannot be spread over xdist workers: its cards are its ranks'; run it with -n 0"
    return None


def worker_output(
    config: pytest.Config, parts: RunParts, problems: list[str], unwritten: list[tuple[str, str]]
) -> None:
    """A worker's description of its run for the controller: its device (None: it measured nothing), what
    it could not write, its problems, how long it waited for quiet."""
    output: dict[str, Any] | None = getattr(config, "workeroutput", None)
    if output is None:
        return
    device = parts.resolved
    card = {"card": worker_place() or "0"}  # a CPU worker's card is its cores
    described = None if device is None else [device.kind, device.key(), {**parts.provenance(), **card}]
    output[WORKER_OUTPUT] = json.dumps({
        "device": described, "problems": problems, "unwritten": [list(pair) for pair in unwritten],
        "waited": sum(w.seconds for w in parts.waits()),
    })  # fmt: skip


@final
class Workers:
    """The xdist controller's view of its workers: the order of their tests, and what each said at its end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.order: list[str] = []
        self.ended: list[dict[str, Any]] = []
        self.lost: list[str] = []  # workers that ended without saying anything (crashed, killed)

    @classmethod
    def of_run(cls, config: pytest.Config, options: AccelOptions) -> Workers | None:
        """An xdist controller's view of its workers, registered for xdist's hooks; None in any other process.
        A run that cannot be spread over workers is a usage error, in the controller and in each worker."""
        if (is_worker(config) or is_controller(config)) and (problem := xdist_problem(options)) is not None:
            raise pytest.UsageError(problem)
        # pytest's own watch (faulthandler_timeout), where set, stays: faulthandler holds one timer per process
        theirs = float(config.getini("faulthandler_timeout") or 0)
        if is_worker(config) and placed() and options.worker_timeout_seconds > 0 and not theirs:
            config.pluginmanager.register(HangWatch(options.worker_timeout_seconds), "accel-hang-watch")
        if is_worker(config) and placed():
            watch_controller(os.getppid())
        if not is_controller(config):
            return None
        workers = cls(config)
        config.pluginmanager.register(workers, "accel-workers")
        return workers

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        if not self.order:  # every worker collects the same tests, in the same order: a single-process run's
            self.order = list(ids)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """A worker ended: what it measured on, what it wrote or could not, or that it said nothing."""
        output = getattr(node, "workeroutput", None) or {}
        text = output.get(WORKER_OUTPUT)
        name = getattr(getattr(node, "gateway", None), "id", "a worker")
        if not isinstance(text, str):
            self.lost.append(f"accel: xdist worker {name} ended without its report ({error or 'no reason given'})")
            return
        self.ended.append({**json.loads(text), "worker": name})

    def in_order(self, recorded: list[Recorded]) -> list[Recorded]:
        """The measurements in the order a single-process run would have taken them."""
        place = {test: index for index, test in enumerate(self.order)}
        return sorted(recorded, key=lambda r: place.get(r.test, len(place)))

    def described(self) -> tuple[str, str, dict[str, str]] | None:
        """The device the workers measured on (kind, key, provenance with every worker's card), or None."""
        devices = [(e["worker"], e["device"]) for e in self.ended if e.get("device")]
        if not devices:
            return None
        kind, key, provenance = devices[0][1]
        cards = ",".join(f"{worker}={device[2].get('card', '?')}" for worker, device in sorted(devices))
        return kind, key, {**provenance, "card": "", "workers": cards}

    def key(self, default: str) -> str:
        described = self.described()
        return described[1] if described is not None else default

    def problems(self) -> list[str]:
        return [*self.lost, *(problem for e in self.ended for problem in e.get("problems", []))]

    def unwritten(self) -> list[tuple[str, str]]:
        return [(str(what), str(why)) for e in self.ended for what, why in e.get("unwritten", [])]

    def waited(self) -> float:
        return float(sum(e.get("waited", 0.0) for e in self.ended))


# The worker's own stderr (the controller's), kept before pytest captures fd 2 (``keep_stderr``): what a hung
# test's worker says there is seen, where pytest's capture file would die with the worker.
_own_stderr: list[int] = []


def keep_stderr() -> None:
    """In a placed xdist worker, before pytest captures fd 2: a copy of it, for ``HangWatch``."""
    if placed() and os.environ.get("PYTEST_XDIST_WORKER") and not _own_stderr:
        _own_stderr.append(os.dup(2))


# After saying which test hung, the worker is ended this much later by faulthandler's own thread, which needs no
# Python lock: a test stuck in a call that holds the GIL is ended too, with only faulthandler's words.
_SAY_THEN_END_SECONDS = 2.0


@final
class HangWatch:
    """In a placed xdist worker: a test that runs past ``seconds`` ends the worker, its stacks dumped to stderr
    (``faulthandler.dump_traceback_later(exit=True)``); xdist names it, "worker 'gw1' crashed while running
    <test>", fails that test, and gives a new worker the card and the tests left. A worker that waits forever
    on its card would otherwise hold the run forever: xdist has no timeout of its own."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        said = threading.Timer(self.seconds, self._say, (item.nodeid,))
        said.daemon = True
        said.start()
        stderr = _own_stderr[0] if _own_stderr else 2
        faulthandler.dump_traceback_later(self.seconds + _SAY_THEN_END_SECONDS, exit=True, file=stderr)
        try:
            return (yield)
        finally:
            said.cancel()
            faulthandler.cancel_dump_traceback_later()

    def _say(self, test: str) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "a worker")
        card = worker_place() or "?"
        line = (f"accel: xdist worker {worker} ({card}) still in {test} after {self.seconds:g} s "
                "(accel_worker_timeout_seconds): ending it, its stacks follow\n")  # fmt: skip
        os.write(_own_stderr[0] if _own_stderr else 2, line.encode("utf-8", "replace"))


# How often a placed worker looks whether its controller is still there.
_CONTROLLER_POLL_SECONDS = 0.5


def watch_controller(controller: int) -> None:
    """In a placed worker: end this worker once its controller (its parent, execnet's popen) has ended. Killed,
    the controller tells its workers nothing, and xdist's worker notices only when it next reports, after the test
    it is in: minutes of a card held by a run that is over. Its own children go with it (their lifelines)."""

    def watch() -> None:
        while os.getppid() == controller:
            time.sleep(_CONTROLLER_POLL_SECONDS)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "a worker")
        line = f"accel: xdist worker {worker}: its controller ended, so does it\n"
        os.write(_own_stderr[0] if _own_stderr else 2, line.encode("utf-8", "replace"))
        os._exit(1)

    threading.Thread(target=watch, name="accel-controller-watch", daemon=True).start()
