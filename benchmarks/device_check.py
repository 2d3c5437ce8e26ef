"""One prepared accelerator check: does pytest-accel measure a real device right?

On a CUDA machine, from the repository root (the wheels of ``benchmarks/device_wheels.txt`` in
``.whl/``; no network needed, the machine's torch untouched), one call of the plan:

    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl; \\
    PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 python3 benchmarks/device_check.py --device cuda \\
        --out $OUT/check --check first --call 1

``--plan`` prints the checks (``device_sections.CHECKS``): the first, for the next lend, holds what has
never run on a GPU; the second and third, for later ones, the matrix and the full profile, then the
compiled rows. Each fits 10 minutes
of device time with the machine's start, in calls under 5 minutes, each cut at its share: the sum of
its sections' estimates (``--budget-minutes`` overrides it; every subprocess stops at the call's
deadline). CPU dry mode (tiny sizes, what CI runs for every call, so the script cannot rot and each
call's wall time is checked against its share):

    python benchmarks/device_check.py --device cpu --out /tmp/check --check first --call 1

``--sections a,b`` runs those sections only. Each section writes ``sections/<name>.json`` when it
ends, and ``device_check.json`` / ``device_check.md`` are rewritten after every section, keeping what
earlier calls with the same ``--out`` found (a killed call keeps every section that finished; a
section that fails or finds too little of the call left is recorded as such and the others still
run); each call's wall time against its share is in ``calls``, and a call over it exits 1:

1. timing: the ``throughput`` fixture's figure (a real pytest run) against
   ``triton.testing.do_bench`` (CUDA only; it flushes L2) and ``torch.utils.benchmark.Timer`` on
   kernels from ~20 us to ~50 ms (bf16 matmul 8192^3, SDPA at the SD3 1024^2 joint shape, a
   layernorm, a small elementwise add), each with its energy window (NVML: joules per call, watts);
2. peaks: the measured bf16 matmul and copy peaks against the datasheet;
3. suite: a sized subset of ``perf_tests`` (``--accel-profile full`` on a device, ``smoke`` dry),
   a +20% allocation that the memory gate must fail, an oversized allocation that must fail its
   own test only;
4. sensitivity: A/A runs and injected 2% and 5% slowdowns (every 50th / 20th call repeated) of
   two kernels, against a baseline of two recordings; false alarms and catches;
5. operators: SDPA recorded on the flash kernel, then run on math, must fail naming the flash
   operator gone (the operator diff on the device's own profiler activity);
6. graph, cold, throttle, full_profile, matrix: the kernel-time modes, the full profile within its
   budgets and the support matrix's rows not yet run (``benchmarks/device_sections.py``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import device_sections
from device_report import markdown

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "perf_tests")]

# Per device: kernel name -> sizes. Dry sizes keep the CPU run to seconds.
SIZES = {
    "cuda": {"matmul": 8192, "sdpa": (2, 24, 4096 + 333, 64), "layernorm": (16384, 1536), "add": 1 << 20},
    "cpu": {"matmul": 256, "sdpa": (1, 4, 256, 64), "layernorm": (1024, 256), "add": 1 << 14},
}
# One sensitivity run of the two kernels (a pytest process): none starts with less of the call left.
SENSITIVITY_RUN_SECONDS = 25
SUITE_SUBSET = (
    "(test_attention_forward and not backward and (sdpa-flash or sdpa-cudnn) and (sd3-1024px-b16 or"
    " llama70b-prefill-4096)) or (test_joint_block and forward-1024-sdpa and not backward and not math)"
    " or test_data_path[device-decode]"
)
# The train step and the generation are the full_profile section's (device_sections.py), with their budgets.
# The dry run keeps the CPU job short: one attention kernel (full_profile runs the smoke LLM decode).
SUITE_SUBSET_DRY = "test_attention_forward and sd3-128px-b2 and sdpa-math"
# Dry mode: budgets that keep every pytest run to seconds (tiny sizes: no figure means anything).
DRY_OPTIONS = ("--accel-measure-seconds", "0.1", "-o", "accel_warmup_max_seconds=0.3", "-o", "accel_min_rounds=8")
DRY_TIMER_SECONDS = 0.2  # torch.utils.benchmark.Timer's min_run_time in dry mode (1 s on a device)
# The timing section's energy window: NVML's counter read around a second of each kernel's calls.
ENERGY_SECONDS = 1.0
INJECTED = {"A/A": 0, "2% slower": 50, "5% slower": 20}  # repeat every k-th call (0: never)

TEST_FILE = """
import os, sys
sys.path.insert(0, {benchmarks!r})
import pytest
from device_check import build_kernel

