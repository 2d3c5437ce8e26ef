"""Human-readable renderings of measurements: the end-of-run terminal table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_accel.core.energy import Energy
from pytest_accel.core.measurement import display_name, mode_note, short_names
from pytest_accel.core.outcomes import Abstention, Cause, Outcome
from pytest_accel.core.stats import median
from pytest_accel.core.units import (
    format_bytes,
    format_joules,
    format_percent_change,
    format_rate,
    format_seconds,
    percent_of_peak,
)
from pytest_accel.judgement.drift import MIN_NIGHTS, UNSETTLED, NightDrift
from pytest_accel.judgement.gate import Waited
from pytest_accel.judgement.recorded_build import RecordedWord
from pytest_accel.judgement.results import Recorded
from pytest_accel.judgement.verdict import VerdictRecord

__all__ = [
    "benchmark_skip_line", "device_lines", "history_line", "measurement_table", "orphan_lines", "verdict_cell",
    "verdict_summary", "waiting_line",
]  # fmt: skip

_HEADERS = ("test", "device", "throughput", "spread", "latency", "TFLOP/s", "% peak", "peak mem")
# Columns a table has where one of its figures has them (plugin/finish.py and engine/energy.py put them in
# ``extra``): its energy (a counter was read), its price (a price per hour was set), its roofline (FLOPs and bytes).
_COLUMNS = {"energy": ("J/item", "W", "items/s/W"), "cost": ("items/$",), "roofline": ("% roof", "bound")}


def _energy(extra: Mapping[str, Any]) -> Energy | None:
    data = extra.get("energy")
    return Energy.from_json(data) if isinstance(data, Mapping) else None


def _has(column: str, extra: Mapping[str, Any]) -> bool:
    if column == "energy":
        return (energy := _energy(extra)) is not None and energy.measured
    data = extra.get(column)
    return isinstance(data, Mapping) and ("items_per_dollar" in data or "bound" in data)


def _cells(column: str, extra: Mapping[str, Any]) -> tuple[str, ...]:
    """The cells of one optional column group; dashes where this figure has none."""
    if not _has(column, extra):
        return ("-",) * len(_COLUMNS[column])
    if column == "energy":
        energy = _energy(extra)
        assert energy is not None and energy.joules_per_item is not None and energy.watts is not None
        return format_joules(energy.joules_per_item), f"{energy.watts:.3g}", format_rate(1 / energy.joules_per_item)
    data = extra[column]
    if column == "cost":
        return (format_rate(float(data["items_per_dollar"])),)
    return f"{float(data['percent_of_roof']):.0f}%", str(data["bound"])


def _row(record: Recorded, columns: Sequence[str]) -> tuple[str, ...]:
    m = record.measurement
    test = display_name(record.test, m.name)
    extra = tuple(cell for column in columns for cell in _cells(column, m.extra))
    if m.disabled:
        structure = record.verdict.structure if record.verdict is not None else None
        if structure is not None:  # --accel-structure-only: what ran was judged, not time
            untimed = ("untimed", "-", "-", "-", "-", "-", *extra, f"structure {structure.outcome.value}")
            return (test, m.device_key, *untimed)
        return (test, m.device_key, "disabled", "-", "-", "-", "-", "-", *extra, "-")
    tflops = m.tflops
    return (
        test,
        m.device_key,
        f"{format_rate(m.items_per_second)} {m.unit}/s",
        f"±{m.spread * 100:.1f}%" + ("" if m.warmup_settled else " (warm-up unsettled)"),
        format_seconds(m.seconds_per_call) + (f" ({note})" if (note := mode_note(m)) else ""),
        "-" if tflops is None else f"{tflops:.3g}",
        percent_of_peak(m.extra),
        format_bytes(m.peak_memory_bytes),
        *extra,
        verdict_cell(record.verdict),
    )


def _unmeasured_lines(records: Sequence[Recorded]) -> list[str]:
    """Why figures have no energy (or no price), each reason once with how many figures it kept from one."""
    said: Counter[str] = Counter()
    for record in records:
        energy = _energy(record.measurement.extra)
        if energy is not None and energy.not_measured is not None:
            said[f"energy not measured: {energy.not_measured}"] += 1
        cost = record.measurement.extra.get("cost")
        if isinstance(cost, Mapping) and isinstance(why := cost.get("not_priced"), str):
            said[f"not priced: {why}"] += 1
    return [f"accel: {reason} ({n} figure{'s' * (n != 1)})" for reason, n in said.items()]


def verdict_cell(verdict: VerdictRecord | None) -> str:
    """``unchanged +1.2%``, ``regressed +17.0% (memory)``, ``new``; ``-`` when not judged."""
    if verdict is None:
        return "-"
    cell = verdict.outcome.value
    if verdict.structure is not None and verdict.structure.outcome is Outcome.CHANGED:
        cell += " (structure)" if verdict.structure.fails else " (structure changed: warned)"
    if verdict.time.ratio is not None:
        cell += f" {format_percent_change(verdict.time.ratio)}"
    if verdict.memory is not None and verdict.memory.outcome is Outcome.REGRESSED:
        cell += " (memory)"
    elif verdict.energy is not None and verdict.energy.outcome is Outcome.REGRESSED:
        cell += " (energy)"
    elif verdict.outcome in (Outcome.UNCHANGED, Outcome.NOISY) and verdict.time.detectable is not None:
        cell += f" (sees {verdict.time.detectable * 100:.0f}%)"  # the smallest slowdown it could have called
    return cell


def _aligned(rows: Sequence[tuple[str, ...]]) -> Iterable[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        yield "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()


_HINTS = {
    "new": "no baseline for {where}: record one with `pytest <same args> --accel-update`",
    "improved": "faster than the baseline: refresh it with `pytest <same args> --accel-update`",
    "noisy": "the machine was too unsteady to judge (passes; --accel-strict fails it)",
    "regressed": "slower (or fatter) than the baseline, confirmed by re-measurement: see the failures above",
}


def verdict_summary(records: Sequence[Recorded], where: str, updating: bool) -> list[str]:
    """One line per verdict kind that occurred, with what to do about it; a figure that was not judged
    (noisy, or new for another reason than a missing baseline) gets a row saying why."""
    counts: dict[str, int] = {}
    for record in records:
        if record.verdict is not None and not record.measurement.disabled:
            outcome = record.verdict.time.outcome.value
            if record.verdict.outcome is Outcome.REGRESSED:
                outcome = Outcome.REGRESSED.value
            counts[outcome] = counts.get(outcome, 0) + 1
    explained = () if updating else (Outcome.NOISY.value, Outcome.NEW.value)  # said by their own lines
    lines = [] if updating else _disabled_lines(records) + _noisy_lines(records, counts) + _new_lines(records, where)
    lines += [
        f"accel: {count} {outcome}" + (f": {_HINTS[outcome].format(where=where)}" if outcome in _HINTS else "")
        for outcome, count in sorted(counts.items())
        if outcome not in explained
    ]
    lines += _moved_lines(records) + _sight_lines(records) + _structure_lines(records, updating)
    lines += _count_lines(records, updating)
    if updating and lines:
        lines.append("accel: recording (--accel-update, --accel-calibrate): verdicts are reported, not enforced")
    return lines


def _disabled_lines(records: Sequence[Recorded]) -> list[str]:
    """Figures never measured: pytest-benchmark's ``--benchmark-disable`` turned timing off (often from addopts,
    to keep benchmarks out of a normal run). Not a pass: nothing was judged."""
    disabled = sum(1 for record in records if record.measurement.disabled)
    if not disabled:
        return []
    return [
        f"accel: NOT JUDGED: {disabled} figure{'s' if disabled > 1 else ''} not measured: timing is disabled "
        "(--benchmark-disable, on the command line, in PYTEST_ADDOPTS or in addopts): a slowdown there would pass "
        "unseen; --accel-strict fails them"
    ]


def benchmark_skip_line(skipped: int) -> str:
    """Perf tests pytest-benchmark's ``--benchmark-skip`` skipped: none was measured, none judged."""
    return (
        f"accel: NOT JUDGED: {skipped} perf test{'s' if skipped > 1 else ''} skipped by --benchmark-skip "
        "(pytest-benchmark's option: on the command line, in PYTEST_ADDOPTS or in addopts): a slowdown there would "
        "pass unseen; --accel-strict refuses it"
    )


