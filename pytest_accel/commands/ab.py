"""``pytest-accel ab``: two builds measured in one sitting, as alternating pytest runs.

The base is a git revision checked out into a temporary worktree (or, with ``--base-python``, the
same tree run by another Python environment); the head is the working tree as it is, dirty or
not, or ``--head REV``. Each pair runs the same pytest selection once per side, in ABBA order. A
side's runs are forks of a worker process of its own (abworker.py), a fresh worker every ``reuse``
runs: process start and the libraries' imports are paid once per worker, and every run starts from
the same state, nothing of the project imported. Each run writes its
``--accel-json`` against an empty baseline folder, so no stored baseline judges anything:
``judgement.paired`` compares the two sides, pair by pair, and says when to stop. With ``--count``
the sitting is one counting run per side instead, each test decided by its instructions (abcount.py).

Exit codes compose with ``git bisect run``: 0 no regression, 1 a regression, 125 inconclusive (or
the head could not be measured: bisect skips that commit), 2 bad input or a base that cannot be
measured, 130 interrupted. Nothing is left behind: worktrees are removed and child process groups
killed on every way out.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import shutil
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, final

from pytest_accel.commands.abcount import COUNT_ARGS, RECORD_ARGS, counted_tests, instructions
from pytest_accel.commands.absides import (
    EXIT_INCONCLUSIVE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REGRESSED,
    EXIT_USAGE,
    ABError,
    ProcessRun,
    Side,
    Worker,
    commit_of,
    git,
    log_tail,
    run_process,
    worktree,
)
from pytest_accel.commands.abtracks import Key, Track
from pytest_accel.core.measurement import Measurement, display_name, short_names
from pytest_accel.core.operator_table import absent_line, explain
from pytest_accel.core.outcomes import PAIRED, Outcome
from pytest_accel.core.units import format_change, format_percent_change, format_rate, format_seconds
from pytest_accel.judgement.comparison import COMPARISON_FILE, COMPARISON_SCHEMA
from pytest_accel.judgement.paired import PairedVerdict, SequentialPlan, judge_pairs
from pytest_accel.judgement.results import merged_document, save_results
from pytest_accel.outputs.pages import markdown_table
from pytest_accel.storage.files import encode, write_atomically

__all__ = ["ABError", "ABSettings", "Key", "Sitting", "deselected", "parse_variable", "run_ab", "sit"]

_ROOTDIR = re.compile(r"^rootdir: .*$", re.MULTILINE)  # pytest's header: "rootdir: DIR[, configfile: FILE]"
_NOT_FOUND = re.compile(r"^ERROR: (file or directory not found|not found): ", re.MULTILINE)


def deselected(tests: Sequence[str], kept: Sequence[str]) -> list[str]:
    """``--deselect`` arguments for ``tests`` not in ``kept``: pytest deselects by prefix, so an id that is the
    start of a kept one (``t.py::test_work`` of ``t.py::test_work_fast``) is not deselected: it runs, unread."""
    return [
        argument
        for test in tests
        if test not in kept and not any(other.startswith(test) for other in kept)
        for argument in ("--deselect", test)
    ]


@final
@dataclass(frozen=True)
class ABSettings:
    pytest_args: tuple[str, ...]
    base: str | None = None  # a git revision
    head: str | None = None  # a git revision; None: the working tree
    base_python: str | None = None  # instead of ``base``: the same tree, another interpreter
    base_env: tuple[tuple[str, str], ...] = ()  # instead of ``base`` (or beside base_python): variables set
    head_python: str | None = None  # the head's interpreter (default: this one)
    plan: SequentialPlan = field(default_factory=SequentialPlan)
    plans: Mapping[str, SequentialPlan] = field(default_factory=dict)  # a test's own plan (bisect's steps)
    max_minutes: float = 15.0
    out: Path = Path(".pytest-accel-ab")
    markdown: Path | None = None
    cwd: Path = field(default_factory=Path.cwd)
    operators: bool = True  # profile each regressed test once more per side and diff (Sitting.explain)
    reuse: int = 5  # runs per side's worker process before a fresh one (1: a new process every run)
    min_rounds: int = 10  # timed rounds per test per run at least (a long call's median of 5 was its own noise)
    measure_seconds: float | None = None  # timed budget per test per run; None: the project's
    # A sitting that continues an earlier one of the same two builds (a bisect's step measured longer):
    # the earlier pairs' log ratios per (test, metric), judged with this sitting's under one schedule
    # (``plan.max_pairs`` is then the whole step's), ``sitting_pairs`` this sitting's share of them, and
    # ``final`` False when a longer sitting may follow: its end is then no look (undecided so far, no claim).
    earlier: Mapping[tuple[str, str], tuple[float, ...]] = field(default_factory=dict)
    sitting_pairs: int | None = None
    final: bool = True
    count: bool = False  # decide by the work counted: one run per side, no pairs (abcount.py)

    @property
    def budget(self) -> tuple[int, float | None]:
        """Each run's timing budget per test: (rounds at least, seconds or None for the project's)."""
        return self.min_rounds, self.measure_seconds


def parse_variable(text: str) -> tuple[str, str]:
    """``--base-env NAME=VALUE`` as a pair; an argparse error naming the form otherwise."""
    name, equals, value = text.partition("=")
    if not equals or not name or not name.replace("_", "").isalnum():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


@contextlib.contextmanager
def prepared_sides(settings: ABSettings) -> Iterator[tuple[Side, Side]]:
    """The two trees to measure, checked out for the sitting and removed after it."""
    environment_side = settings.base_python is not None or bool(settings.base_env)
    if (settings.base is None) == (not environment_side):
        raise ABError("give exactly one of --base REV and --base-python PATH (or --base-env NAME=VALUE)")
    for option, python in (("--base-python", settings.base_python), ("--head-python", settings.head_python)):
        if python is not None and shutil.which(python) is None:
            raise ABError(f"{option} {python}: no such interpreter")
    needs_git = settings.base is not None or settings.head is not None
    with contextlib.ExitStack() as stack:
        if needs_git:
            top = Path(git(settings.cwd, "rev-parse", "--show-toplevel")).resolve()
            here = settings.cwd.resolve().relative_to(top)
        else:
            top, here = settings.cwd.resolve(), Path(".")

        def tree(name: str, rev: str | None) -> tuple[Path, str, str]:
            if rev is None:  # the working tree, as it is
                if not needs_git:
                    return top, "", "working tree"
                commit = git(top, "rev-parse", "HEAD")
                dirty = bool(git(top, "status", "--porcelain", "--untracked-files=no"))
                return top, commit, f"working tree ({commit[:9]}{' + changes' if dirty else ''})"
            commit = commit_of(top, rev)
            return stack.enter_context(worktree(top, commit, name)), commit, f"{rev} ({commit[:9]})"

        head_root, head_commit, head_label = tree("head", settings.head)
        head_python = settings.head_python or sys.executable
        if settings.base is not None:
            base_root, base_commit, base_label = tree("base", settings.base)
            base_python = head_python
        else:
            base_root, base_commit = head_root, head_commit
            base_python = settings.base_python or head_python
            variables = " ".join(f"{name}={value}" for name, value in settings.base_env)
            base_label = f"{head_label} with {base_python}" + (f" and {variables}" if variables else "")
            head_label = f"{head_label} with {head_python}"
        stands_in = {name: top if root != top else None for name, root in (("base", base_root), ("head", head_root))}
        yield (
            Side("base", base_label, base_commit, base_root, base_root / here, base_python,
                 checkout_of=stands_in["base"], variables=settings.base_env),
            Side("head", head_label, head_commit, head_root, head_root / here, head_python,
                 checkout_of=stands_in["head"]),
        )  # fmt: skip


def _selected_nothing(run: ProcessRun) -> bool:
    """pytest's exit 4 for a selected file or node id that this tree does not have: no tests, not an error."""
    if run.returncode != 4:
        return False
    log = run.log.read_text(encoding="utf-8", errors="replace")
    return bool(_NOT_FOUND.search(log))


