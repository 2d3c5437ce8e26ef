"""The accelerator check's sections for the kernel-time modes, the full profile and the support matrix.

``benchmarks/device_check.py`` runs them beside its own (timing, peaks, suite, sensitivity,
operators); each is a method of ``ModeSections`` returning a JSON-ready dict, and
``device_report.py`` renders what they found. On the CPU (dry mode) every one runs at tiny sizes, to keep it working:

- ``graph``: a launch-bound kernel (an elementwise add of 1 Mi elements, 5.9 us in do_bench on an
  H200) timed eager and with ``timing="graph"``, against triton's ``do_bench_cudagraph`` where
  triton is installed. On the CPU the graph mode must be refused, naming why.
- ``cold``: a copy whose working set is the last-level cache's size, and one four times larger,
  each timed warm and ``cold=True``: cold must read slower on the cache-sized set (it no longer fits
  warm) and about the same on the larger one (it never did); do_bench (256 MB flush) beside it.
- ``throttle``: (1) a heating load (matmuls in a second process) beside a measured kernel, with
  the SM clock, temperature and power read while it runs; (2) the throttle watch exercised on this
  device's own clock reading, with the rounds' reading halved after the third round: the rounds
  must be discarded, retaken after the wait, and counted.
- ``full_profile``: the full-profile MMDiT train step (batch 16, every block checkpointed) and the
  generation (decode over 256 new tokens) against their per-test budgets.
- ``matrix``: the support matrix's rows not yet run: backward passes, efficient SDPA, xFormers,
  the 30-step inference, the LLM train step; ``compile``: the 30-step inference compiled and as
  CUDA graphs (a 2B compile each, so a call of its own).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# Seconds of device time per section on an H200, from the 2026-12-01 run's logs where the section ran then
# (timing, peaks, suite 85 s, sensitivity 110 s with one run, full profile 110-130 s, a 2B MMDiT compile ~100 s)
# and its own budgets where it never ran; an H100 gets the same (compute alike; what no longer fits its
# 78 GiB is skipped with its reason, which takes less). ``minimum``: the seconds left below which a section
# is skipped (never more than its estimate, or a call budgeted from the plan would skip it).
SECTION_SECONDS = {
    "environment": 5,
    "timing": 45,
    "graph": 25,
    "cold": 35,
    "throttle": 35,
    "peaks": 15,
    "operators": 40,
    "suite": 90,
    "sensitivity": 110,
    "full_profile": 150,
    "matrix": 150,
    "compile": 250,
    "workers": 40,
}
SECTION_MINIMUM_SECONDS = {
    "environment": 5, "timing": 30, "graph": 15, "cold": 20, "throttle": 25, "peaks": 10, "operators": 25,
    "suite": 60, "sensitivity": 60, "full_profile": 60, "matrix": 60, "compile": 60, "workers": 30,
}  # fmt: skip
# The checks a lent device runs, in order, each in calls of at most CALL_SECONDS: the first holds what has
# never run on a GPU (graph, cold, throttle, the operator diff) and the suite's judgement; the second, for a
# later lend, the matrix and the full profile (each with a margin over its logged time); the third the compiled
# and CUDA-graph rows (two 2B compiles of ~100 s each, and their runs).
CHECKS = {
    "first": (
        ("environment", "graph", "cold", "throttle", "operators", "timing", "peaks"),
        ("suite", "sensitivity", "workers"),
    ),
    "second": (("matrix",), ("full_profile",)),
    "third": (("compile",),),
}
CALL_SECONDS = 280  # one call of the device machine: at most 5 minutes, less 20 s to start Python and import torch
# What one check costs beside its sections: a fresh machine's start (1-2 min, the device tool's README) and
# each call's wheel install (~20 s): the check with them must fit 10 minutes, leaving 5 of 15 for a rerun.
MACHINE_START_SECONDS = 120
CALL_INSTALL_SECONDS = 20
CHECK_SECONDS = 600
# Per-test budgets of the full profile (pytest's "call" phase): a nightly of some 50 tests gives a
# test about 2 minutes; generation was over 45 s per test on the H200 before its decode window.
FULL_PROFILE_BUDGET_SECONDS = {"test_train_step": 120.0, "test_llm_generation": 45.0}
FULL_PROFILE_SUBSET = "(test_train_step and 16-sdpa and not math) or (test_llm_generation and 1)"
FULL_PROFILE_FILES = ("perf_tests/test_mmdit.py", "perf_tests/test_llm.py")
# The rows not yet run (README's support matrix); xFormers skips itself where it is not installed.
MATRIX_SUBSET = (
    "(test_attention_forward_backward and (sdpa-flash or sdpa-efficient or sdpa-cudnn or xformers) and sd3-1024px-b16)"
    " or (test_attention_forward and not backward and (sdpa-efficient or xformers) and sd3-1024px-b16)"
    " or (test_joint_block and forward-backward-1024-sdpa and not math)"
    " or (test_inference_30_steps and not graphs) or test_llm_train_step"
)
# The second check's compile rows: the 30-step inference compiled and as CUDA graphs (a 2B compile each).
COMPILE_SUBSET = "test_inference_30_steps_graphs"
MATRIX_FILES = ("perf_tests/test_attention.py", "perf_tests/test_llm.py", "perf_tests/test_mmdit.py")
# Dry: the smoke sizes of some of the same rows, those that take seconds (the CI suite runs the
# inference, 16 s, and its compiled form, 27 s, on 2 cores); on the CPU xFormers and CUDA graphs skip.
MATRIX_SUBSET_DRY = (
    "(test_attention_forward_backward and (sdpa-flash or xformers) and sd3-128px-b2)"
    " or (test_attention_forward and not backward and xformers and sd3-128px-b2)"
)
COMPILE_SUBSET_DRY = "test_inference_30_steps_graphs and cuda-graphs"  # skips on the CPU: the row's wiring only
# Per matrix test (pytest-timeout where installed): compiling the 2B model is the longest; one that
# outlasts it fails as one row ("Timeout"), and the rest still run.
MATRIX_TEST_SECONDS = 120.0
# The measured kernel's timed budget beside the heating load, which runs until the measurement ends.
HEATED_MEASURE_SECONDS = 12.0
HEATER_MAX_SECONDS = 120.0  # the heater stops by itself even if this process is killed
# The heated test's pytest, killed past this: its warm-up, 12 s of rounds, a re-measurement, and start-up.
HEATED_TIMEOUT_SECONDS = 90.0
THROTTLE_FORCED_AFTER = 3  # the forced check halves the clock reading after this many rounds

MODES_TEST = """
import sys
sys.path.insert(0, {benchmarks!r})
import pytest
from device_sections import build_tiny, build_working_set