def _moved_lines(records: Sequence[Recorded]) -> list[str]:
    """The figures the stored baseline read slower and their recorded build, measured beside them, did not:
    not the code; the host moved (which the baseline should learn: a sitting is held only in the recordings'
    own environment, judgement/recorded_build.py). Where other
    operators ran than at the recordings, not the host: a host does not change what runs, so recording
    again would bury a change of the environment (a variable, a plugin, a library)."""
    moved = [r for r in records if r.verdict is not None and (r.verdict.host_moved or r.verdict.environment_moved)]
    if not moved:
        return []
    names = short_names([display_name(r.test, r.measurement.name) for r in moved])
    rows = [(_ran_other(r.verdict), _moved_row(name, r.verdict)) for r, name in zip(moved, names, strict=True)]
    lines = []
    if host := [row for ran_other, row in rows if not ran_other]:
        said = f"accel: {len(host)} slower than the stored figure, not than the recorded build beside it: not the code"
        lines += [said, _HOST_OR_LIBRARY, *host]
    if other := [row for ran_other, row in rows if ran_other]:
        lines += [
            f"accel: {len(other)} slower than the stored figure and its recorded build alike, yet other operators ran:",
            "accel:   not the host: the environment changed (a variable, a plugin, a library): regressed,"
            " see what ran:",
            *other,
        ]
    return lines


