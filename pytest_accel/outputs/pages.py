"""Markdown and HTML renderings of result files: cross-device tables, comparisons, history plots."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_accel.core.energy import of_result
from pytest_accel.core.measurement import Measurement, display_name, mode_note, short_names
from pytest_accel.core.outcomes import Outcome
from pytest_accel.core.units import format_rate, percent_of_peak
from pytest_accel.judgement.results import Recorded, ResultFile
from pytest_accel.outputs.plots import plot_png
from pytest_accel.outputs.terminal import verdict_cell

__all__ = [
    "Pivot",
    "column_labels",
    "cost_plots",
    "cost_rows",
    "cross_device_rows",
    "html_page",
    "html_table",
    "markdown_table",
    "operator_sections",
    "pivot",
    "pivot_plots",
    "pivot_rows",
    "run_summary_markdown",
    "test_sections",
]

Key = tuple[str, str]


def cross_device_rows(files: Sequence[ResultFile], reference: str | None) -> tuple[list[str], list[list[str]]]:
    """Header and rows: one row per test, one column per device (items/s), then ratios to ``reference``.

    The shape of the studies' tables ("Gaudi 2 1.5x H100 at batch 16").
    """
    devices = column_labels(files)
    keys = sorted({key for f in files for key in f.measurements})
    header = ["test", *devices]
    others = [d for d in devices if d != reference] if reference in devices else []
    header += [f"{d} / {reference}" for d in others]
    rows = []
    for key in keys:
        rates = {label: f.measurements[key] for label, f in zip(devices, files, strict=True) if key in f.measurements}
        row = [display_name(*key)]
        for device in devices:
            m = rates.get(device)
            row.append("-" if m is None or m.disabled else f"{format_rate(m.items_per_second)} {m.unit}/s")
        for device in others:
            mine, theirs = rates.get(device), rates.get(reference or "")
            ok = mine is not None and theirs is not None and not (mine.disabled or theirs.disabled)
            row.append(f"{mine.items_per_second / theirs.items_per_second:.2f}x" if ok else "-")  # type: ignore[union-attr]
        rows.append(row)
    return header, rows


def cost_rows(files: Sequence[ResultFile], reference: str | None) -> tuple[list[str], list[list[str]]] | None:
    """What each figure costs on each device: items/s per watt and items per dollar (a column pair per device),
    then each device's items per dollar over ``reference``'s: the studies' price-performance. None where no
    figure of any file has an energy figure or a price."""
    devices = column_labels(files)
    keys = sorted({key for f in files for key in f.measurements})

    table = {key: [_costs(f.measurements.get(key)) for f in files] for key in keys}
    if not any(value is not None for cells in table.values() for pair in cells for value in pair):
        return None
    others = [d for d in devices if d != reference] if reference in devices else []
    header = ["test", *(f"{d} {what}" for d in devices for what in ("items/s/W", "items/$"))]
    header += [f"{d} / {reference} items/$" for d in others]
    rows = []
    for key, cells in table.items():
        row = [display_name(*key), *("-" if v is None else format_rate(v) for pair in cells for v in pair)]
        by_device = dict(zip(devices, cells, strict=True))
        for device in others:
            mine, theirs = by_device[device][1], by_device[reference or ""][1]
            row.append(f"{mine / theirs:.2f}x" if mine is not None and theirs else "-")
        rows.append(row)
    return header, rows


def cost_plots(files: Sequence[ResultFile]) -> list[str]:
    """The cost table as bar charts (base64 PNGs): items/s per watt, then items per dollar, a group of bars per test
    (one per device), on a log axis (the tests' scales differ by orders of magnitude); a chart only for a figure some
    file has."""
    keys = sorted({key for f in files for key in f.measurements})
    devices = column_labels(files)
    plots = []
    for which, title in ((0, "items/s per watt"), (1, "items per dollar")):
        series = {
            device: [_nan(_costs(f.measurements.get(key))[which]) for key in keys]
            for device, f in zip(devices, files, strict=True)
        }
        if any(not math.isnan(v) for values in series.values() for v in values):
            labels = short_names([display_name(*key) for key in keys])
            plots.append(plot_png(f"{title} (log scale)", series, labels, title, log=True, across=True))
    return plots


def _costs(m: Measurement | None) -> tuple[float | None, float | None]:
    """A figure's items/s per watt and items per dollar, each None where it has none."""
    if m is None or m.disabled:
        return None, None
    energy = of_result(m.extra)
    cost = m.extra.get("cost")
    per_dollar = cost.get("items_per_dollar") if isinstance(cost, Mapping) else None
    per_watt = None if energy is None else energy.items_per_second_per_watt
    return per_watt, per_dollar if isinstance(per_dollar, int | float) else None


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


@dataclass(frozen=True)
class Pivot:
    """Measurements laid out by one label: ``cells[group][device][value]``, ``values`` in column order."""

    label: str
    values: list[Any]
    headers: list[str]  # "workers 0", ..., "device decode"
    devices: list[str]  # row order within a group: the files' order
    cells: dict[str, dict[str, dict[Any, Measurement]]]


def pivot(files: Sequence[ResultFile], label: str) -> Pivot:
    """The studies' table shape: a row per test and device, a column per value of one measurement label.

    ``label`` is a keyword the test passed to ``throughput`` (``workers=2``), stored in the result's
    ``extra``. Rows group the measurements that differ only in that label: the same test function and
    metric, and the same values of the test's other labels. Raises ``ValueError`` when no measurement
    carries the label (a misspelt ``--pivot`` should not print an empty table), or when two tests
    would share a cell because they differ in a parameter the test did not pass as a label.
    """
    devices = column_labels(files)
    cells: dict[str, dict[str, dict[Any, Measurement]]] = {}  # group -> device -> label value -> measurement
    owners: dict[tuple[str, str, Any], str] = {}  # which test filled a cell: two must not share one
    values: set[Any] = set()
    for device, f in zip(devices, files, strict=True):
        for (test, metric), m in sorted(f.measurements.items()):
            if label not in m.extra:
                continue
            raw = m.extra[label]
            value = raw if isinstance(raw, str | int | float) else repr(raw)
            group = _group(test, metric, m.extra, label)
            other = owners.setdefault((group, device, value), test)
            if other != test:
                raise ValueError(
                    f"{other} and {test} differ in a parameter that is not a throughput() label, so they would "
                    f"share one cell of the {label!r} table: pass that parameter to throughput() as well"
                )
            values.add(value)
            cells.setdefault(group, {}).setdefault(device, {})[value] = m
    if not values:
        raise ValueError(f"no measurement carries the label {label!r} (a keyword passed to throughput)")
    ordered = sorted(values, key=lambda v: (0, v, "") if isinstance(v, int | float) else (1, 0, str(v)))
    headers = [f"{label} {v}" if isinstance(v, int | float) else str(v) for v in ordered]
    return Pivot(label, ordered, headers, devices, cells)


def pivot_rows(table: Pivot) -> tuple[list[str], list[list[str]]]:
    """A pivot as text: header and rows (``test``, ``device``, then a rate per label value)."""
    rows = []
    for group, by_device in sorted(table.cells.items()):
        for device in table.devices:
            if device in by_device:
                rows.append([group, device, *(_rate(by_device[device].get(v)) for v in table.values)])
    return ["test", "device", *table.headers], rows


def pivot_plots(table: Pivot) -> list[str]:
    """Grouped bar charts (base64 PNGs) per row group of a pivot, a bar per device per label value: items/s, then
    items/s per watt and items per dollar where a cell of the group has them."""
    plots = []
    for group, by_device in sorted(table.cells.items()):
        unit = next(m.unit for cells in by_device.values() for m in cells.values())
        charts = (
            (group, f"{unit}/s", lambda m: m.items_per_second),
            (f"{group}: {unit}/s per watt", f"{unit}/s/W", lambda m: _costs(m)[0]),
            (f"{group}: {unit} per dollar", f"{unit}/$", lambda m: _costs(m)[1]),
        )
        for title, ylabel, figure in charts:
            values = {device: _cells(cells, table.values, figure) for device, cells in by_device.items()}
            if any(not math.isnan(v) for row in values.values() for v in row):
                plots.append(plot_png(title, values, table.headers, ylabel, bars=True))
    return plots


def _cells(
    cells: Mapping[Any, Measurement], values: Sequence[Any], figure: Callable[[Measurement], float | None]
) -> list[float]:
    """One device's bars of a pivot group: ``figure`` of the cell at each label value, NaN where there is none."""
    return [_nan(figure(m)) if (m := cells.get(v)) is not None and not m.disabled else math.nan for v in values]


def _rate(m: Measurement | None) -> str:
    """A pivot cell: items/s, then items/s per watt and items per dollar where the figure has them."""
    if m is None:
        return "-"
    if m.disabled:
        return "disabled"
    said = f"{format_rate(m.items_per_second)} {m.unit}/s"
    if (energy := of_result(m.extra)) is not None and (per_watt := energy.items_per_second_per_watt) is not None:
        said += f", {format_rate(per_watt)}/s/W"
    cost = m.extra.get("cost")
    if isinstance(cost, Mapping) and isinstance(per_dollar := cost.get("items_per_dollar"), int | float):
        said += f", {format_rate(per_dollar)}/$"
    return said


def _group(test: str, metric: str, extra: Mapping[str, Any], label: str) -> str:
    """``test_fn [metric] (other=labels)``: the test function without its parameter id, and its other labels."""
    name = display_name(test.split("[", 1)[0], metric)
    others = [f"{k}={v}" for k, v in sorted(extra.items()) if k != label and isinstance(v, str | int | bool)]
    return name + (f" ({', '.join(others)})" if others else "")


def column_labels(files: Sequence[ResultFile]) -> list[str]:
    """One label per file: its device key, with the file name added where two files share a key."""
    keys = [f.device_key for f in files]
    return [key if keys.count(key) == 1 else f"{key} ({f.path.stem})" for key, f in zip(keys, files, strict=True)]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def run_summary_markdown(records: Sequence[Recorded], title: str) -> str:
    """The job-page summary of one run: regressions first, then every figure with its verdict."""
    order = {"regressed": 0, "noisy": 1, "improved": 2, "new": 3, "unchanged": 4}

    def rank(record: Recorded) -> tuple[int, str]:
        outcome = "" if record.verdict is None else record.verdict.outcome.value
        return order.get(outcome, 5), display_name(record.test, record.measurement.name)

    ranked = sorted(records, key=rank)
    regressed = [r for r in ranked if r.verdict is not None and r.verdict.outcome is Outcome.REGRESSED]
    lines = [f"## {title}", ""]
    if regressed:
        lines.append(f"**{len(regressed)} regression(s)**:")
        for r in regressed:
            assert r.verdict is not None
            lines.append(f"- `{display_name(r.test, r.measurement.name)}`: {r.verdict.time.reason}")
            if r.verdict.operators:  # which operators changed, as a block under its bullet
                lines += ["", "  ```", *(f"  {line}" for line in r.verdict.operators), "  ```", ""]
    else:
        lines.append("No regression.")
    rows = []
    for record in ranked:
        m = record.measurement
        rate = "disabled" if m.disabled else f"{format_rate(m.items_per_second)} {m.unit}/s"
        spread = "-" if m.disabled else f"±{m.spread * 100:.1f}%"
        spread += f" ({note})" if (note := mode_note(m)) else ""
        name = display_name(record.test, m.name)
        rows.append([f"`{name}`", rate, spread, percent_of_peak(m.extra), verdict_cell(record.verdict)])
    return "\n".join(lines) + "\n\n" + markdown_table(["test", "throughput", "spread", "% peak", "verdict"], rows)


def operator_sections(files: Sequence[ResultFile]) -> list[tuple[tuple[str, str], str, str]]:
    """(test key, heading, preformatted lines) of every regressed result that says which operators changed."""
    sections = []
    for file in files:
        for key, verdict in sorted(file.verdicts.items()):
            if verdict is not None and verdict.outcome is Outcome.REGRESSED and verdict.operators:
                heading = f"Why {display_name(*key)} regressed ({file.path.name}, {file.device_key})"
                sections.append((key, heading, "\n".join(verdict.operators)))
    return sections


def test_sections(
    files: Sequence[ResultFile], why: Sequence[tuple[Key, str, str]]
) -> list[tuple[str, str, Sequence[str]]]:
    """A report page's section per test: its items/s on each device as bars, under its operator diff where a
    regressed test has one (``operator_sections``)."""
    sections: list[tuple[str, str, Sequence[str]]] = []
    for key in sorted({key for f in files for key in f.measurements}):
        values = [f.measurements[key].items_per_second if key in f.measurements else float("nan") for f in files]
        unit = next(f.measurements[key].unit for f in files if key in f.measurements)
        png = plot_png(key[0], {"items/s": values}, column_labels(files), f"{unit}/s", bars=True)
        diffs = "".join(f"<h3>{html.escape(h)}</h3><pre>{html.escape(lines)}</pre>" for k, h, lines in why if k == key)
        sections.append((display_name(*key), diffs, [png]))
    return sections


def html_page(title: str, sections: Sequence[tuple[str, str, Sequence[str]]]) -> str:
    """A self-contained page: each section is (heading, Markdown-ish table text or HTML, base64 PNGs)."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left;font-family:monospace;font-size:12px}"
        "th{background:#f2f4f7}.regressed{color:#c0392b;font-weight:bold}img{max-width:100%}.wide{overflow-x:auto}"
        "</style>",
        f"</head><body><h1>{html.escape(title)}</h1>",
    ]
    for heading, body, images in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>{body}")
        parts += [f"<img alt='{html.escape(heading)}' src='data:image/png;base64,{png}'>" for png in images]
    parts.append("</body></html>")
    return "\n".join(parts)


def html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """An HTML table; cells that start with 'regressed' are highlighted."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)

    def cell(text: str) -> str:
        style = " class='regressed'" if text.startswith("regressed") else ""
        return f"<td{style}>{html.escape(text)}</td>"

    body = "".join("<tr>" + "".join(cell(c) for c in row) + "</tr>" for row in rows)
    return f"<div class='wide'><table><tr>{head}</tr>{body}</table></div>"  # wider than the page: it scrolls
