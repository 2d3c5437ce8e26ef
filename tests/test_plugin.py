"""End-to-end runs of the plugin through pytester: exit codes and output."""

from __future__ import annotations

import json
import sys

import pytest
from support import FAST_OPTIONS, PERF_TEST


def test_perf_test_passes_and_prints_the_table(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(PERF_TEST)
    result = perf_pytester.runpytest("--device", "cpu", *FAST_OPTIONS)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "accel: device cpu (key cpu-*-*c), profile smoke",
            "accel: device_model=*torch=*",
            "*= accel measurements =*",
            "test*device*throughput*spread*latency*TFLOP/s*peak mem*verdict",
            "*test_matmul*cpu-*rows/s*±*",
        ]
    )


def test_auto_device_is_resolved_after_collection_and_named(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(PERF_TEST)
    result = perf_pytester.runpytest(*FAST_OPTIONS)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["accel: device auto (resolved when a perf test is collected)*", "accel: device cpu (key cpu-*", "*1 passed*"]
    )


@pytest.mark.parametrize("option", ["--device", "--accel-device"])
@pytest.mark.parametrize("missing", ["hpu", "cuda"])
def test_missing_device_is_a_usage_error_naming_what_exists(
    perf_pytester: pytest.Pytester, option: str, missing: str
) -> None:
    perf_pytester.makepyfile(PERF_TEST)
    result = perf_pytester.runpytest(option, missing, *FAST_OPTIONS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --device {missing} was requested but no {missing} device is usable*Found instead: cpu*"]
    )
    result.stdout.no_fnmatch_line("*passed*")


def test_missing_device_from_ini_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\naccel_device = hpu\n")
    pytester.makepyfile(PERF_TEST)
    result = pytester.runpytest(*FAST_OPTIONS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no hpu device is usable*habana_frameworks is not installed*"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--device", "tpu"], "*argument --device*invalid choice: 'tpu'*"),
        (["--accel-profile", "huge"], "*invalid choice: 'huge'*"),
        (["--accel-measure-seconds", "-1"], "*must be a finite number greater than 0*"),
        (["--accel-json", "no/such/folder/out.json"], "*the folder of*does not exist*"),
    ],
)
def test_bad_options_are_usage_errors(perf_pytester: pytest.Pytester, args: list[str], message: str) -> None:
    perf_pytester.makepyfile(PERF_TEST)
    result = perf_pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_bad_ini_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\naccel_measure_seconds = fast\n")
    pytester.makepyfile(PERF_TEST)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*accel_measure_seconds = 'fast' is not a number*"])