REPEAT_EVERY = int(os.environ.get("DEVICE_CHECK_REPEAT_EVERY", "0"))
EXTRA_BYTES = int(os.environ.get("DEVICE_CHECK_EXTRA_BYTES", "0"))


@pytest.mark.parametrize("name", {names!r})
def test_kernel(throughput, accel_device, name):
    fn, flops = build_kernel(name, accel_device.kind, accel_device.torch_device())
    calls = [0]

    def slowed():
        calls[0] += 1
        if REPEAT_EVERY and calls[0] % REPEAT_EVERY == 0:
            fn()
        return fn()

    throughput(slowed, items=1, unit="calls", flops=flops)


def test_allocation(throughput, accel_device):
    import torch
    base = torch.ones(1 << 24, device=accel_device.torch_device())
    extra = torch.ones(EXTRA_BYTES // 4 + 1, device=accel_device.torch_device())
    throughput(lambda: (base * 2, extra * 2), items=1, unit="calls")


def test_attention_backend(throughput, accel_device):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    fn, flops = build_kernel("sdpa", accel_device.kind, accel_device.torch_device())
    backend = getattr(SDPBackend, os.environ.get("DEVICE_CHECK_BACKEND", "FLASH_ATTENTION"))

    def attend():
        with sdpa_kernel(backend):
            return fn()

    throughput(attend, items=1, unit="calls", flops=flops)


def test_oversized_allocation(throughput, accel_device):
    import torch
    huge = 1 << 50 if accel_device.kind != "cpu" else 1 << 62
    throughput(lambda: torch.empty(huge, dtype=torch.uint8, device=accel_device.torch_device()), items=1, unit="calls")
"""


def build_kernel(name: str, kind: str, device: Any) -> tuple[Callable[[], Any], float]:
    """(callable, FLOPs per call) of one check kernel, on ``device``."""
    import torch
    import torch.nn.functional as F

    sizes = SIZES["cpu" if kind == "cpu" else "cuda"]
    dtype = torch.float32 if kind == "cpu" else torch.bfloat16
    g = torch.Generator().manual_seed(0)
    if name == "matmul":
        n = sizes["matmul"]
        a = torch.randn(n, n, generator=g).to(device, dtype)
        return (lambda: a @ a), 2.0 * n**3
    if name == "sdpa":
        b, h, s, d = sizes["sdpa"]
        q, k, v = (torch.randn(b, h, s, d, generator=g).to(device, dtype) for _ in range(3))
        return (lambda: F.scaled_dot_product_attention(q, k, v)), 4.0 * b * h * s * s * d
    if name == "layernorm":
        rows, width = sizes["layernorm"]
        x = torch.randn(rows, width, generator=g).to(device, dtype)
        return (lambda: F.layer_norm(x, (width,))), 5.0 * rows * width
    if name == "add":
        x = torch.randn(sizes["add"], generator=g).to(device, dtype)
        return (lambda: x + 1.0), float(sizes["add"])
    raise ValueError(f"unknown kernel {name!r}")


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _timeout_options(seconds: float) -> list[str]:
    """A per-test timeout (pytest-timeout, where installed): one test that outlasts its budget fails as
    one row with its stack, instead of a pytest run that times out whole and says nothing."""
    return ["-p", "timeout", f"--timeout={seconds:.0f}"] if seconds and _has("pytest_timeout") else []


def _pytest_command(device: str, energy_seconds: float = 0) -> list[str]:
    """A pytest run of the check; the energy window (a second a measurement) only where a section reads it."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--device", device,
               "-o", f"accel_energy_seconds={energy_seconds:g}"]  # fmt: skip
    installed = any(e.value.startswith("pytest_accel") for e in importlib.metadata.entry_points(group="pytest11"))
    return command if installed else [*command, "-p", "pytest_accel.plugin"]  # run from the tree, not installed


