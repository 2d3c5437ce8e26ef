"""The ``pytest-accel`` command: report, compare, history, archive, export, baselines, ab, bisect.

Inputs are only ever read; ``archive`` adds a file to the history folder it is given, and nothing else.
Exit codes: 0 fine; 1 ``compare``, ``ab`` or ``bisect`` found a regression; 2 a bad input (named, with why);
``ab`` also 125 (inconclusive: ``git bisect run`` skips the commit), ``bisect`` 125 when it could not tell
whether the range got slower; both 130 (interrupted).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_accel.commands.ab import ABError, ABSettings, parse_variable, run_ab
from pytest_accel.commands.absides import forget_worktrees
from pytest_accel.commands.bisect import BisectSettings, from_night, nothing_to_bisect, run_bisect
from pytest_accel.core.measurement import display_name
from pytest_accel.core.operator_table import explain
from pytest_accel.core.outcomes import Outcome
from pytest_accel.core.units import format_percent_change, format_rate
from pytest_accel.core.validation import number_text
from pytest_accel.engine.processes import run_child, watch_lifeline
from pytest_accel.engine.provenance import git_commit
from pytest_accel.judgement.baselines import BaselineStore
from pytest_accel.judgement.drift import night_drift
from pytest_accel.judgement.history import change_points
from pytest_accel.judgement.paired import SequentialPlan
from pytest_accel.judgement.policy import TOLERANCE
from pytest_accel.judgement.results import ResultFile, ResultsError, load_results
from pytest_accel.judgement.verdict import Observation, VerdictPolicy, judge_time
from pytest_accel.outputs.exports import bencher_metrics, github_action_benchmark
from pytest_accel.outputs.history_index import HistoryIndex, HistoryIndexError
from pytest_accel.outputs.history_store import (
    HistoryError,
    Night,
    Stamp,
    archive,
    by_device,
    night_of,
    result_paths,
)
from pytest_accel.outputs.pages import (
    cost_plots,
    cost_rows,
    cross_device_rows,
    html_page,
    html_table,
    markdown_table,
    operator_sections,
    pivot,
    pivot_plots,
    pivot_rows,
    test_sections,
)
from pytest_accel.outputs.plots import plot_png
from pytest_accel.storage.files import StoreError

__all__ = ["main"]


def _load_all(paths: Sequence[Path]) -> list[ResultFile]:
    return [load_results(path) for path in paths]


class OutputError(Exception):
    """An output that cannot be written, or that would overwrite an input."""


def _write(path: Path | None, text: str, inputs: Sequence[Path] = ()) -> None:
    """Write an output; never over a file this command reads, and a failure names the path."""
    if path is None:
        return
    if any(path.resolve() == source.resolve() for source in inputs):
        raise OutputError(f"{path}: is one of the inputs; this command never modifies what it reads")
    if path.is_dir():
        raise OutputError(f"{path}: is a folder; give a file name")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise OutputError(f"{path}: cannot write: {error.strerror or error}") from None
    print(f"wrote {path}", file=sys.stderr)


def cmd_report(options: argparse.Namespace) -> int:
    """Cross-device table (Markdown on stdout), optionally an HTML page with a plot per test."""
    files = _load_all(options.results)
    header, rows = cross_device_rows(files, options.reference)
    pivots = []
    for label in options.pivot:
        try:
            pivots.append(pivot(files, label))
        except ValueError as error:
            print(f"pytest-accel report: --pivot {label}: {error}", file=sys.stderr)
            return 2
    text = markdown_table(header, rows)
    if (costs := cost_rows(files, options.reference)) is not None:
        text += "\n### What a figure costs\n\n" + markdown_table(*costs)
    for table in pivots:
        text += f"\n### By {table.label}\n\n" + markdown_table(*pivot_rows(table))
    why = operator_sections(files)
    for _, heading, lines in why:
        text += f"\n### {heading}\n\n```\n{lines}\n```\n"
    _write(options.markdown, text, options.results)
    print(text)
    if options.html is not None:
        sections: list[tuple[str, str, Sequence[str]]] = [("Throughput by device", html_table(header, rows), [])]
        if costs is not None:
            sections.append(("What a figure costs", html_table(*costs), cost_plots(files)))
        for table in pivots:
            sections.append((f"By {table.label}", html_table(*pivot_rows(table)), pivot_plots(table)))
        sections += test_sections(files, why)
        written = [options.markdown] if options.markdown else []
        _write(options.html, html_page("pytest-accel report", sections), [*options.results, *written])
    return 0


def cmd_compare(options: argparse.Namespace) -> int:
    """The verdict engine on two result files: A is the reference, B the candidate."""
    before, after = _load_all([options.a, options.b])
    policy = VerdictPolicy(tolerance=options.tolerance)
    rows, regressed = [], 0
    why: list[tuple[str, list[str]]] = []  # operator diffs of the regressed, where B has a table
    for key in sorted(set(before.measurements) & set(after.measurements)):
        a, b = before.measurements[key], after.measurements[key]
        if a.disabled or b.disabled:
            continue
        if (a.timing, a.cache) != (b.timing, b.cache):  # a graph replay is not an eager figure, nor cold a warm one
            modes = f"timed {a.timing}/{a.cache} in A, {b.timing}/{b.cache} in B"
            rows.append([display_name(*key), "-", "-", "not compared", modes])
            continue
        verdict = judge_time(Observation(b.samples, b.probe_samples), Observation(a.samples, a.probe_samples), policy)
        regressed += verdict.outcome is Outcome.REGRESSED
        if verdict.outcome is Outcome.REGRESSED and b.operators is not None:
            why.append((display_name(*key), explain(a.operators, b.operators)))
        rows.append(
            [
                display_name(*key),
                f"{format_rate(a.items_per_second)} {a.unit}/s",
                f"{format_rate(b.items_per_second)} {b.unit}/s",
                f"{verdict.outcome.value} {format_percent_change(verdict.ratio or 1)}",
                verdict.reason,
            ]
        )
    only = sorted(set(before.measurements) ^ set(after.measurements))
    print(markdown_table(["test", f"A: {before.path.name}", f"B: {after.path.name}", "verdict", "why"], rows))
    if only:
        print(f"not compared (in one file only): {', '.join(k[0] for k in only)}")
    for name, lines in why:
        print(f"\n{name}:")
        print("\n".join(f"  {line}" for line in lines))
    print(f"{regressed} regressed of {len(rows)} compared")
    return 1 if regressed else 0


def _history_table(
    nights: Sequence[Night], tolerance: float, plots: bool
) -> tuple[list[list[str]], list[tuple[str, str, Sequence[str]]]]:
    """One device's rows (a row per measurement) and, with ``plots``, a plot section per figure that got slower."""
    rows: list[list[str]] = []
    sections: list[tuple[str, str, Sequence[str]]] = []
    for key in sorted({key for night in nights for key in night.figures}):
        points = [night for night in nights if key in night.figures]
        # The compared figure: time relative to the reference kernel where recorded, else seconds per call.
        values = [night.figures[key].compared for night in points]
        labels = [night.label for night in points]
        changes = change_points(values, tolerance)
        text = "; ".join(
            f"{labels[c.index]}{f' ({points[c.index].commit[:12]})' if points[c.index].commit else ''}: "
            f"{(c.ratio - 1) * 100:+.1f}% time (p={c.p_value:.1g})"
            for c in changes
        )
        name = display_name(*key)
        drift = night_drift(values, normalized=True, tolerance=tolerance)  # what --accel-history widens by
        moved = "-" if drift is None else f"{drift.spread * 100:.1f}% ({drift.nights})"
        rate = format_rate(points[-1].figures[key].items_per_second)
        rows.append([name, str(len(points)), rate, moved, text or "none"])
        if plots and any(c.ratio > 1 for c in changes):
            png = plot_png(name, {"relative time": values}, labels, "time per call (normalised)", changes)
            sections.append((f"Slower since {labels[changes[-1].index]}: {name}", "", [png]))
    return rows, sections


