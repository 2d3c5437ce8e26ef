"""The accelerator check's Markdown page (``device_check.md``), rendered from its JSON report."""

from __future__ import annotations

import json
from typing import Any


def _percent(value: object) -> str:
    return "-" if value is None else f"{float(value) * 100:+.1f}%"  # type: ignore[arg-type]


def _energy(energy: dict[str, Any] | None) -> str:
    """``612 mJ/call, 305 W (nvml)``, or why it was not measured."""
    if not energy:
        return "-"
    if energy.get("not_measured"):
        return f"not measured: {energy['not_measured']}"
    return f"{energy['joules_per_item'] * 1e3:.3g} mJ/call, {energy['watts']:.0f} W ({energy['meter']})"


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# pytest-accel device check: {report['device']} ({report['started']})", ""]
    env = report.get("environment", {})
    if "key" in env:
        lines += [f"device key `{env['key']}`, torch {env['provenance'].get('torch', '?')}", ""]
    timing = report.get("timing", {})
    if "kernels" in timing:
        lines += [
            "## Timing agreement",
            "",
            "| kernel | fixture | torch Timer | do_bench | fixture vs Timer | vs do_bench | energy |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, row in timing["kernels"].items():
            cells = [
                f"{row[k] * 1e6:.1f} us" if row[k] else "-"
                for k in ("fixture_seconds", "torch_timer_seconds", "do_bench_seconds")
            ]
            lines.append(
                f"| {name} | {' | '.join(cells)} | {_percent(row['fixture_vs_timer'])} |"
                f" {_percent(row['fixture_vs_do_bench'])} | {_energy(row.get('energy'))} |"
            )
        lines.append("")
    for name in ("peaks",):
        if name in report:
            lines += [f"## {name}", "", "```", json.dumps(report[name], indent=1, default=str), "```", ""]
    suite = report.get("suite", {})
    if "figures" in suite:
        lines += ["## Suite subset", "", "| test | throughput | TFLOP/s | peak memory |", "|---|---|---|---|"]
        for test, row in suite["figures"].items():
            rate = row["items_per_second"]
            lines.append(
                f"| {test} | {rate:.4g} {row['unit']}/s | {row['tflops'] or 0:.4g} | {row['peak_memory_bytes']} |"
                if rate
                else f"| {test} | - | - | - |"
            )
        lines += [
            "",
            "memory gate fails a +20% allocation: "
            + str(suite["memory_gate_fails_a_20_percent_allocation"].get("failed_on_memory"))
            + " (time: {}, memory: {})".format(
                suite["memory_gate_fails_a_20_percent_allocation"].get("time_outcome"),
                suite["memory_gate_fails_a_20_percent_allocation"].get("memory_outcome"),
            )
            + (
                " (expected False on the CPU: peak RSS is not gated, only exact allocator counters)"
                if report["device"] == "cpu"
                else ""
            ),
            f"oversized allocation fails its test only: {suite['oversized_allocation_fails_only_its_test']}",
            "",
        ]
    ops = report.get("operators", {})
    if ops and "error" not in ops and "skipped" not in ops:
        lines += [
            "## Operator diff (SDPA recorded on flash, run on math)",
            "",
            f"regressed: {ops['regressed']}; names the flash operator gone: {ops['names_the_flash_operator_gone']};"
            f" --accel-update took {ops['update_seconds']:.1f} s",
            "",
            "```",
            *ops["diff"],
            "```",
            "",
        ]
    sens = report.get("sensitivity", {})
    if sens and "error" not in sens and "skipped" not in sens:
        lines += ["## Sensitivity", "", "| scenario | verdicts | regressed | noisy |", "|---|---|---|---|"]
        for scenario, row in sens.items():
            lines.append(f"| {scenario} | {row['verdicts']} | {row['regressed']} | {row['noisy']} |")
        lines.append("")
    lines += _mode_sections(report)
    for index, call in enumerate(report.get("calls", []), 1):
        if "seconds" in call:
            held = "held to it" if call["held"] else "OVER it"
            took = f"{call['seconds']:.0f} s of its {call['share']:.0f} s share, {held}"
            lines.append(f"- call {index} ({', '.join(call['sections'])}): {took}")
    for name, value in report.items():
        if isinstance(value, dict) and ("error" in value or "skipped" in value):
            lines.append(f"- {name}: {value.get('error') or value.get('skipped')}")
    return "\n".join(lines) + "\n"


def _mode_sections(report: dict[str, Any]) -> list[str]:
    """Markdown lines of the new sections found in ``report``."""
    lines: list[str] = []
    graph = report.get("graph", {})
    if "fixture_eager_seconds" in graph:
        cells = [graph.get(k) for k in ("fixture_eager_seconds", "fixture_graph_seconds", "do_bench_cudagraph_seconds")]
        shown = [f"{c * 1e6:.2f} us" if isinstance(c, float) else "-" for c in cells]
        lines += [
            "## Graph replay vs eager (a launch-bound add of 1 Mi elements)",
            "",
            "| fixture eager | fixture graph | do_bench_cudagraph |",
            "|---|---|---|",
            f"| {' | '.join(shown)} |",
            "",
        ]
        if "graph_refused_on_cpu" in graph:
            lines += [f"graph mode refused on the CPU, naming why: {graph['graph_refused_on_cpu']}", ""]
    cold = report.get("cold", {})
    if "sets" in cold:
        lines += ["## Cold vs warm", "", "| working set | warm | cold | cold / warm |", "|---|---|---|---|"]
        for size, row in cold["sets"].items():
            shown = [f"{row[k] * 1e6:.1f} us" if row.get(k) else "-" for k in ("warm", "cold")]
            ratio = f"{row['cold_over_warm']:.2f}x" if row.get("cold_over_warm") else "-"
            lines.append(f"| {size} | {shown[0]} | {shown[1]} | {ratio} |")
        lines.append("")
    throttle = report.get("throttle", {})
    if "forced" in throttle:
        forced = throttle["forced"]
        lines += [
            "## Throttle watch",
            "",
            f"clock: {throttle['clock']}",
            f"forced (reading halved for two rounds, {forced['clock_source']}): {forced['throttled_rounds']} throttled,"
            f" {forced['rounds_kept']} kept, waited {forced['waited_seconds']:.2f} s;"
            f" discarded and retaken: {forced['discarded_and_retaken']}",
        ]
        heated = throttle.get("heated")
        if heated:
            lines.append(
                f"heated: {heated['throttled_rounds']} throttled of {heated['rounds_kept']} kept; SM clock"
                f" {heated['sm_clock_mhz_min_max']} MHz, max {heated['temperature_c_max']} C,"
                f" {heated['power_w_max']} W"
            )
        lines.append("")
    rows = (
        ("full_profile", "Full profile within budget"),
        ("matrix", "Support-matrix rows"),
        ("compile", "Compiled rows"),
    )
    for name, title in rows:
        section = report.get(name, {})
        if "tests" not in section:
            continue
        lines += [
            f"## {title} ({section['profile']} profile)",
            "",
            "| test | outcome | seconds | figure |",
            "|---|---|---|---|",
        ]
        for test, row in section["tests"].items():
            figure = f"{row['items_per_second']:.4g} {row['unit']}/s" if row.get("items_per_second") else "-"
            outcome = row["outcome"] + (f" ({row['message'][:80]})" if row["message"] else "")
            if "within_budget" in row:
                outcome += f"; within {row['budget_seconds']:.0f} s: {row['within_budget']}"
            lines.append(f"| {test} | {outcome} | {row['seconds']:.1f} | {figure} |")
        lines.append("")
    return lines