def _run(
    command: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None, log: Path | None = None
) -> dict[str, Any]:
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=cwd, capture_output=True, text=True, timeout=max(timeout, 1), env={**os.environ, **(env or {})}
        )
    except subprocess.TimeoutExpired as expired:  # keep what it printed: which test it was in is the finding
        printed = "".join(_text(part) for part in (expired.stdout, expired.stderr))
        _keep_log(log, printed)
        tail = "\n".join(printed.splitlines()[-15:])
        return {
            "returncode": None,
            "seconds": time.monotonic() - started,
            "tail": f"timed out after {timeout:.0f} s\n{tail}",
        }
    _keep_log(log, done.stdout + done.stderr)
    tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
    return {"returncode": done.returncode, "seconds": time.monotonic() - started, "tail": tail}


def _text(part: str | bytes | None) -> str:
    return part.decode(errors="replace") if isinstance(part, bytes) else part or ""


def _keep_log(log: Path | None, text: str) -> None:
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(text)


def _results(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    return {entry["test"]: entry for entry in json.loads(path.read_text())["results"]}


class Check:
    def __init__(self, device: str, out: Path, budget_minutes: float) -> None:
        self.device, self.out, self.deadline = device, out, time.monotonic() + budget_minutes * 60
        self.scratch = Path(tempfile.mkdtemp(prefix="device-check-"))
        names = list(SIZES["cpu"])
        (self.scratch / "test_check.py").write_text(TEST_FILE.format(benchmarks=str(ROOT / "benchmarks"), names=names))
        (self.scratch / "pytest.ini").write_text("[pytest]\n")
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.report: dict[str, Any] = {**device_sections.merged_report(out, device), "device": device}
        self.report["started"] = self.report.get("started", started)
        self.report.setdefault("calls", []).append({"started": started, "sections": []})
        self.dry = list(DRY_OPTIONS) if device == "cpu" else []
        self.modes = device_sections.ModeSections(
            device, self.scratch, _pytest_command(device), self.run, _results, self.dry, _timeout_options, self.left
        )

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def run(
        self, command: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None, log: Path | None = None
    ) -> dict[str, Any]:
        """``_run``, cut at the call's deadline as well: a call holds itself to its share of the plan."""
        return _run(command, cwd, min(timeout, max(self.left(), 1.0)), env, log)

    def section(self, name: str, minimum_seconds: float, body: Callable[[], Any]) -> None:
        if self.left() < minimum_seconds:
            self.report[name] = {"skipped": f"budget: {self.left():.0f} s left, needs {minimum_seconds:.0f} s"}
        else:
            started = time.monotonic()
            try:
                self.report[name] = body()
            except Exception as error:  # a broken section is a finding, not the end of the check
                self.report[name] = {"error": f"{type(error).__name__}: {error}"}
            print(f"device_check: {name} done in {time.monotonic() - started:.0f} s", flush=True)
            self.report["calls"][-1]["sections"].append(name)
        device_sections.save_section(self.out, name, self.report[name])
        self.save()

    def held(self, share: float, seconds: float) -> bool:
        """Record this call's wall time against its share; whether it held to it (its sections' start-up aside)."""
        held = seconds <= share + device_sections.CALL_INSTALL_SECONDS
        self.report["calls"][-1].update(seconds=round(seconds, 1), share=share, held=held)
        self.save()
        if not held:
            print(f"device_check: this call took {seconds:.0f} s, over its share of {share:.0f} s", flush=True)
        return held

    def save(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "device_check.json").write_text(json.dumps(self.report, indent=1, default=str) + "\n")
        (self.out / "device_check.md").write_text(markdown(self.report))

    # --- sections ---------------------------------------------------------------------------

    def environment(self) -> dict[str, Any]:
        from pytest_accel.engine.devices import resolve_device

        device = resolve_device(self.device)
        return {"key": device.key(), "provenance": device.provenance(), "python": sys.version.split()[0]}

    def timing(self) -> dict[str, Any]:
        import torch
        import torch.utils.benchmark as benchmark

        result_file = self.scratch / "timing.json"
        ran = self.run(
            [
                *_pytest_command(self.device, energy_seconds=ENERGY_SECONDS),
                "test_check.py",
                "-k",
                "test_kernel",
                "--accel-json",
                str(result_file),
                "--accel-baselines",
                str(self.scratch / "none"),
                *self.dry,
            ],
            self.scratch,
            device_sections.SECTION_SECONDS["timing"] - 15,  # then Timer and do_bench on the same kernels
        )
        ours = _results(result_file)
        torch_device = "cuda" if self.device == "cuda" else "cpu"
        rows = {}
        for name in SIZES["cpu"]:
            fn, _ = build_kernel(name, self.device, torch_device)
            timer = benchmark.Timer(stmt="fn()", globals={"fn": fn})
            reference = timer.blocked_autorange(min_run_time=DRY_TIMER_SECONDS if self.dry else 1.0).median
            do_bench = None
            if self.device == "cuda":
                import triton.testing

                do_bench = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") / 1e3
            entry = ours.get(f"test_check.py::test_kernel[{name}]")
            figure = entry["figures"]["seconds_per_call"] if entry else None
            rows[name] = {
                "energy": (entry.get("extra") or {}).get("energy") if entry else None,  # NVML's window, or why not
                "fixture_seconds": figure,
                "torch_timer_seconds": reference,
                "do_bench_seconds": do_bench,
                "fixture_vs_timer": None if figure is None else figure / reference - 1,
                "fixture_vs_do_bench": None if figure is None or do_bench is None else figure / do_bench - 1,
            }
            del fn
            if self.device == "cuda":
                torch.cuda.empty_cache()
        return {"pytest": ran, "kernels": rows}

    def operators(self) -> dict[str, Any]:
        """The operator diff on this device: SDPA recorded on flash, then run on math, must fail, naming operators."""
        command = [
            *_pytest_command(self.device), "test_check.py", "-k", "test_attention_backend",
            "--accel-baselines", str(self.scratch / "operator-baselines"),
            "-o", "accel_fresh_process_confirmation=false", *self.dry,
        ]  # fmt: skip
        started = time.monotonic()
        recorded = self.run([*command, "--accel-update"], self.scratch, 120)
        update_seconds = time.monotonic() - started
        log = self.out / "operators_log.txt"
        switched = self.run(
            [*command, "--accel-trace", str(self.scratch / "traces")],
            self.scratch,
            120,
            {"DEVICE_CHECK_BACKEND": "MATH"},
            log=log,
        )
        text = log.read_text() if log.exists() else ""
        # The failure's one operator line (its largest change first), then any rows of the whole diff (-v).
        diff = [line.strip() for line in text.splitlines() if "operators (" in line][:1]
        diff += [line.strip() for line in text.splitlines() if line.startswith("    ") and ": " in line][:12]
        stored = sorted((self.scratch / "operator-baselines").glob("*/*.json"))
        table = json.loads(stored[0].read_text()) if stored else {}
        entry = next(iter(next(iter(table.get("entries", {}).values()), {}).values()), {})
        return {
            "recorded_returncode": recorded["returncode"],
            "update_seconds": update_seconds,
            "stored_table": entry.get("operators"),
            "switched_returncode": switched["returncode"],
            "regressed": "perf regressed" in text,
            "names_the_flash_operator_gone": any("flash" in line and "gone" in line for line in diff),
            "diff": diff,
            "traces": sorted(str(p) for p in (self.scratch / "traces").glob("*")),
        }

    def peaks(self) -> dict[str, Any]:
        from pytest_accel.engine.devices import resolve_device
        from pytest_accel.engine.machine import datasheet_peak, measure_peak

        device = resolve_device(self.device)
        device.activate()
        measured = measure_peak(device)
        sheet = datasheet_peak(device.key())
        return {
            "measured_tflops": measured.tflops,
            "measured_copy_gb_per_s": measured.bytes_per_second / 1e9,
            "datasheet_tflops_bf16": None if sheet is None else sheet.tflops_bf16,
            "datasheet_memory_gb_per_s": None if sheet is None else sheet.memory_gbps,
        }

    def suite(self, subset: str | None = None, test_timeout: float = 0) -> dict[str, Any]:
        profile = "smoke" if self.device == "cpu" else "full"
        result_file = self.scratch / "suite.json"
        # A per-test timeout (pytest-timeout, where installed) turns one test that outlasts the budget into one
        # failed row with its stack, instead of a suite that times out whole and says nothing.
        limit = _timeout_options(test_timeout)
        ran = self.run(
            [
                *_pytest_command(self.device),
                "perf_tests/test_attention.py" if self.dry else "perf_tests",
                "--accel-profile",
                profile,
                "-k",
                subset or (SUITE_SUBSET_DRY if self.device == "cpu" else SUITE_SUBSET),
                "--accel-json",
                str(result_file),
                "--accel-baselines",
                str(self.scratch / "suite-baselines"),
                "-v",
                "--durations=0",
                *limit,
                *self.dry,
            ],
            ROOT,
            device_sections.SECTION_SECONDS["suite"] - 30,  # then the memory gate's and the oversized runs
            log=self.out / "suite_log.txt",
        )
        figures = {
            test: {
                "items_per_second": entry["figures"]["items_per_second"],
                "unit": entry["unit"],
                "tflops": entry["figures"]["tflops"],
                "peak_memory_bytes": entry["peak_memory_bytes"],
                "percent_of_measured_peak": entry["extra"].get("percent_of_measured_tflops"),
            }
            for test, entry in _results(result_file).items()
        }
        memory = self._memory_gate()
        oversized = self.run(
            [
                *_pytest_command(self.device),
                "test_check.py",
                "-k",
                "oversized or kernel and add",
                "--accel-baselines",
                str(self.scratch / "none"),
                *self.dry,
            ],
            self.scratch,
            min(120, self.left()),
        )
        return {
            "pytest": ran,
            "figures": figures,
            "memory_gate_fails_a_20_percent_allocation": memory,
            "oversized_allocation_fails_only_its_test": oversized["returncode"] == 1
            and "1 failed, 1 passed" in oversized["tail"],
            "oversized_tail": oversized["tail"],
        }

    def _memory_gate(self) -> dict[str, Any]:
        baselines = str(self.scratch / "memory-baselines")
        command = [
            *_pytest_command(self.device),
            "test_check.py",
            "-k",
            "test_allocation",
            "--accel-baselines",
            baselines,
            *self.dry,
        ]
        recorded = self.run([*command, "--accel-update"], self.scratch, 120)
        grown_file = self.scratch / "memory-grown.json"
        grown = self.run(
            [*command, "--accel-json", str(grown_file)],
            self.scratch,
            120,
            {"DEVICE_CHECK_EXTRA_BYTES": str((1 << 24) * 4 // 5)},
        )
        verdict = (_results(grown_file).get("test_check.py::test_allocation") or {}).get("verdict") or {}
        return {
            "recorded": recorded["returncode"],
            "grown_returncode": grown["returncode"],
            "time_outcome": (verdict.get("time") or {}).get("outcome"),
            "memory_outcome": (verdict.get("memory") or {}).get("outcome"),
            "failed_on_memory": grown["returncode"] == 1
            and (verdict.get("memory") or {}).get("outcome") == "regressed",
            "tail": grown["tail"],
        }

    def sensitivity(self, runs: int) -> dict[str, Any]:
        baselines = str(self.scratch / "sensitivity-baselines")
        selection = ["test_check.py", "-k", "kernel and (matmul or sdpa)", "--accel-baselines", baselines]
        command = [*_pytest_command(self.device), *selection, *self.dry]
        if self.dry:  # no re-measuring in dry mode: its figures mean nothing, only the script's working does
            command += ["-o", "accel_confirmations=0", "-o", "accel_fresh_process_confirmation=false"]
        for _ in range(1 if self.dry else 2):  # dry: one recording is enough to exercise the path
            self.run([*command, "--accel-update"], self.scratch, 180)
        rows: dict[str, list[dict[str, Any]]] = {}
        for index in range(runs):
            for scenario, every in INJECTED.items():  # interleaved: drift hits every scenario alike
                if self.left() < SENSITIVITY_RUN_SECONDS:
                    break
                result_file = self.scratch / f"sens-{every}-{index}.json"
                self.run(
                    [*command, "--accel-json", str(result_file)],
                    self.scratch,
                    180,
                    {"DEVICE_CHECK_REPEAT_EVERY": str(every)},
                )
                for test, entry in _results(result_file).items():
                    verdict = entry.get("verdict") or {}
                    rows.setdefault(scenario, []).append(
                        {
                            "test": test,
                            "outcome": verdict.get("outcome"),
                            "time_outcome": (verdict.get("time") or {}).get("outcome"),
                            "memory_outcome": (verdict.get("memory") or {}).get("outcome"),
                            "ratio": verdict.get("time", {}).get("ratio"),
                            "sees": verdict.get("time", {}).get("detectable"),
                        }
                    )
        return {
            scenario: {
                "verdicts": len(items),
                "regressed": sum(i["outcome"] == "regressed" for i in items),
                "noisy": sum(i["outcome"] == "noisy" for i in items),
                "items": items,
            }
            for scenario, items in rows.items()
        }


def plan_lines() -> list[str]:
    """The checks a lent device runs, each call with the options that hold it to its share."""
    lines = []
    for check in device_sections.CHECKS:
        seconds = device_sections.check_seconds(check)
        lines.append(
            f"device_check: the {check} check: ~{seconds / 60:.1f} min of device time on an H100 or an H200 "
            f"(a {device_sections.MACHINE_START_SECONDS} s start, then each call's "
            f"{device_sections.CALL_INSTALL_SECONDS} s install and its sections):"
        )
        for index, call in enumerate(device_sections.check_calls(check), 1):
            share = device_sections.call_seconds(call)
            lines.append(
                f"  call {index}: ~{share:.0f} s: --check {check} --call {index}  (--sections {','.join(call)})"
            )
    return lines


def _chosen(parser: argparse.ArgumentParser, options: argparse.Namespace) -> tuple[list[str], float]:
    """The sections to run and the budget in minutes: a plan's call, or ``--sections`` and its estimates."""
    if options.check is not None:
        calls = device_sections.check_calls(options.check)
        if not 1 <= options.call <= len(calls):
            parser.error(f"--call: the {options.check} check has calls 1 to {len(calls)}")
        chosen = list(calls[options.call - 1])
    else:
        chosen = options.sections.split(",")
        unknown = sorted(set(chosen) - set(device_sections.SECTION_SECONDS))
        if unknown:
            parser.error(
                f"unknown section(s) {', '.join(unknown)}; known: {', '.join(device_sections.SECTION_SECONDS)}"
            )
    budget = options.budget_minutes or device_sections.call_seconds(chosen) / 60
    return chosen, budget


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--check", choices=list(device_sections.CHECKS), help="run one call of this check (--plan)")
    parser.add_argument("--call", type=int, default=1, help="which call of --check (from 1)")
    parser.add_argument(
        "--budget-minutes", type=float, default=None, help="default: the chosen sections' estimates (the call's share)"
    )
    parser.add_argument("--sensitivity-runs", type=int, default=1)
    parser.add_argument(
        "--sections", default=",".join(device_sections.SECTION_SECONDS), help="comma-separated section names"
    )
    parser.add_argument("--plan", action="store_true", help="print the checks and their calls, and exit")
    parser.add_argument("--suite-k", default=None, help="a -k expression in place of the built-in suite subset")
    parser.add_argument("--test-timeout", type=float, default=60, help="seconds per suite test (pytest-timeout)")
    options = parser.parse_args()
    if options.plan:
        print("\n".join(plan_lines()))
        return 0
    chosen, budget = _chosen(parser, options)
    check = Check(options.device, options.out, budget)
    modes = check.modes
    sections: dict[str, Callable[[], Any]] = {
        "environment": check.environment,
        "timing": check.timing,
        "graph": modes.graph,
        "cold": modes.cold,
        "throttle": modes.throttle,
        "peaks": check.peaks,
        "operators": check.operators,
        "full_profile": modes.full_profile,
        "matrix": modes.matrix,
        "compile": modes.compile,
        "workers": modes.workers,
        "suite": lambda: check.suite(options.suite_k, options.test_timeout),
        "sensitivity": lambda: check.sensitivity(options.sensitivity_runs),
    }
    started = time.monotonic()
    for name in chosen:
        check.section(name, device_sections.SECTION_MINIMUM_SECONDS[name], sections[name])
    held = check.held(budget * 60, time.monotonic() - started)
    print((options.out / "device_check.md").read_text())
    broken = [name for name, value in check.report.items() if isinstance(value, dict) and "error" in value]
    return 1 if broken or not held else 0


if __name__ == "__main__":
    sys.exit(main())