def _history_nights(options: argparse.Namespace) -> tuple[list[Night], list[Path]]:
    """The nights to show, from the folder or its index; and the files read (never to be written over)."""
    if options.db is None:
        if options.folder is None:
            raise OutputError("history: give a folder of result files, or --db FILE (or both)")
        paths = result_paths(options.folder)
        return [night_of(load_results(path)) for path in paths], paths
    with HistoryIndex(options.db) as index:
        if options.folder is None:
            return index.nights(), [options.db]
        done = index.refresh(options.folder)
        print(f"{options.db}: {done.read} read, {done.kept} unchanged, {done.dropped} dropped", file=sys.stderr)
        return index.nights(), [options.db, *result_paths(options.folder)]


def cmd_history(options: argparse.Namespace) -> int:
    """Trends over nightly result files (a folder, a data branch's checkout, or its index), with change points."""
    nights, inputs = _history_nights(options)
    if not nights:
        raise OutputError(f"{options.db}: indexes no nights; give the history folder to fill it")
    header = ["test", "nights", "latest items/s", "drift (SD, nights)"]
    header.append("change points (first night, commit, change, p)")
    devices = by_device(nights)
    sections: list[tuple[str, str, Sequence[str]]] = []
    for device, mine in devices.items():
        rows, plots = _history_table(mine, options.tolerance, options.html is not None)
        if len(devices) > 1:  # one device reads as before: a single table
            print(f"### {device or 'unknown device'}\n")
        print(markdown_table(header, rows))
        sections.append((f"Figures: {device}", html_table(header, rows), []))
        sections.extend(plots)
    if options.html is not None:
        _write(options.html, html_page("pytest-accel history", sections), inputs)
    return 0