def _usable(run: ProcessRun, side: Side) -> None:
    """Stop the sitting when a side's process failed as a whole (collection, usage, crash)."""
    if run.returncode in (0, 1, 5) or _selected_nothing(run):  # fine; failed tests are judged per test
        return
    code = EXIT_USAGE if side.name == "base" else EXIT_INCONCLUSIVE
    what = {2: "was interrupted or could not collect", 3: "hit an internal error", 4: "was called wrongly"}
    raise ABError(
        f"{side.name} ({side.label}): pytest {what.get(run.returncode, 'failed')} (exit {run.returncode});"
        f" its log {run.log} ends:\n{log_tail(run.log)}",
        code,
    )


class Sitting:
    """The loop: pairs of processes until every test is decided or the budget runs out."""

    def __init__(self, settings: ABSettings, base: Side, head: Side, scratch: Path) -> None:
        self.settings, self.scratch = settings, scratch
        # Each side measures the device's peaks in its first run of this sitting (runs/ is emptied
        # when a sitting starts: another sitting's peaks are not this one's).
        peak = {side.name: scratch / "runs" / f"peak-{side.name}.json" for side in (base, head)}
        self.sides = {side.name: replace(side, peak_file=peak[side.name]) for side in (base, head)}
        self.tracks: dict[Key, Track] = {}
        self.runs: dict[str, list[ProcessRun]] = {"base": [], "head": []}
        self.pairs = 0
        self.started = time.monotonic()
        self.stop_reason = ""
        self.pair_seconds: list[float] = []  # the sitting's clock at the end of each pair
        self.workers: dict[str, Worker] = {}
        self.spawned = {"base": 0, "head": 0}
        for key, ratios in settings.earlier.items():
            self.tracks[key] = Track(key, log_ratios=list(ratios))
        (scratch / "empty-baselines").mkdir(parents=True, exist_ok=True)
        (scratch / "runs").mkdir(parents=True, exist_ok=True)

    def _deselected(self) -> list[str]:
        tests: dict[str, bool] = {}
        for (test, _), track in self.tracks.items():
            tests[test] = tests.get(test, True) and track.verdict.outcome not in (
                Outcome.PENDING, Outcome.INCONCLUSIVE,
            )  # fmt: skip
        return deselected(sorted(tests), [test for test, done in tests.items() if not done])

    def _worker(self, name: str) -> Worker:
        """The side's worker, a new one after ``reuse`` runs (or when the last one died)."""
        worker = self.workers.get(name)
        if worker is not None and (worker.runs >= self.settings.reuse or not worker.alive):
            worker.close()
            worker = None
        if worker is None:
            self.spawned[name] += 1
            log = self.scratch / "runs" / f"{name}-worker-{self.spawned[name]:02d}.log"
            worker = self.workers[name] = Worker(self.sides[name], log)
        return worker

    def close(self) -> None:
        """End every worker (and whatever its runs left in its process group)."""
        for worker in self.workers.values():
            worker.close()
        self.workers.clear()

    def _run(self, name: str) -> ProcessRun:
        side, index = self.sides[name], len(self.runs[name]) + 1
        result = self.scratch / "runs" / f"{name}-{index:02d}.json"
        log = self.scratch / "runs" / f"{name}-{index:02d}.log"
        args, empty = [*self.settings.pytest_args, *self._deselected()], self.scratch / "empty-baselines"
        budget = self.settings.budget
        if self.settings.reuse > 1:
            run = self._worker(name).run(args, result, log, empty, budget)
        else:
            run = run_process(side, args, result, log, empty, budget)
        _usable(run, side)
        self.runs[name].append(run)
        if index == 1 and (found := _ROOTDIR.search(log.read_text(encoding="utf-8", errors="replace"))):
            print(f"pytest-accel ab: {name}: {found.group(0)}", file=sys.stderr)  # where its test ids come from
        return run

    def pair(self) -> None:
        order = ("base", "head") if self.pairs % 2 == 0 else ("head", "base")
        runs = {name: self._run(name) for name in order}
        self.pairs += 1
        measured = {name: dict(run.results.measurements) if run.results else {} for name, run in runs.items()}
        for key in sorted(set(measured["base"]) | set(measured["head"])):
            track = self.tracks.setdefault(key, Track(key))
            if track.verdict.decided or track.verdict.outcome is Outcome.ERROR:
                continue
            self._step(track, key, runs, measured)
        for name, run in runs.items():  # a test that failed before measuring anything
            for test in run.failed:
                for key, track in self.tracks.items():
                    if key[0] == test and track.verdict.outcome is Outcome.PENDING:
                        track.verdict, track.failed_on = self._error(name, test, run), name
                if not any(key[0] == test for key in self.tracks):
                    self.tracks[(test, "-")] = Track((test, "-"), verdict=self._error(name, test, run), failed_on=name)

    def _error(self, name: str, test: str, run: ProcessRun) -> PairedVerdict:
        return PairedVerdict(Outcome.ERROR, self.pairs, reason=f"{name}: {test} failed (see {run.log})")

    def _step(self, track: Track, key: Key, runs: Mapping[str, ProcessRun], measured: Mapping[str, Any]) -> None:
        failed = [name for name, run in runs.items() if key[0] in run.failed]
        if failed:
            track.verdict, track.failed_on = self._error(failed[0], key[0], runs[failed[0]]), failed[0]
            return
        base, head = measured["base"].get(key), measured["head"].get(key)
        if base is None or head is None:
            if track.log_ratios:  # measured before, missing now: the selection changed under us
                track.verdict = PairedVerdict(Outcome.ERROR, self.pairs, reason="stopped appearing in results")
            elif head is not None:
                track.head.append(head)
                track.verdict = PairedVerdict(Outcome.NEW, self.pairs, reason="only the head has this test")
            else:
                track.base.append(base)
                track.verdict = PairedVerdict(Outcome.GONE, self.pairs, reason="only the base has this test")
            return
        if base.disabled or head.disabled:
            raise ABError("timing is disabled (--benchmark-disable?): ab needs timed rounds on both sides")
        track.base.append(base)
        track.head.append(head)
        track.log_ratios.append(math.log(Track.figure(head) / Track.figure(base)))
        track.verdict = judge_pairs(track.log_ratios, self._plan(key))

    def _plan(self, key: Key) -> SequentialPlan:
        return self.settings.plans.get(key[0], self.settings.plan)

    def pending(self) -> list[Track]:
        return [t for t in self.tracks.values() if t.verdict.outcome is Outcome.PENDING]

    def count(self) -> None:
        """``--count``: the base's counts recorded in one run, the head's judged against them in another;
        every test decided at once (abcount.py), its moved functions in place of an operator diff."""
        store, runs = self.scratch / "counts", {}
        for name, extra in (("base", RECORD_ARGS), ("head", ())):
            stem = self.scratch / "runs" / f"{name}-count"
            args = [*self.settings.pytest_args, *COUNT_ARGS, *extra]
            runs[name] = run_process(self.sides[name], args, stem.with_suffix(".json"), stem.with_suffix(".log"),
                                     store, self.settings.budget)  # fmt: skip
            _usable(runs[name], self.sides[name])
            self.runs[name].append(runs[name])
        self.pairs, self.stop_reason = 1, "every test counted"
        self.pair_seconds.append(time.monotonic() - self.started)
        for key, found in counted_tests(runs["base"], runs["head"]).items():
            ratio, regressed = found.verdict.ratio, found.verdict.outcome is Outcome.REGRESSED
            self.tracks[key] = Track(
                key, verdict=found.verdict, failed_on=found.failed_on, count=found.count,
                log_ratios=[math.log(ratio)] if ratio is not None and 0 < ratio < math.inf else [],
                operators=found.count.moved if regressed and found.count is not None else (),
            )  # fmt: skip
        if not self.tracks:
            raise ABError("the selection measured nothing on either side (no test called throughput)")

    def run(self, progress: Any) -> None:
        if self.settings.count:
            self.count()
            return
        plan, budget = self.settings.plan, self.settings.max_minutes * 60
        cap = self.settings.sitting_pairs or plan.max_pairs
        while True:
            self.pair()
            elapsed = time.monotonic() - self.started
            self.pair_seconds.append(elapsed)
            pending = self.pending()
            progress(self, elapsed)
            if not self.tracks:
                raise ABError("the selection measured nothing on either side (no test called throughput)")
            if not pending:
                hit_limit = any(t.verdict.outcome is Outcome.INCONCLUSIVE for t in self.tracks.values())
                self.stop_reason = f"--max-pairs {plan.max_pairs} reached" if hit_limit else "every test decided"
                return
            if self.pairs >= cap:
                self.stop_reason = f"--max-pairs {cap} reached"
            elif elapsed + elapsed / self.pairs > budget:
                self.stop_reason = f"--max-minutes {self.settings.max_minutes:g} would be exceeded by another pair"
            else:
                continue
            for track in pending:
                track.verdict = self._stopped(track)
            return

    def _stopped(self, track: Track) -> PairedVerdict:
        """A pending track's verdict when the sitting stops: the plan's last look, or, when a longer sitting
        may continue its pairs (``ABSettings.final`` False), no look: undecided so far, its interval shown."""
        plan = self._plan(track.key)
        if self.settings.final or len(track.log_ratios) < 2:
            return judge_pairs(track.log_ratios, plan, last=True)
        ratio, low, high = plan.interval(track.log_ratios)
        reason = f"{len(track.log_ratios)} pair(s) so far: a longer sitting continues them"
        return PairedVerdict(Outcome.INCONCLUSIVE, len(track.log_ratios), ratio, low, high, reason)

    def explain(self) -> None:
        """One more process per side for the regressed tests, each profiled with its trace written:
        which operators changed, base -> head. Not a pair: its figures judge nothing."""
        regressed = {key for key, t in self.tracks.items() if t.verdict.outcome is Outcome.REGRESSED}
        if not regressed:
            return
        others = sorted({test for test, _ in self.tracks} - {test for test, _ in regressed})
        tables: dict[str, Mapping[Key, Measurement]] = {}
        for name, side in self.sides.items():
            stem = self.scratch / "runs" / f"{name}-operators"
            result, log = stem.with_suffix(".json"), stem.with_suffix(".log")
            args = [*self.settings.pytest_args, *(a for test in others for a in ("--deselect", test)),
                    "--accel-operators=always", f"--accel-trace={self.scratch / 'traces' / name}"]  # fmt: skip
            run = run_process(side, args, result, log, self.scratch / "empty-baselines", self.settings.budget)
            tables[name] = dict(run.results.measurements) if run.results else {}
        for key in sorted(regressed):
            base, head = tables["base"].get(key), tables["head"].get(key)
            if base is None or head is None:
                missing = "base" if base is None else "head"
                line = absent_line(f"the profiling run of the {missing} did not measure it: see runs/*-operators.log")
                self.tracks[key].operators = (line,)
            elif head.operators is None:
                line = absent_line("the head's profile has no operator table (no torch operation, or it failed)")
                self.tracks[key].operators = (line,)
            else:
                verdict = self.tracks[key].verdict
                measured = verdict.ratio if verdict.outcome is Outcome.REGRESSED else None
                self.tracks[key].operators = tuple(explain(base.operators, head.operators, measured))

    def exit_code(self) -> int:
        if any(track.regressed for track in self.tracks.values()):
            return EXIT_REGRESSED
        if any(t.verdict.outcome is Outcome.ERROR and t.failed_on == "base" for t in self.tracks.values()):
            return EXIT_USAGE  # the base build cannot run the test: the sitting's setup, not the change
        if any(t.verdict.outcome in (Outcome.ERROR, Outcome.INCONCLUSIVE) for t in self.tracks.values()):
            return EXIT_INCONCLUSIVE
        if not any(track.log_ratios for track in self.tracks.values()):
            return EXIT_USAGE  # a sitting that compared nothing must never pass
        return EXIT_OK

    def notes(self) -> list[str]:
        """The lines under the table: why a test has no verdict of its own (never compared, undecided, failed on a
        side), its peak memory when that regressed, and a line when nothing was compared at all."""
        lines = []
        names = short_names([display_name(*key) for key in sorted(self.tracks)])
        for (_, track), name in zip(sorted(self.tracks.items()), names, strict=True):
            verdict = track.verdict
            if (label := _NOTED.get(verdict.outcome)) is not None and verdict.reason:
                lines.append(f"{label}: {name}: {verdict.reason}")
            if (memory := track.memory) is not None and memory.outcome is Outcome.REGRESSED:
                lines.append(f"PEAK MEMORY REGRESSED: {name}: {memory.reason}")
        if any(t.verdict.outcome in (Outcome.NEW, Outcome.GONE) for t in self.tracks.values()) and not any(
            track.log_ratios for track in self.tracks.values()
        ):
            lines.append(
                "compared nothing: no test was measured on both sides (different test ids? a -k that selects "
                "nothing on one side? see each side's log in runs/)"
            )
        return lines