@pytest.mark.parametrize("timing", ["eager", "graph"])
def test_tiny(throughput, accel_device, timing):
    throughput(build_tiny(accel_device.torch_device()), items=1, unit="calls", timing=timing)


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
@pytest.mark.parametrize("size", ["llc", "4x-llc"])
def test_cache(throughput, accel_device, size, cold):
    fn, moved = build_working_set(size, accel_device)
    throughput(fn, items=1, unit="copies", bytes_moved=moved, cold=cold)


def test_heated(throughput, accel_device):
    import torch
    n = 4096 if accel_device.kind == "cuda" else 128
    a = torch.randn(n, n, device=accel_device.torch_device(), dtype=accel_device.autocast_dtype())
    throughput(lambda: a @ a, items=1, unit="matmuls", flops=2 * n**3)
"""

HEATER = """
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
"""


def build_tiny(device: Any) -> Callable[[], Any]:
    """The launch-bound kernel: an elementwise add of 1 Mi elements (bf16 on a GPU; 5.9 us in do_bench on an H200)."""
    import torch

    dtype = torch.float32 if str(device) == "cpu" else torch.bfloat16
    x = torch.randn(1 << 20, generator=torch.Generator().manual_seed(0)).to(device, dtype)
    return lambda: x + 1.0


def last_level_cache_bytes(device: Any) -> int:
    """The device's last-level cache: a GPU's L2 from its properties, the CPU's from the OS."""
    import torch

    if device.kind == "cuda":
        return int(torch.cuda.get_device_properties(device.torch_device()).L2_cache_size)
    from pytest_accel.engine.devices import cpu

    return cpu.last_level_cache_bytes(cpu.cpu_identity()) or 32 * 2**20  # 32 MiB where the OS says nothing


# On the CPU (dry mode) the "cache-sized" set is at most 4 MiB: tiny sizes, seconds per run.
DRY_WORKING_SET_BYTES = 4 * 2**20