def cmd_archive(options: argparse.Namespace) -> int:
    """File a result file into a history folder (a data branch's checkout); prints the path it has there."""
    recorded = load_results(options.results).provenance
    commit = options.commit or recorded.get("commit") or os.environ.get("GITHUB_SHA") or git_commit(Path.cwd())
    stamp = Stamp(
        commit=None if commit == "unknown" else commit,  # git_commit's word for "not a git checkout"
        runner=options.runner or recorded.get("runner") or os.environ.get("RUNNER_NAME") or platform.node() or None,
        run=options.run_id or recorded.get("run"),
    )
    path, written = archive(options.results, options.into, stamp)
    print(path)
    print(f"{'filed' if written else 'already filed, identical'}: {path}", file=sys.stderr)
    return 0


def cmd_export(options: argparse.Namespace) -> int:
    """A result file as github-action-benchmark's custom JSON or Bencher's metric format."""
    result = load_results(options.results)
    if options.format == "bencher":
        document: object = bencher_metrics(result)
    else:
        document = github_action_benchmark(result, bigger_is_better=options.format == "gab-bigger")
    if not document:
        raise OutputError(f"{options.results}: no timed measurement to export")
    text = json.dumps(document, indent=2) + "\n"
    if options.output is None:
        print(text, end="")
    else:
        _write(options.output, text, [options.results])
    return 0


def cmd_baselines(options: argparse.Namespace) -> int:
    """``show``: every baseline file with its entries; ``prune``: pytest --accel-prune with the given args."""
    if options.action == "prune":
        command = [sys.executable, "-m", "pytest", "--accel-prune", *options.pytest_args]
        code = run_child(command, Path.cwd(), os.environ, None, stdin=None).returncode
        assert code is not None  # no timeout
        return code
    store = BaselineStore(options.root)
    if options.root.exists() and not options.root.is_dir():
        raise StoreError(f"{options.root}: is a file, not a baseline folder")
    if not options.root.is_dir():
        raise StoreError(f"{options.root}: no such baseline folder")
    code = 0
    for path in store.files():
        try:
            entries = store.load(*store.identify(path))
        except StoreError as error:  # name every bad file, and still show the good ones
            print(f"pytest-accel: {error}", file=sys.stderr)
            code = 2
            continue
        print(f"{path}: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}")
        for (test, metric), entry in sorted(entries.items()):
            rate, when = format_rate(entry.items_per_second), entry.provenance.get("date", "?")
            print(f"  {test} [{metric}]: {rate} {entry.unit}/s, {len(entry.run_medians)} run(s), {when}")
    return code


def _sitting_options(options: argparse.Namespace) -> dict[str, object]:
    """The options ``ab`` and ``bisect`` share, checked: the plan of a sitting and how each run is timed."""
    try:
        plan = SequentialPlan(options.tolerance, options.alpha, options.min_pairs, options.max_pairs)
    except ValueError as error:
        raise ABError(str(error)) from None
    if not (math.isfinite(options.max_minutes) and options.max_minutes > 0):
        raise ABError(f"--max-minutes must be a positive number, got {options.max_minutes}")
    if options.measure_seconds is not None and not (
        math.isfinite(options.measure_seconds) and options.measure_seconds > 0
    ):
        raise ABError(f"--measure-seconds must be a positive number, got {options.measure_seconds}")
    if options.min_rounds < 1:
        raise ABError(f"--min-rounds must be at least 1, got {options.min_rounds}")
    if options.reuse < 1:
        raise ABError(f"--reuse must be at least 1 (a fresh process every run), got {options.reuse}")
    return {
        "plan": plan,
        "max_minutes": options.max_minutes,
        "out": options.out,
        "markdown": options.markdown,
        "operators": not options.no_operators,
        "reuse": options.reuse,
        "min_rounds": options.min_rounds,
        "measure_seconds": options.measure_seconds,
        "count": options.count,
    }


