"""The accelerator check's Markdown page (``device_check.md``), rendered from its JSON report."""

from __future__ import annotations

import json
from typing import Any

import device_sections


def _percent(value: object) -> str:
    return "-" if value is None else f"{float(value) * 100:+.1f}%"  # type: ignore[arg-type]


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
            "| kernel | fixture | torch Timer | do_bench | fixture vs Timer | vs do_bench |",
            "|---|---|---|---|---|---|",
        ]
        for name, row in timing["kernels"].items():
            cells = [
                f"{row[k] * 1e6:.1f} us" if row[k] else "-"
                for k in ("fixture_seconds", "torch_timer_seconds", "do_bench_seconds")
            ]
            lines.append(
                f"| {name} | {' | '.join(cells)} | {_percent(row['fixture_vs_timer'])} |"
                f" {_percent(row['fixture_vs_do_bench'])} |"
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
    lines += device_sections.markdown(report)
    for index, call in enumerate(report.get("calls", []), 1):
        if "seconds" in call:
            held = "held to it" if call["held"] else "OVER it"
            took = f"{call['seconds']:.0f} s of its {call['share']:.0f} s share, {held}"
            lines.append(f"- call {index} ({', '.join(call['sections'])}): {took}")
    for name, value in report.items():
        if isinstance(value, dict) and ("error" in value or "skipped" in value):
            lines.append(f"- {name}: {value.get('error') or value.get('skipped')}")
    return "\n".join(lines) + "\n"