_HOST_OR_LIBRARY = (
    "accel:   the host moved since the recordings (the environment is as recorded): record again (--accel-update):"
)


def _ran_other(verdict: VerdictRecord | None) -> bool:
    return verdict is not None and verdict.ran_other


def _moved_row(name: str, verdict: VerdictRecord | None) -> str:
    ratio = None if verdict is None else verdict.time.ratio
    return f"accel:     {name}" + ("" if ratio is None else f"  {format_percent_change(ratio)}")


# Rows of unjudged figures the summary prints; the rest are counted (every reason is in --accel-json).
_REASONS_SHOWN = 10
# A summary line's width: a longer row says its reason on a line of its own.
_WIDTH = 120


def _unjudged(records: Sequence[Recorded], outcome: Outcome) -> list[Recorded]:
    return [
        r for r in records if r.verdict is not None and not r.measurement.disabled and r.verdict.time.outcome is outcome
    ]


def _rows(unjudged: Sequence[Recorded], lead: str) -> list[str]:
    """The figures not judged, grouped by what would let them be judged (``lead`` + that), one row each:
    the name, the change it read when there was one, why, in columns; the first ``_REASONS_SHOWN``."""
    shown = unjudged[:_REASONS_SHOWN]
    names = short_names([display_name(r.test, r.measurement.name) for r in shown])
    # By the rule that abstained and its remedy (one rule may advise per figure: the commit, the setting to restore).
    groups: dict[tuple[Cause, str], tuple[str, list[tuple[str, str, str]]]] = {}
    for record, name in zip(shown, names, strict=True):
        assert record.verdict is not None
        time = record.verdict.time
        short = time.abstention or Abstention(_clipped(time.reason), "see --accel-json", cause=Cause.UNNAMED)
        change = "" if time.ratio is None else format_percent_change(time.ratio)
        groups.setdefault((short.cause, short.remedy), (short.remedy, []))[1].append((name, change, short.why))
    rows = [row for _, group in groups.values() for row in group]
    name_width = max(len(name) for name, _, _ in rows)
    change_width = max(len(change) for _, change, _ in rows)
    lines = []
    for remedy, group in groups.values():
        lines.append(f"accel:   {lead}{remedy}:")
        for name, change, why in group:
            row = f"accel:     {name.ljust(name_width)}" + (f"  {change.rjust(change_width)}" if change_width else "")
            lines += [f"{row}  {why}"] if len(row) + 2 + len(why) <= _WIDTH else [row.rstrip(), f"accel:       {why}"]
    if len(unjudged) > _REASONS_SHOWN:
        lines.append(f"accel:   and {len(unjudged) - _REASONS_SHOWN} more (every reason is in --accel-json)")
    return lines


def _clipped(reason: str, width: int = 80) -> str:
    return reason if len(reason) <= width else reason[: width - 3] + "..."