def _stopped_by_sigterm(command: Callable[[], int], name: str) -> int:
    """Run ``command`` with SIGTERM as Ctrl-C (a cancelled CI job ends like one: nothing left behind)."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return command()
    except KeyboardInterrupt:
        print(f"pytest-accel {name}: interrupted; worktrees removed, child processes stopped", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_ab(options: argparse.Namespace) -> int:
    """Base and head as alternating pytest runs, paired, until the answer is clear."""
    settings = ABSettings(
        pytest_args=tuple(options.pytest_args),
        base=options.base,
        head=options.head,
        base_python=options.base_python,
        base_env=tuple(options.base_env),
        head_python=options.head_python,
        **_sitting_options(options),  # type: ignore[arg-type]
    )
    return _stopped_by_sigterm(lambda: run_ab(settings), "ab")


def cmd_bisect(options: argparse.Namespace) -> int:
    """The first commit of a range that made the selection slower, by ab sittings."""
    shared = _sitting_options(options)
    if not (math.isfinite(options.step_minutes) and options.step_minutes > 0):
        raise ABError(f"--step-minutes must be a positive number, got {options.step_minutes}")
    if options.tries < 1:
        raise ABError(f"--tries must be at least 1, got {options.tries}")
    if options.good is not None and options.good_from is not None:
        raise ABError("give one of --good REV and --good-from HISTORY")
    if options.good_from is not None and options.regressed_in is None:
        raise ABError("--good-from needs --regressed-in: that night's regressed tests say which night was good")
    settings = BisectSettings(
        pytest_args=tuple(options.pytest_args),
        good=options.good or "",
        bad=options.bad,
        step_minutes=options.step_minutes,
        tries=options.tries,
        json=options.json,
        **shared,  # type: ignore[arg-type]
    )
    if options.regressed_in is not None:
        night = from_night(settings, options.regressed_in, options.good_from)
        if isinstance(night, str):
            return nothing_to_bisect(settings, night)
        settings = night
    if not settings.good:
        raise ABError("give --good REV, or --good-from HISTORY with --regressed-in RESULTS")
    return _stopped_by_sigterm(lambda: run_bisect(settings), "bisect")


def _add_history_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``history``, ``archive`` and ``export``: the nightly history, its filing, and the dashboards' formats."""
    history = commands.add_parser(
        "history",
        help="trends and change points over nightly result files",
        description="Reads every result file under FOLDER (at any depth: a data branch's checkout), a table"
        " per device. With --db, through an SQLite index of the folder, refreshed for new or changed files.",
    )
    history.add_argument("folder", type=Path, nargs="?", help="the history folder (optional with --db)")
    history.add_argument("--db", type=Path, metavar="FILE", help="an SQLite index of the folder, made if absent")
    history.add_argument("--tolerance", type=_tolerance, default=TOLERANCE)
    history.add_argument("--html", type=Path)
    history.set_defaults(run=cmd_history)
    filing = commands.add_parser(
        "archive",
        help="file a result file into a history folder: FOLDER/<device key>/<date>-<commit>-<run>.json",
        description="Validates the file, adds the commit, runner and run to its provenance, and writes it"
        " atomically under a lock; the identical file already there is a no-op, a different one an error"
        " (exit 2). Prints the path it was filed under.",
    )
    filing.add_argument("results", type=Path, help="an --accel-json file")
    filing.add_argument("--into", type=Path, required=True, metavar="FOLDER", help="the history folder")
    filing.add_argument("--commit", help="the commit measured (default: recorded, $GITHUB_SHA, or git HEAD here)")
    filing.add_argument("--runner", help="the machine (default: recorded, $RUNNER_NAME, or the host name)")
    filing.add_argument("--run-id", help="the CI run, e.g. id-attempt (default: recorded, or a hash of the file)")
    filing.set_defaults(run=cmd_archive)
    export = commands.add_parser("export", help="a result file for github-action-benchmark or Bencher")
    export.add_argument(
        "--format",
        required=True,
        choices=["gab-bigger", "gab-smaller", "bencher"],
        help="gab-bigger: customBiggerIsBetter (items/s); gab-smaller: customSmallerIsBetter (ms/call);"
        " bencher: Bencher Metric Format (throughput, latency in ns, peak-memory)",
    )
    export.add_argument("results", type=Path, help="an --accel-json file")
    export.add_argument("--output", type=Path, help="write here (default: standard output)")
    export.set_defaults(run=cmd_export)