# The outcomes the notes under the table explain (the table's columns say the rest).
_NOTED = {
    Outcome.NEW: "NOT COMPARED",
    Outcome.GONE: "NOT COMPARED",
    Outcome.INCONCLUSIVE: "INCONCLUSIVE",
    Outcome.ERROR: "ERROR",
}


def table(sitting: Sitting) -> tuple[list[str], list[list[str]]]:
    """One row per test: both sides' throughput, the change with its interval, the pairs, the verdict, and
    the change of peak memory; what a row cannot say is in ``Sitting.notes``."""
    base, head = sitting.sides["base"], sitting.sides["head"]
    header = ["test", f"base: {base.label}", f"head: {head.label}", "head vs base", "pairs", "verdict", "peak memory"]
    rows = []
    order = {o: i for i, o in enumerate(PAIRED)}
    for track in sorted(sitting.tracks.values(), key=lambda t: (order[t.verdict.outcome], t.key)):
        data = track.to_dict()
        rate = {
            side: "-" if data[f"{side}_items_per_second"] is None else
            f"{format_rate(data[f'{side}_items_per_second'])} {data['unit']}/s"
            for side in ("base", "head")
        }  # fmt: skip
        verdict, memory = track.verdict, track.memory
        change = "-"
        if verdict.ratio is not None and verdict.low is not None and verdict.high is not None:
            change = format_change(verdict.ratio, verdict.low, verdict.high)
        peak = "-"
        if memory is not None and memory.ratio is not None and math.isfinite(memory.ratio):
            peak = format_percent_change(memory.ratio)
        if memory is not None and memory.outcome is Outcome.REGRESSED:
            peak = "regressed" if peak == "-" else f"{peak} (regressed)"  # from 0 bytes: no percentage
        name = display_name(*track.key) if track.key[1] != "-" else track.key[0]
        if sitting.settings.count:  # the work counted: instructions per call, exact, no pairs or interval
            cells = instructions(track.count)
            rows.append([name, cells["base"], cells["head"], cells["change"], verdict.outcome.value])
            continue
        rows.append([name, rate["base"], rate["head"], change, str(len(track.log_ratios)), verdict.outcome.value, peak])
    if sitting.settings.count:
        header = [*header[:4], "verdict (work counted)"]
    return header, rows