def _noisy_lines(records: Sequence[Recorded], counts: Mapping[str, int]) -> list[str]:
    """When figures could not be judged: an abstention is not a pass, so the first line says what it
    costs, and a row each says why (the rule that abstained and its figure), under what would help."""
    noisy, total = counts.get("noisy", 0), sum(counts.values())
    if not noisy:
        return []
    judged = total - noisy - counts.get("new", 0)
    head = (
        f"accel: NOT JUDGED: {noisy} of {total} figures (noisy), {judged} judged: a slowdown there would pass unseen; "
        "--accel-strict fails them"
    )
    return [head, *_rows(_unjudged(records, Outcome.NOISY), "to judge these, ")]


def _new_lines(records: Sequence[Recorded], where: str) -> list[str]:
    """New figures: those without a baseline in one line; those whose baseline is not comparable a row each."""
    new = _unjudged(records, Outcome.NEW)
    other = [
        r for r in new if (short := r.verdict and r.verdict.time.abstention) and short.cause is not Cause.NO_BASELINE
    ]
    lines = []
    if missing := len(new) - len(other):
        lines.append(f"accel: {missing} new: {_HINTS['new'].format(where=where)}")
    if other:
        lines.append(f"accel: {len(other)} new: not compared with the baseline (other hardware, workload or mode)")
        lines += _rows(other, "to judge these, ")
    return lines


# The slowdown the summary counts verdicts against: what a kernel developer wants to see.
_SIGHT = 0.10


def _sight_lines(records: Sequence[Recorded]) -> list[str]:
    """How many verdicts could have seen a ``_SIGHT`` slowdown ("unchanged" is not "within the tolerance" on
    a noisy machine), and what limited the others (judgement/sight.py), so the remedy is the right one."""
    judged = [r.verdict.time for r in records if r.verdict is not None and r.verdict.time.detectable is not None]
    if not judged:
        return []
    blind = sorted((v for v in judged if (v.detectable or 0.0) > _SIGHT), key=lambda v: v.detectable or 0.0)
    line = f"accel: {len(judged) - len(blind)} of {len(judged)} judged figures could see a {_SIGHT:.0%} slowdown"
    if blind:
        smallest, largest = f"{(blind[0].detectable or 0) * 100:.0f}%", f"{(blind[-1].detectable or 0) * 100:.0f}%"
        sight = smallest if smallest == largest else f"{smallest}-{largest}"
        causes = Counter(v.sight for v in blind)  # None: the tolerance set the sight
        limits = ", ".join(
            f"{'its tolerance' if cause is None else cause.value} ({count})"
            for cause, count in sorted(causes.items(), key=lambda c: -c[1])
        )
        line += f"; {len(blind)} only {sight} or more, limited by {limits}"
    return [line]


def _structure_lines(records: Sequence[Recorded], updating: bool) -> list[str]:
    """How many structural records were unchanged, changed or new: counts, judged without noise."""
    counts: dict[str, int] = {}
    for record in records:
        structure = record.verdict.structure if record.verdict is not None else None
        if structure is not None:
            counts[structure.outcome.value] = counts.get(structure.outcome.value, 0) + 1
    if not counts:
        return []
    line = "accel: what ran: " + ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items()))
    if counts.get("changed") and not updating:
        line += " (a different set of operations ran: see the failures or warnings above)"
    if counts.get("new") and not updating:
        line += "; new: record with `pytest <same args> --accel-update`"
    return [line]


def _count_lines(records: Sequence[Recorded], updating: bool) -> list[str]:
    """How many counts of the work were unchanged, regressed, improved or new, exactly; and loudly, those
    asked for and not counted, with why (an abstention, not a pass)."""
    counts: dict[str, int] = {}
    missing: list[str] = []
    for record in records:
        count = record.verdict.count if record.verdict is not None else None
        if count is not None and count.outcome is Outcome.ERROR:
            missing.append(count.reason)
        elif count is not None:
            counts[count.outcome.value] = counts.get(count.outcome.value, 0) + 1
    lines = []
    if missing:
        lines.append(f"accel: NOT JUDGED: the work of {len(missing)} measurement(s): {missing[0]}")
    if counts:
        line = "accel: work counted: " + ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items()))
        if counts.get("new") and not updating:
            line += "; new: record with `pytest <same args> --accel-count --accel-update`"
        lines.append(line)
    return lines


