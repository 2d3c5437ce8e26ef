"""The timing modes as a user meets them: the errors and the table's note (pytester runs)."""

from __future__ import annotations

import json

import pytest
from support import FAST_OPTIONS

MODE_TEST = """
import torch

def test_add(throughput, accel_device):
    a = torch.ones(256, device=accel_device.torch_device())
    throughput(lambda: a + a, items=1, unit="adds", {arguments})
"""


def test_graph_timing_on_the_cpu_fails_the_test_naming_the_cause(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(MODE_TEST.format(arguments='timing="graph"'))
    result = perf_pytester.runpytest("--device", "cpu", *FAST_OPTIONS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*throughput: timing='graph' replays a captured device graph*use timing='eager' on the CPU*"]
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('timing="graphs"', "*timing must be one of 'eager', 'graph', got 'graphs'*"),
        ('timing="graph", cold=True', "*cold=True needs timing='eager'*"),
        ("cold=1", "*cold must be True or False, got 1*"),
        ("cold=True, pipelined=True", "*a pipelined workload is timed eager and warm*"),
    ],
)
def test_a_bad_mode_fails_before_measuring(perf_pytester: pytest.Pytester, arguments: str, message: str) -> None:
    perf_pytester.makepyfile(MODE_TEST.format(arguments=arguments))
    result = perf_pytester.runpytest("--device", "cpu", *FAST_OPTIONS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([message])


def test_a_cold_figure_says_so_in_the_table_and_the_results(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(MODE_TEST.format(arguments="cold=True"))
    result = perf_pytester.runpytest("--device", "cpu", "--accel-json", "r.json", *FAST_OPTIONS)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_add*adds/s*(cold)*"])
    (entry,) = json.loads((perf_pytester.path / "r.json").read_text())["results"]
    assert (entry["timing"], entry["cache"], entry["throttled_rounds"]) == ("eager", "cold", 0)