def write_outputs(sitting: Sitting, code: int) -> str:
    """The side result files, the comparison JSON and the Markdown table, in ``--out``; returns the table."""
    out, settings = sitting.settings.out, sitting.settings
    header, rows = table(sitting)
    counts: dict[str, int] = {}
    for track in sitting.tracks.values():
        counts[track.verdict.outcome.value] = counts.get(track.verdict.outcome.value, 0) + 1
        if track.memory is not None and track.memory.outcome is Outcome.REGRESSED:
            counts["regressed in peak memory"] = counts.get("regressed in peak memory", 0) + 1
    summary = (
        f"{', '.join(f'{n} {outcome}' for outcome, n in sorted(counts.items()))}"
        f" after {'one counting run per side' if settings.count else f'{sitting.pairs} pair(s)'}"
        f" in {format_seconds(time.monotonic() - sitting.started)} ({sitting.stop_reason}); exit {code}"
    )
    text = markdown_table(header, rows) + "\n" + summary + "\n"
    text += "".join(f"{line}\n" for line in sitting.notes())
    for key, track in sorted(sitting.tracks.items()):
        if track.operators:
            moved = "functions that moved most" if settings.count else "operators"
            text += f"\n{display_name(*key)}, {moved} (base -> head):\n\n```\n" + "\n".join(track.operators)
            text += "\n```\n" + (f"traces: {out}/traces/base, {out}/traces/head\n" if (out / "traces").is_dir() else "")
    document = {
        "schema": COMPARISON_SCHEMA,
        "by": "count" if settings.count else "time",
        "base": sitting.sides["base"].describe(),
        "head": sitting.sides["head"].describe(),
        "pytest_args": list(settings.pytest_args),
        "plan": {**asdict(settings.plan), "looks": list(settings.plan.looks), "max_minutes": settings.max_minutes},
        "plans": {test: asdict(plan) for test, plan in sorted(settings.plans.items())},
        "pairs": sitting.pairs,
        "earlier_pairs": {display_name(*key): len(ratios) for key, ratios in sorted(settings.earlier.items())},
        "seconds": time.monotonic() - sitting.started,
        "pair_seconds": [round(seconds, 1) for seconds in sitting.pair_seconds],  # a test of k pairs: its time
        "stop_reason": sitting.stop_reason,
        "exit_code": code,
        "tests": [track.to_dict() for _, track in sorted(sitting.tracks.items())],
    }
    for name, runs in sitting.runs.items():
        merged = merged_document([run.results for run in runs if run.results is not None])
        if merged is not None:
            save_results(out / f"{name}.json", merged)
    write_atomically(out / COMPARISON_FILE, encode(document))
    (out / "comparison.md").write_text(text, encoding="utf-8")
    if settings.markdown is not None:
        settings.markdown.write_text(text, encoding="utf-8")
    return text