def _add_sitting_options(parser: argparse.ArgumentParser, out: str, max_pairs: int, max_minutes: float) -> None:
    """The options of a sitting, for ``ab`` and ``bisect`` alike."""
    parser.add_argument(
        "--tolerance", type=_tolerance, default=TOLERANCE, help=f"changes smaller than this are unchanged ({TOLERANCE})"
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=0.02,
        help="chance over the whole sitting that a test's interval misses its true ratio; an unchanged "
        "test is called regressed in about half of it (0.02: simulated, at most 0.83%% of sittings)",
    )
    parser.add_argument("--min-pairs", type=int, default=3, help="pairs before the first look (3)")
    parser.add_argument("--max-pairs", type=int, default=max_pairs, help=f"pairs at most ({max_pairs})")
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=max_minutes,
        help=f"wall-time budget; no pair (bisect: no sitting) starts past it ({max_minutes:g})",
    )
    parser.add_argument("--out", type=Path, default=Path(out), help=f"folder for results ({out})")
    parser.add_argument("--markdown", type=Path, help="also write the answer (Markdown) here: a CI job page")
    parser.add_argument(
        "--measure-seconds",
        type=float,
        default=None,
        help="timed budget per test and run (accel_measure_seconds, over the project's; default: the project's."
        " 0.3 s made the PR selection's pairs noisier, not faster to decide)",
    )
    parser.add_argument(
        "--min-rounds",
        type=int,
        default=10,
        help="timed rounds per test and run at least (accel_min_rounds; 10: a run's median of fewer rounds of a "
        "long call was as noisy as the processes themselves)",
    )
    parser.add_argument(
        "--reuse",
        type=int,
        default=5,
        help="runs of the selection per side's process before a fresh one: imports are paid once per process"
        " (5; 1: a fresh process every run)",
    )
    parser.add_argument(
        "--count",
        action="store_true",
        help="decide by the work counted (instructions under callgrind, --accel-count), not by time: one run per"
        " side, the base's counts recorded and the head's judged, each test decided at once (CPU; needs valgrind)",
    )
    parser.add_argument(
        "--no-operators",
        action="store_true",
        help="skip the profiling run per side that says which operators a regressed test changed",
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: the pytest arguments, the same for both sides")


def _add_ab_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``ab``: two builds measured in one sitting."""
    ab = commands.add_parser(
        "ab",
        help="compare two builds in one sitting (exit 0 no regression, 1 regression, 125 inconclusive)",
        description="Runs the pytest selection after -- in both builds, alternately (ABBA), each side in a "
        "process renewed every --reuse runs, "
        "pairs their figures, and stops when every test is clearly regressed, improved or unchanged, "
        "or the budget ends. Composes with git bisect run.",
    )
    ab.add_argument("--base", metavar="REV", help="the reference build: a git revision, checked out in a worktree")
    ab.add_argument("--head", metavar="REV", help="the candidate: a git revision (default: the working tree as is)")
    ab.add_argument("--base-python", metavar="PATH", help="instead of --base: the same tree run by this interpreter")
    ab.add_argument(
        "--head-python", metavar="PATH", help="the head's interpreter (default: the one running ab; with --base-python"
        " from a third, neither environment's start-up files reach the other's runs)",
    )  # fmt: skip
    ab.add_argument(
        "--base-env", metavar="NAME=VALUE", action="append", type=parse_variable, default=[],
        help="instead of --base (or beside --base-python): the same tree with this variable set for the base's runs"
        " (repeatable): a library build, a kernel switch, a thread count A/B'd in one sitting",
    )  # fmt: skip
    _add_sitting_options(ab, ".pytest-accel-ab", max_pairs=40, max_minutes=15.0)
    ab.set_defaults(run=cmd_ab)


def _add_bisect_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``bisect``: the commit of a range that made the selection slower."""
    bisect = commands.add_parser(
        "bisect",
        help="find the commit that made tests slower (exit 0 none, 1 found or narrowed, 125 undecided)",
        description="Measures --bad against --good (an ab sitting), then searches the first-parent commits "
        "between them for each test that got slower: every step an ab sitting against the good commit (or a culprit "
        "already found, for the rest of a change), "
        "an undecided step measured again for longer, a commit that cannot be measured skipped and named. "
        "Each culprit is then measured against its parent, with the operators that changed.",
    )
    bisect.add_argument("--good", metavar="REV", help="a commit where the tests were fast")
    bisect.add_argument("--bad", metavar="REV", default="HEAD", help="a commit where they were slower (HEAD)")
    bisect.add_argument(
        "--regressed-in", type=Path, metavar="RESULTS", help="bisect the tests this --accel-json file calls regressed"
    )
    bisect.add_argument(
        "--good-from",
        type=Path,
        metavar="HISTORY",
        help="instead of --good: the commit of the newest night in this history folder, on the same device and "
        "before --regressed-in's, that measured those tests without a regression",
    )
    bisect.add_argument("--step-minutes", type=float, default=10.0, help="a step's first sitting at most (10)")
    bisect.add_argument(
        "--tries",
        type=int,
        default=3,
        help="sittings per step while tests stay undecided, each twice as long and carrying on the pairs before (3)",
    )
    bisect.add_argument("--json", type=Path, help="also write the answer as JSON here")
    _add_sitting_options(bisect, ".pytest-accel-bisect", max_pairs=20, max_minutes=120.0)
    bisect.set_defaults(run=cmd_bisect)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-accel", description="Reports and comparisons of pytest-accel results")
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser("report", help="cross-device table (Markdown) and an HTML page with plots")
    report.add_argument("results", nargs="+", type=Path, help="--accel-json files, one per device")
    report.add_argument("--reference", help="device key the ratios are relative to")
    report.add_argument("--markdown", type=Path)
    report.add_argument("--html", type=Path)
    report.add_argument(
        "--pivot",
        action="append",
        default=[],
        metavar="LABEL",
        help="also a table with a column per value of this throughput() keyword (e.g. workers); repeatable",
    )
    report.set_defaults(run=cmd_report)
    compare = commands.add_parser("compare", help="verdicts of B against A (exit 1 on a regression)")
    compare.add_argument("a", type=Path)
    compare.add_argument("b", type=Path)
    compare.add_argument("--tolerance", type=_tolerance, default=TOLERANCE)
    compare.set_defaults(run=cmd_compare)
    _add_history_commands(commands)
    baselines = commands.add_parser("baselines", help="show the baseline store, or prune stale entries")
    actions = baselines.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help="every baseline file with its entries")
    show.add_argument("--root", type=Path, default=Path("baselines"), help="the baseline folder (default: baselines)")
    show.set_defaults(run=cmd_baselines)
    prune = actions.add_parser("prune", help="pytest --accel-prune with the given pytest arguments")
    prune.add_argument("pytest_args", nargs=argparse.REMAINDER, help="the pytest arguments")
    prune.set_defaults(run=cmd_baselines)
    _add_ab_command(commands)
    _add_bisect_command(commands)
    return parser