# The share of the last-level cache the "llc" working set (source and destination together) takes: a set the
# size of the whole cache is not held warm (an H100's or H200's L2 is two partitions, nvbench flushes more than
# it), so a warm copy would read as slow as a cold one and "cold is slower" would read about 1.0x.
LLC_SHARE = 0.5


def build_working_set(size: str, device: Any) -> tuple[Callable[[], Any], float]:
    """A copy whose source and destination together fit the last-level cache with room (``llc``: half of it) or
    are 4x it (``4x-llc``); bytes moved."""
    import torch

    cache = last_level_cache_bytes(device)
    if device.kind == "cpu":
        cache = min(cache, DRY_WORKING_SET_BYTES)
    total = int(cache * (4 if size == "4x-llc" else LLC_SHARE))
    source = torch.ones(total // 8, dtype=torch.float32, device=device.torch_device())
    target = torch.empty_like(source)
    return (lambda: target.copy_(source)), float(total)


def check_calls(check: str) -> tuple[tuple[str, ...], ...]:
    """The calls of one check (``CHECKS``), each a tuple of section names."""
    if check not in CHECKS:
        raise ValueError(f"unknown check {check!r}; choose one of {', '.join(CHECKS)}")
    return CHECKS[check]


def call_seconds(sections: Sequence[str]) -> float:
    """A call's share: its sections' estimated device seconds (what ``--budget-minutes`` holds it to)."""
    return float(sum(SECTION_SECONDS[name] for name in sections))


def check_seconds(check: str) -> float:
    """One check's device time: a machine's start, and each call's install and sections."""
    return MACHINE_START_SECONDS + sum(CALL_INSTALL_SECONDS + call_seconds(call) for call in check_calls(check))


def junit_outcomes(path: Path) -> dict[str, dict[str, Any]]:
    """test id -> outcome (passed, failed, skipped), seconds and message, from a ``--junitxml`` file."""
    if not path.exists():
        return {}
    outcomes = {}
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        module = (case.get("classname") or "").replace(".", "/")
        test = f"{module}.py::{case.get('name')}"
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            found = case.find(kind)
            if found is not None:
                outcome = "skipped" if kind == "skipped" else "failed"
                message = (found.get("message") or "")[:300]
                break
        outcomes[test] = {"outcome": outcome, "seconds": float(case.get("time") or 0), "message": message}
    return outcomes


def verbose_outcomes(printed: str) -> dict[str, dict[str, Any]]:
    """test id -> outcome from pytest's ``-v`` lines, for a run killed before it wrote its junit file."""
    outcomes = {}
    for line in printed.splitlines():
        parts = line.split()
        if len(parts) >= 2 and "::" in parts[0] and parts[1] in ("PASSED", "FAILED", "SKIPPED", "ERROR"):
            outcome = {"PASSED": "passed", "SKIPPED": "skipped"}.get(parts[1], "failed")
            outcomes[parts[0]] = {
                "outcome": outcome,
                "seconds": 0.0,
                "message": "(from the log: the run was cut short)",
            }
    return outcomes


def _watched(
    command: Sequence[str], cwd: Path, reading: Callable[[], dict[str, float]], timeout: float
) -> tuple[list[dict[str, float]], str]:
    """Run ``command`` (its output into a log file: a pipe nobody reads stalls the child past 64 KiB), taking
    ``reading`` every half second until it ends or ``timeout`` passes (then its whole group is killed); the
    readings and the output's last lines."""
    from pytest_accel.engine.processes import kill_group, start_group

    log = cwd / "watched-log.txt"
    trace: list[dict[str, float]] = []
    with log.open("w", encoding="utf-8") as sink:
        ran = start_group(command, cwd, os.environ, stdout=sink)
        deadline = time.monotonic() + timeout
        try:
            while ran.poll() is None and time.monotonic() < deadline:
                trace.append(reading())
                time.sleep(0.5)
        finally:
            if ran.poll() is None:
                kill_group(ran)
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    ended = "" if ran.returncode is not None and time.monotonic() < deadline else f"\nkilled after {timeout:g} s"
    return trace, "\n".join(lines[-12:]) + ended


class ModeSections:
    """The new sections, given the check's device, scratch folder and a runner of pytest commands."""

    def __init__(
        self,
        device: str,
        scratch: Path,
        pytest_command: list[str],
        run: Callable[..., dict[str, Any]],
        results: Callable[[Path], dict[str, dict[str, Any]]],
        dry_options: Sequence[str],
        timeout_options: Callable[[float], list[str]],
        left: Callable[[], float] = lambda: float("inf"),
    ) -> None:
        self.device, self.scratch, self.command, self.run, self.results = device, scratch, pytest_command, run, results
        self.dry_options, self.timeout_options = list(dry_options), timeout_options
        self.left = left  # seconds left of the call's share: no child outlives it
        self._dry_run: tuple[dict[str, Any], dict[str, Any], str] | None = None  # graph's and cold's, shared
        (scratch / "test_modes_check.py").write_text(MODES_TEST.format(benchmarks=str(ROOT / "benchmarks")))

    def _check(self, select: str, name: str, timeout: float) -> tuple[dict[str, Any], dict[str, Any], str]:
        """(the pytest run, its results by test id, its whole output) of a selection of the modes' test file.

        Dry mode runs graph's and cold's tests in one pytest process (one start-up less), for whichever asks first."""
        if self.dry_options:
            if self._dry_run is None:
                self._dry_run = self._run_check("test_tiny or test_cache", "modes", timeout)
            return self._dry_run
        return self._run_check(select, name, timeout)

    def _run_check(self, select: str, name: str, timeout: float) -> tuple[dict[str, Any], dict[str, Any], str]:
        result_file, log = self.scratch / f"{name}.json", self.scratch / f"{name}-log.txt"
        ran = self.run(
            [
                *self.command, "test_modes_check.py", "-k", select, "--accel-json", str(result_file),
                "--accel-baselines", str(self.scratch / "none"), *self.dry_options,
            ],
            self.scratch,
            timeout,
            log=log,
        )  # fmt: skip
        return ran, self.results(result_file), log.read_text() if log.exists() else ""

    def graph(self) -> dict[str, Any]:
        """Eager vs graph replay on the launch-bound kernel, against do_bench_cudagraph where triton is installed."""
        ran, found, printed = self._check("test_tiny", "graph", 120)
        rows = {
            timing: (found.get(f"test_modes_check.py::test_tiny[{timing}]") or {})
            .get("figures", {})
            .get("seconds_per_call")
            for timing in ("eager", "graph")
        }
        report: dict[str, Any] = {"pytest": ran, "fixture_eager_seconds": rows["eager"]}
        report["fixture_graph_seconds"] = rows["graph"]
        if self.device == "cpu":
            report["graph_refused_on_cpu"] = "timing='graph' replays a captured device graph" in printed
            return report
        try:
            import torch
            import triton.testing
        except ImportError as error:
            report["do_bench_cudagraph"] = f"not run: {error}"
            return report
        fn = build_tiny(torch.device("cuda"))
        with torch.cuda.stream(torch.cuda.Stream()):  # do_bench_cudagraph captures on a side stream
            cudagraph = triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median") / 1e3
        report["do_bench_cudagraph_seconds"] = cudagraph
        report["do_bench_seconds"] = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") / 1e3
        if rows["graph"]:
            report["graph_vs_do_bench_cudagraph"] = rows["graph"] / cudagraph - 1
        return report

    def cold(self) -> dict[str, Any]:
        """Warm and cold on a cache-sized and a 4x larger working set."""
        ran, found, _ = self._check("test_cache", "cold", 150)
        rows: dict[str, dict[str, Any]] = {}
        for size in ("llc", "4x-llc"):
            row = {
                state: (found.get(f"test_modes_check.py::test_cache[{size}-{state}]") or {})
                .get("figures", {})
                .get("seconds_per_call")
                for state in ("warm", "cold")
            }
            row["cold_over_warm"] = row["cold"] / row["warm"] if row["warm"] and row["cold"] else None
            rows[size] = row
        report: dict[str, Any] = {"pytest": ran, "sets": rows}
        if self.device == "cuda":
            try:
                import torch
                import triton.testing

                from pytest_accel.engine.devices import resolve_device

                fn, _ = build_working_set("llc", resolve_device("cuda"))
                report["do_bench_llc_seconds"] = triton.testing.do_bench(fn, rep=100, return_mode="median") / 1e3
                del fn
                torch.cuda.empty_cache()
            except ImportError as error:
                report["do_bench_llc_seconds"] = f"not run: {error}"
        return report

    def throttle(self) -> dict[str, Any]:
        """A heating load beside a measured kernel; then the watch's discard path on this device's clock."""
        from pytest_accel.engine.devices import resolve_device

        device = resolve_device(self.device)
        device.activate()
        watch = device.clock_watch()
        report: dict[str, Any] = {"clock": watch.note or f"not watched on {self.device}"}
        if self.device == "cuda":
            report["heated"] = self._heated(watch.read)
        report["forced"] = _forced_throttle(device, watch.read)
        return report

    def _heated(self, read: Callable[[], float] | None) -> dict[str, Any]:
        import torch

        heater = subprocess.Popen([sys.executable, "-c", HEATER, str(HEATER_MAX_SECONDS)])
        trace: list[dict[str, float]] = []
        try:
            time.sleep(3)  # the load first: the clock falls under it, if it falls
            result_file = self.scratch / "heated.json"
            measure_seconds = str(HEATED_MEASURE_SECONDS)
            command = [
                *self.command, "test_modes_check.py", "-k", "test_heated", "--accel-json", str(result_file),
                "--accel-baselines", str(self.scratch / "none"), "--accel-measure-seconds", measure_seconds,
            ]  # fmt: skip
            timeout = min(HEATED_TIMEOUT_SECONDS, max(self.left(), 1.0))
            trace, tail = _watched(command, self.scratch, lambda: _gpu_reading(torch, read), timeout)
        finally:
            heater.kill()
            heater.wait()
        entry = self.results(result_file).get("test_modes_check.py::test_heated") or {}
        clocks = [row["sm_clock_mhz"] for row in trace if row.get("sm_clock_mhz")]
        return {
            "throttled_rounds": entry.get("throttled_rounds"),
            "rounds_kept": len(entry.get("samples", [])),
            "verdict": (entry.get("verdict") or {}).get("time", {}).get("reason"),
            "sm_clock_mhz_min_max": [min(clocks), max(clocks)] if clocks else None,
            "temperature_c_max": max((row.get("temperature_c", 0) for row in trace), default=None),
            "power_w_max": max((row.get("power_w", 0) for row in trace), default=None),
            "trace": trace[:80],
            "tail": tail,
        }

    def workers(self) -> dict[str, Any]:
        """Two pytest-xdist workers, a card each (``-n 2``), where the machine has two cards; on the CPU two workers
        of one core each. Which card each figure names, and the controller's one result file."""
        cards = 2
        if self.device == "cuda":
            import torch

            cards = torch.cuda.device_count()
        if cards < 2:
            return {"not_run": f"one card: not run ({cards} visible)"}
        result_file = self.scratch / "workers.json"
        ran = self.run(
            [
                *self.command, "test_modes_check.py", "-k", "test_tiny", "-n", "2", "--accel-json", str(result_file),
                "--accel-baselines", str(self.scratch / "none"), *self.dry_options,
            ],
            self.scratch,
            120,
        )  # fmt: skip
        found = self.results(result_file)
        document = json.loads(result_file.read_text()) if result_file.exists() else {}
        return {
            "pytest": ran,
            "figures": len(found),
            "cards": sorted(str((entry.get("extra") or {}).get("card")) for entry in found.values()),
            "workers": (document.get("provenance") or {}).get("workers"),
        }

    def full_profile(self) -> dict[str, Any]:
        """The full-profile train step and generation (smoke on the CPU), each against its per-test budget."""
        limit = max(FULL_PROFILE_BUDGET_SECONDS.values())
        return self._suite_rows("full_profile", FULL_PROFILE_FILES, FULL_PROFILE_SUBSET, limit)

    def matrix(self) -> dict[str, Any]:
        """The support matrix's rows not yet run: which passed, failed or skipped (with the reason), with figures."""
        return self._suite_rows("matrix", MATRIX_FILES, MATRIX_SUBSET_DRY if self.device == "cpu" else MATRIX_SUBSET)

    def compile(self) -> dict[str, Any]:
        """The 30-step inference compiled and as CUDA graphs: the matrix's rows that compile the 2B model."""
        return self._suite_rows(
            "compile", ("perf_tests/test_mmdit.py",), COMPILE_SUBSET_DRY if self.device == "cpu" else COMPILE_SUBSET
        )

    def _suite_rows(
        self, name: str, files: Sequence[str], subset: str, test_limit: float | None = None
    ) -> dict[str, Any]:
        """One pytest run of ``perf_tests`` (full profile; smoke on the CPU), cut at the section's estimate: each
        test's outcome, time and figure; with ``test_limit`` (seconds) each test's call against its
        FULL_PROFILE_BUDGET_SECONDS."""
        timeout = SECTION_SECONDS[name]
        profile = "smoke" if self.device == "cpu" else "full"
        result_file, junit, log = (self.scratch / f"{name}{suffix}" for suffix in (".json", ".xml", "-log.txt"))
        ran = self.run(
            [
                *self.command, *files, "-v", "--accel-profile", profile, "-k", subset, "--accel-json", str(result_file),
                "--accel-baselines", str(self.scratch / f"{name}-baselines"), "--junitxml", str(junit),
                *self.timeout_options(test_limit or MATRIX_TEST_SECONDS), *self.dry_options,
            ],
            ROOT,
            timeout,
            log=log,
        )  # fmt: skip
        figures = self.results(result_file)
        rows = {}
        outcomes = junit_outcomes(junit) or verbose_outcomes(log.read_text() if log.exists() else "")
        for test, outcome in outcomes.items():
            row = dict(outcome)
            metrics = [entry for key, entry in figures.items() if key == test]
            if metrics:
                row["items_per_second"] = metrics[0]["figures"]["items_per_second"]
                row["unit"] = metrics[0]["unit"]
                row["peak_memory_bytes"] = metrics[0]["peak_memory_bytes"]
                row["extra"] = metrics[0]["extra"]
            if test_limit is not None:
                function = test.split("::")[-1].split("[")[0]
                budget = FULL_PROFILE_BUDGET_SECONDS.get(function)
                row["budget_seconds"] = budget
                row["within_budget"] = (
                    budget is not None and outcome["outcome"] == "passed" and row["seconds"] <= budget
                )
            rows[test] = row
        return {"pytest": ran, "profile": profile, "tests": rows}


def _gpu_reading(torch: Any, read: Callable[[], float] | None) -> dict[str, float]:
    """The SM clock, temperature and power now (each where NVML answers)."""
    reading: dict[str, float] = {"t": time.monotonic()}
    for key, call in (
        ("sm_clock_mhz", read),
        ("temperature_c", getattr(torch.cuda, "temperature", None)),
        ("power_w", getattr(torch.cuda, "power_draw", None)),
    ):
        try:
            if call is not None:
                value = float(call())
                reading[key] = value / 1000 if key == "power_w" else value  # power_draw is in milliwatts
        except Exception:  # NVML missing or refusing one query: the others still count
            pass
    return reading


def _forced_throttle(device: Any, read: Callable[[], float] | None) -> dict[str, Any]:
    """The throttle watch on this device's real clock reading (a fixed 1000 MHz where none can be read),
    halved from the THROTTLE_FORCED_AFTER-th round on for two readings: those rounds must be retaken."""
    import torch

    from pytest_accel.engine.sampling import MeasureConfig, TimingMode, measure

    clock = read or (lambda: 1000.0)
    readings = [0]

    def forced() -> float:
        readings[0] += 1
        value = clock()
        # reading 1 is the reference; reading k + 1 follows round k
        return value / 2 if THROTTLE_FORCED_AFTER + 1 < readings[0] <= THROTTLE_FORCED_AFTER + 3 else value

    n = 1024 if device.kind == "cuda" else 64
    a = torch.randn(n, n, device=device.torch_device())
    waits: list[float] = []
    config = MeasureConfig(measure_seconds=0.05, min_rounds=8, max_rounds=8, warmup_max_seconds=0.2)
    result = measure(
        lambda: a @ a,
        timer=device.timer(),
        items_per_call=1,
        unit="matmuls",
        config=config,
        mode=TimingMode(clock=forced, sleep=lambda s: (waits.append(s), time.sleep(s))[0]),
    )
    return {
        "clock_source": "NVML" if read is not None else "a fixed 1000 MHz (no clock on this device)",
        "rounds_kept": len(result.samples),
        "throttled_rounds": result.throttled_rounds,
        "waited_seconds": sum(waits),
        "discarded_and_retaken": len(result.samples) == 8 and result.throttled_rounds >= 1,
    }


def save_section(out: Path, name: str, value: Any) -> None:
    """One section's own file, ``<out>/sections/<name>.json``: a later call's sections never overwrite it."""
    folder = out / "sections"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(value, indent=1, default=str) + "\n")


def merged_report(out: Path, device: str) -> dict[str, Any]:
    """What earlier calls with the same ``--out`` and device found, to be extended (empty when none)."""
    path = out / "device_check.json"
    try:
        earlier = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return earlier if isinstance(earlier, dict) and earlier.get("device") == device else {}