def _progress(sitting: Sitting, elapsed: float) -> None:
    pending = len(sitting.pending())
    print(
        f"pytest-accel ab: pair {sitting.pairs} done at {format_seconds(elapsed)}; {pending} of"
        f" {len(sitting.tracks)} figure(s) still undecided",
        file=sys.stderr,
        flush=True,
    )


def _prepare_out(out: Path) -> None:
    """``--out`` holds only ab's own files: refuse a folder with anything else in it."""
    if out.exists() and not out.is_dir():
        raise ABError(f"--out {out}: exists and is not a folder")
    ours = {"base.json", "head.json", COMPARISON_FILE, "comparison.md", "runs", "empty-baselines", "traces", "counts"}
    if out.is_dir() and (foreign := sorted(p.name for p in out.iterdir() if p.name not in ours)):
        raise ABError(f"--out {out}: holds files ab did not write ({', '.join(foreign[:3])}); choose another folder")
    shutil.rmtree(out / "runs", ignore_errors=True)
    shutil.rmtree(out / "traces", ignore_errors=True)
    shutil.rmtree(out / "counts", ignore_errors=True)  # a sitting's base recording judges only its own head
    out.mkdir(parents=True, exist_ok=True)


def _check_args(settings: ABSettings) -> None:
    if any(arg in ("--accel-update", "--accel-baselines", "--accel-json") or arg.startswith(("--accel-update=",
           "--accel-baselines=", "--accel-json=")) for arg in settings.pytest_args):  # fmt: skip
        raise ABError("ab sets --accel-json and --accel-baselines itself and never updates baselines: drop them")