def _tolerance(text: str) -> float:
    """An option's relative tolerance: a finite number >= 0 (argparse names the option and exits 2)."""
    try:
        return number_text(text, zero_allowed=True)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error} ({TOLERANCE} is {TOLERANCE:.0%})") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``pytest-accel`` and ``python -m pytest_accel``."""
    # Started by a pytest-accel run (a sitting beside the recorded build): end with it, however it ends.
    watch_lifeline(on_end=forget_worktrees)
    arguments = list(sys.argv[1:] if argv is None else argv)
    passed: list[str] = []
    if arguments[:1] in (["ab"], ["bisect"]) and "--" in arguments:  # everything after -- belongs to pytest, untouched
        cut = arguments.index("--")
        arguments, passed = arguments[:cut], arguments[cut + 1 :]
    options = _parser().parse_args(arguments)
    if options.command in ("ab", "bisect"):
        if options.pytest_args:
            stray = " ".join(options.pytest_args)
            print(f"pytest-accel {options.command}: put the pytest arguments after --: {stray}", file=sys.stderr)
            return 2
        options.pytest_args = passed
    try:
        return int(options.run(options))
    except (ResultsError, StoreError, OutputError, HistoryError, HistoryIndexError) as error:
        print(f"pytest-accel: {error}", file=sys.stderr)
        return 2
    except ABError as error:
        print(f"pytest-accel {options.command}: {error}", file=sys.stderr)
        return error.exit_code
