"""The work counted under real valgrind (``--accel-count``): recorded, judged unchanged, and a planted extra
elementwise operation per call that fails its test naming the counts and the functions that moved. Slow: each
run imports torch under valgrind (half a minute and more)."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_accel.judgement.counts import CountStore
from pytest_accel.sittings.counting import shares_of

# A test whose workload does more arithmetic when EXTRA_ADDS is set: a slowdown from the environment.
WORKLOAD = """
import os
import torch

def test_adds(throughput):
    x = torch.randn(256, 256, generator=torch.Generator().manual_seed(0))
    extra = int(os.environ.get("EXTRA_ADDS", "0"))

    def call():
        out = x @ x
        for _ in range(extra):
            out = out + x
        return out

    throughput(call, items=1, unit="calls")
"""

COUNT_ONLY = ("--device", "cpu", "--accel-count", "--benchmark-disable", "--accel-baselines", "bl", "-p", "no:xdist")

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")


@pytest.mark.slow
@needs_valgrind
def test_a_recorded_count_judges_unchanged_code_unchanged_and_a_planted_add_as_grown(
    perf_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    perf_pytester.makepyfile(test_work=WORKLOAD)
    recorded = perf_pytester.runpytest_subprocess(*COUNT_ONLY, "--accel-update")
    assert recorded.ret == 0, recorded.stdout.str()
    stored = [path for path in (perf_pytester.path / "bl" / "counts").rglob("*.json")]
    assert len(stored) == 1 and "-valgrind" in stored[0].parent.name
    entries = CountStore(perf_pytester.path / "bl").load(stored[0].parent.name, "smoke")
    [(test, metric)] = entries
    assert test.endswith("test_adds") and entries[(test, metric)][0].instructions > 1e6

    same = perf_pytester.runpytest_subprocess(*COUNT_ONLY, "--accel-json", "same.json")
    assert same.ret == 0, same.stdout.str()
    same.stdout.fnmatch_lines(["*work counted: 1 unchanged*"])
    verdict = json.loads((perf_pytester.path / "same.json").read_text())["results"][0]["verdict"]
    assert verdict["count"]["outcome"] == "unchanged"

    monkeypatch.setenv("EXTRA_ADDS", "4")
    grown = perf_pytester.runpytest_subprocess(*COUNT_ONLY)
    assert grown.ret == 1, grown.stdout.str()
    grown.stdout.fnmatch_lines(["*perf work counted grew: test_adds*", "*instructions per call*: regressed*"])
    assert "add" in grown.stdout.str().split("perf work counted grew", 1)[1]  # the function that moved is named


def test_counting_without_valgrind_is_a_usage_error(perf_pytester: pytest.Pytester) -> None:
    perf_pytester.makepyfile(test_work=WORKLOAD)
    perf_pytester.makeconftest("import pytest_accel.plugin.parts as parts\nparts.valgrind_version = lambda: None\n")
    result = perf_pytester.runpytest_subprocess(*COUNT_ONLY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*needs valgrind*apt-get install valgrind*"])


SDPA = {"decode": 9e6, "prefill": 4.3e9, "sd3-128": 3.8e8, "sd3-256": 1.3e9, "m-decode": 2.7e7, "m-prefill": 4.8e9}


def test_recorded_instructions_share_the_counting_out_evenly_in_the_selections_order() -> None:
    tests = list(SDPA)
    assert shares_of(tests, 2, {}) == [["decode", "sd3-128", "m-decode"], ["prefill", "sd3-256", "m-prefill"]]
    shares = shares_of(tests, 2, SDPA)
    loads = sorted(sum(SDPA[test] for test in share) for share in shares)
    assert loads[1] / sum(loads) < 0.6  # in turn, one share held 96% of this work
    assert all(share == [t for t in tests if t in share] for share in shares)
    assert shares_of(tests, 2, {"decode": 1.0}) == shares_of(tests, 2, {})  # a test without a recording: in turn


@given(st.dictionaries(st.text(min_size=1, max_size=4), st.floats(1, 1e10), min_size=1), st.integers(1, 8))
def test_shares_hold_every_test_once(costs: dict[str, float], shares: int) -> None:
    tests = list(costs)
    for given_costs in (costs, {}):
        split = shares_of(tests, shares, given_costs)
        assert len(split) == shares and sorted(t for share in split for t in share) == sorted(tests)