def sit(settings: ABSettings) -> tuple[Sitting, int, str]:
    """One sitting, its outputs written to ``settings.out``: the sitting, its exit code and its table.

    ``ABError`` when a side cannot be measured at all (its exit code says which); ``KeyboardInterrupt``
    passes through once the worktrees are removed and the child processes stopped.
    """
    _check_args(settings)
    settings = replace(settings, out=(settings.cwd / settings.out).resolve())
    _prepare_out(settings.out)
    with prepared_sides(settings) as (base, head):
        print(f"pytest-accel ab: base {base.label}\n                 head {head.label}", file=sys.stderr)
        sitting = Sitting(settings, base, head, settings.out)
        try:
            sitting.run(_progress)
            sitting.close()
            if settings.operators and not settings.count:  # counts name their functions themselves
                sitting.explain()
        finally:
            sitting.close()
        code = sitting.exit_code()
        return sitting, code, write_outputs(sitting, code)


def run_ab(settings: ABSettings) -> int:
    """The whole command; returns its exit code (see the module docstring)."""
    try:
        sitting, code, text = sit(settings)
    except KeyboardInterrupt:
        print("pytest-accel ab: interrupted; worktrees removed, child processes stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(text)
    print(f"results: {sitting.settings.out}/comparison.json, base.json, head.json", file=sys.stderr)
    return code