def test_unknown_marker_setting_is_a_usage_error(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(PERF_TEST.replace("def test_matmul", "@pytest.mark.perf(rounds=3)\ndef test_matmul"))
    result = perf_pytester.runpytest("--device", "cpu", *FAST_OPTIONS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown perf marker setting(s) rounds*"])


def test_nan_output_fails_the_test_with_a_clear_message(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(
        """
        import torch
        def test_nan(throughput):
            throughput(lambda: torch.tensor([float("nan")]), items=1, unit="x")
        """
    )
    result = perf_pytester.runpytest("--device", "cpu", *FAST_OPTIONS)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*the first call's output: output is not finite (NaN or Inf)*"])


def test_out_of_memory_fails_that_test_with_figures_and_the_suite_goes_on(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(
        """
        def test_oom(throughput):
            def grab():
                raise MemoryError()
            throughput(grab, items=1, unit="x")

        def test_after(throughput):
            throughput(lambda: 1.0, items=1, unit="x")
        """
    )
    result = perf_pytester.runpytest("--device", "cpu", *FAST_OPTIONS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*out of device memory on cpu-*: requested ?, peak * ?iB, limit * GiB. Caches were freed*"]
    )


def test_an_out_of_memory_error_frees_the_frames_of_the_errors_it_wraps() -> None:
    """A workload that wraps the allocator's error (as the media pipeline does) still gets its tensors freed."""
    import gc
    import weakref

    from pytest_accel.plugin.fixture import _clear_frames_of_chain

    class Tensorish:
        pass

    refs: list[weakref.ref[Tensorish]] = []

    def allocate() -> None:
        held = Tensorish()
        refs.append(weakref.ref(held))
        raise MemoryError("out of memory")

    def wrapper() -> None:
        try:
            allocate()
        except MemoryError as error:
            raise RuntimeError("the pipeline failed: out of memory") from error

    try:
        wrapper()
    except RuntimeError as error:
        caught = error
    gc.collect()
    assert refs[0]() is not None  # held by the inner error's frames
    _clear_frames_of_chain(caught)
    gc.collect()
    assert refs[0]() is None


def test_accel_json_holds_results_and_provenance(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(PERF_TEST)
    result = perf_pytester.runpytest("--device", "cpu", "--accel-json", "out.json", *FAST_OPTIONS)
    result.assert_outcomes(passed=1)
    document = json.loads((perf_pytester.path / "out.json").read_text())
    assert document["schema"] == 1
    assert document["device"]["key"].startswith("cpu-")
    assert "torch" in document["provenance"]
    (entry,) = document["results"]
    assert entry["test"].endswith("test_matmul")
    assert entry["unit"] == "rows" and len(entry["samples"]) >= 10
    assert entry["figures"]["tflops"] > 0


def test_pipelined_consumer_of_a_real_dataloader_is_measured(perf_pytester: pytest.Pytester) -> None:
    """``pipelined=True`` over a DataLoader with a worker process: measured, normalisable, no stray label."""
    perf_pytester.makepyfile(
        """
        import torch
        from torch.utils.data import DataLoader

        def test_loader(throughput):
            loader = DataLoader(torch.arange(4096.0), batch_size=64, num_workers=1, persistent_workers=True)
            batches = [iter(loader)]

            def next_batch():
                try:
                    return next(batches[0])
                except StopIteration:
                    batches[0] = iter(loader)
                    return next(batches[0])

            try:
                m = throughput(next_batch, items=64, unit="samples", pipelined=True, workers=1)
            finally:
                batches[0]._shutdown_workers()  # DataLoader has no public close()
            assert m.items_per_second > 0
            # The pipelined path: one probe figure (the block's median) for every round.
            assert len(set(m.probe_samples)) == 1 and len(m.probe_samples) == len(m.samples)
        """
    )
    result = perf_pytester.runpytest("--device", "cpu", "--accel-json", "out.json", *FAST_OPTIONS)
    result.assert_outcomes(passed=1)
    (entry,) = json.loads((perf_pytester.path / "out.json").read_text())["results"]
    assert {k: v for k, v in entry["extra"].items() if k != "energy"} == {"workers": 1}  # and its energy, or why not


@pytest.mark.slow
def test_figures_reach_benchmark_json_and_junit(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(PERF_TEST)
    # In a subprocess: pytest-benchmark leaves its --benchmark-json file object open, which an
    # in-process run would report as an unraisable ResourceWarning in some later test.
    result = perf_pytester.runpytest_subprocess(
        "--device", "cpu", "--benchmark-json", "bench.json", "--junit-xml", "junit.xml", *FAST_OPTIONS
    )
    result.assert_outcomes(passed=1)
    (bench,) = json.loads((perf_pytester.path / "bench.json").read_text())["benchmarks"]
    accel = bench["extra_info"]["accel"][0]
    assert bench["stats"]["rounds"] == len(accel["samples"])
    assert bench["stats"]["median"] == pytest.approx(accel["figures"]["seconds_per_call"])
    junit = (perf_pytester.path / "junit.xml").read_text()
    assert '<property name="accel_measurement"' in junit


def test_benchmark_disable_runs_once_untimed(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(
        PERF_TEST
        + """
def test_nan_still_caught(throughput):
    throughput(lambda: torch.tensor([float("inf")]), items=1, unit="x")
"""
    )
    result = perf_pytester.runpytest("--device", "cpu", "--benchmark-disable", *FAST_OPTIONS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*the workload's output: output is not finite*", "*test_matmul*disabled*"])
    result.stdout.no_fnmatch_line("*During handling*")


def test_benchmark_skip_skips_perf_tests(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(PERF_TEST + "\ndef test_plain():\n    pass\n")
    result = perf_pytester.runpytest("--device", "cpu", "--benchmark-skip", *FAST_OPTIONS)
    result.assert_outcomes(passed=1, skipped=1)


def test_a_project_owning_device_keeps_it_and_ours_stays_reachable(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makeconftest(
        """
        def pytest_addoption(parser):
            parser.addoption("--device", default="gaudi2", help="the project's own device option")
        """
    )
    perf_pytester.makepyfile(
        PERF_TEST + "\ndef test_theirs(request):\n    assert request.config.getoption('device') == 'gaudi3'\n"
    )
    result = perf_pytester.runpytest("--device", "gaudi3", "--accel-device", "cpu", *FAST_OPTIONS)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["accel: device cpu (key cpu-*"])


def test_two_measurements_need_distinct_names(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(
        """
        def test_twice(throughput):
            throughput(lambda: 1.0, items=1, unit="x", name="prefill")
            throughput(lambda: 1.0, items=1, unit="x", name="decode")
            throughput(lambda: 1.0, items=1, unit="x", name="decode")
        """
    )
    result = perf_pytester.runpytest("--device", "cpu", *FAST_OPTIONS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*measurement 'decode' was already taken*", "*test_twice*[[]prefill[]]*"])


def _imports_torch(pytester: pytest.Pytester, *args: str) -> tuple[int, bool]:
    code = f"import sys, pytest; rc = pytest.main({list(args)!r}); print('TORCH', 'torch' in sys.modules); sys.exit(rc)"
    result = pytester.run(sys.executable, "-c", code)
    line = next(line for line in result.outlines if line.startswith("TORCH"))
    return result.ret, line.endswith("True")


def test_help_and_plain_runs_do_not_import_torch(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    assert True\n")
    assert _imports_torch(pytester, "--help") == (0, False)
    assert _imports_torch(pytester, "-p", "no:accel") == (0, False)
    assert _imports_torch(pytester) == (0, False)  # auto device, no perf test collected


def test_plugin_can_be_disabled(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PERF_TEST)
    result = pytester.runpytest("-p", "no:accel")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'throughput' not found*"])


def test_markdown_summary_and_percent_of_peak(perf_pytester: pytest.Pytester) -> None:
    """--accel-markdown writes the job-page summary; the % of peak follows from the FLOPs the test passed."""
    perf_pytester.makepyfile(PERF_TEST)
    result = perf_pytester.runpytest(
        "--device", "cpu", "--accel-markdown", "run.md", "--accel-json", "out.json", *FAST_OPTIONS
    )
    result.assert_outcomes(passed=1)
    markdown = (perf_pytester.path / "run.md").read_text()
    assert markdown.startswith("## pytest-accel on cpu-") and "(smoke)" in markdown.splitlines()[0]
    assert "No regression." in markdown
    assert "::test_matmul` | " in markdown and " rows/s | ±" in markdown and "| new |" in markdown
    (entry,) = json.loads((perf_pytester.path / "out.json").read_text())["results"]
    tflops = 2 * 64**3 / entry["figures"]["seconds_per_call"] / 1e12
    percent = entry["extra"]["percent_of_measured_tflops"]
    # percent = 100 x achieved / the session's measured matmul peak: a 64^3 matmul reaches a fraction of it.
    assert 0 < percent < 150 and tflops == pytest.approx(entry["figures"]["tflops"])
    assert "percent_of_datasheet_tflops" not in entry["extra"]  # CPUs have no datasheet entry


def test_cpu_threads_option_pins_torch_and_is_recorded(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(
        PERF_TEST
        + """
def test_threads():
    assert torch.get_num_threads() == 1
"""
    )
    result = perf_pytester.runpytest("--device", "cpu", "--accel-cpu-threads", "1", *FAST_OPTIONS)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["accel: *cpu_threads=1*"])


def test_one_table_unless_pytest_benchmark_is_asked_for_something(perf_pytester: pytest.Pytester) -> None:
    """Ours by default; pytest-benchmark's beside it once the run gives any --benchmark-* option."""
    perf_pytester.makepyfile(test_small=PERF_TEST)
    ours = perf_pytester.runpytest("--device", "cpu", *FAST_OPTIONS)
    ours.assert_outcomes(passed=1)
    ours.stdout.fnmatch_lines(["*accel measurements*"])
    ours.stdout.no_fnmatch_line("*benchmark: 1 tests*")
    both = perf_pytester.runpytest("--device", "cpu", "--benchmark-columns", "min,median", *FAST_OPTIONS)
    both.assert_outcomes(passed=1)
    both.stdout.fnmatch_lines(["*accel measurements*", "*benchmark: 1 tests*"])