def waiting_line(waits: Sequence[Waited], budget: float) -> list[str]:
    """What waiting for quiet did in this run: how long, for how many figures, and how many it judged."""
    if not waits:
        return []
    seconds = sum(w.seconds for w in waits)
    judged = [w for w in waits if w.outcome is not None and w.outcome is not Outcome.NOISY]
    figures = f"{len(waits)} figure{'s' if len(waits) > 1 else ''}"
    line = (
        f"accel: waited {seconds:.0f} s of {budget:.0f} for quiet ({figures} not judged): {len(judged)} judged after it"
    )
    if stayed := len(waits) - len(judged):
        line += f", {stayed} still noisy"
    return [line]


def sittings_line(sittings: Sequence[RecordedWord], budget_minutes: float) -> list[str]:
    """What the sittings beside recorded builds did in this run: how many, how long, and what they said."""
    if not sittings:
        return []
    minutes = sum(sitting.seconds for sitting in sittings) / 60
    said = Counter(sitting.verdict.outcome.value if sitting.verdict else "no answer" for sitting in sittings)
    figures = f"{len(sittings)} figure{'s' if len(sittings) > 1 else ''}"
    return [
        f"accel: measured {figures} beside the recorded build in {minutes:.1f} minutes of {budget_minutes:g}: "
        + ", ".join(f"{n} {outcome}" for outcome, n in sorted(said.items()))
    ]


def measurement_table(records: Sequence[Recorded]) -> list[str]:
    """The end-of-run table: one row per measurement; spread is IQR / median."""
    columns = [column for column in _COLUMNS if any(_has(column, r.measurement.extra) for r in records)]
    header = (*_HEADERS, *(name for column in columns for name in _COLUMNS[column]), "verdict")
    rows = [header, *(_row(r, columns) for r in records)]
    return [*_aligned(rows), *_unmeasured_lines(records)]


def device_lines(kind: str, key: str, profile: str, provenance: Mapping[str, str]) -> list[str]:
    """The run's header lines: the device, its key, the profile and the device's provenance."""
    described = ", ".join(f"{k}={v}" for k, v in provenance.items())
    return [f"accel: device {kind} (key {key}), profile {profile}", f"accel: {described}"]


def history_line(folder: object, key: str, drifts: Mapping[tuple[str, str], NightDrift]) -> str:
    """The header line of ``--accel-history``: how many figures have a drift between nights there, and how large."""
    if not drifts:
        nights = MIN_NIGHTS + UNSETTLED
        return f"accel: history {folder}: no figure of {key} has {nights} nights at one level yet; no bound widened"
    spreads = [drift.spread for drift in drifts.values()]
    typical, widest = median(spreads), max(spreads)
    return (
        f"accel: history {folder}: drift between nights known for {len(drifts)} figure(s) of {key} "
        f"(SD median {typical * 100:.1f}%, largest {widest * 100:.1f}%): none is judged narrower than it drifts"
    )


def orphan_lines(orphans: Sequence[tuple[str, tuple[str, ...]]]) -> list[str]:
    """Baselines left behind (``judgement.recording.orphaned_tests``): a test that no longer exists has entries
    while a new test of its file has none, so neither is judged."""
    if not orphans:
        return []
    lines = [
        f"accel: {len(orphans)} baseline{'s' if len(orphans) > 1 else ''} left behind: no such test ran (renamed, or "
        "its parametrization changed?) while a new test of its file has none:"
    ]
    for orphan, new in orphans[:_REASONS_SHOWN]:
        named = ", ".join(test.rpartition("::")[2] for test in new)
        lines.append(f"accel:   {orphan.rpartition('::')[2]}  (new in its file: {named})")
    if len(orphans) > _REASONS_SHOWN:
        lines.append(f"accel:   and {len(orphans) - _REASONS_SHOWN} more (--accel-stale lists them)")
    lines.append("accel:   rename its entries in the baseline file, or drop them: pytest <same args> --accel-prune")
    return lines
