"""A real 2-rank gloo job on the CPU, launched by torchrun: aggregation, rank-0 reporting, no hangs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Rank 0 sleeps 1 ms per call, rank 1 sleeps 3 ms: a round lasts as long as the slowest rank's.
UNEVEN = """
import os, time

def test_uneven(throughput):
    seconds = 0.001 if os.environ["RANK"] == "0" else 0.003
    throughput(lambda: time.sleep(seconds), items=1, unit="naps")
"""

FAILING = """
import os

def test_rank_one_fails(throughput):
    if os.environ["RANK"] == "1":
        raise RuntimeError("boom on rank one")
    throughput(lambda: None, items=1, unit="calls")
"""

KILLED = """
import os, time

def test_rank_one_dies(throughput):
    if os.environ["RANK"] == "1":
        os._exit(3)
    throughput(lambda: time.sleep(0.001), items=1, unit="calls")
"""

HUNG = """
import os, time

def test_measured(throughput):
    throughput(lambda: time.sleep(0.001), items=1, unit="calls")

def test_rank_one_hangs_after():
    if os.environ["RANK"] == "1":
        time.sleep(600)
"""


def torchrun(folder: Path, test_file: str, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``torchrun --standalone --nproc-per-node 2 -m pytest <file> ...`` in ``folder``."""
    (folder / "test_job.py").write_text(test_file)
    (folder / "pytest.ini").write_text("[pytest]\naccel_warmup_max_seconds = 0.3\naccel_rank_timeout_seconds = 20\n")
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        "-m", "pytest", "test_job.py", "--device", "cpu", "-p", "no:cacheprovider", "--accel-measure-seconds", "0.2",
        *args,
    ]  # fmt: skip
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_throughput_is_global_and_only_rank_zero_reports(tmp_path: Path) -> None:
    from pytest_accel.engine.devices.cpu import CpuDevice
    from pytest_accel.judgement.baselines import BaselineEntry, BaselineStore

    # A one-device baseline at 3 ms per call: the scaling efficiency of the 2-rank run is computed against it.
    single = BaselineEntry("test_job.py::test_uneven", "throughput", "naps", 1.0, (0.003,) * 5)
    BaselineStore(tmp_path / "bl").update(CpuDevice().key(), "smoke", 1, [single])
    ran = torchrun(tmp_path, UNEVEN, "--accel-json", "out.json", "--accel-baselines", "bl", "--accel-update")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    (result,) = json.loads((tmp_path / "out.json").read_text())["results"]
    assert result["items_per_call"] == 2  # one item per rank
    # The slow rank's time, not the fast one's: sleep(0.003) never returns early, whatever the machine's load
    # (no upper bound: a busy host stretches sleeps by any amount).
    assert result["figures"]["seconds_per_call"] >= 0.003
    # N-device items/s over N x the one-device baseline's items/s.
    expected = result["figures"]["items_per_second"] / (2 * single.items_per_second)
    assert result["extra"]["scaling_efficiency"] == pytest.approx(expected)
    assert ran.stdout.count("accel measurements") == 1  # rank 0's table only
    (written,) = (tmp_path / "bl").glob("*/smoke-w2.json")  # world size 2 has a baseline file of its own
    assert "test_job.py::test_uneven" in written.read_text()


@pytest.mark.slow
def test_a_failure_on_one_rank_fails_the_test_everywhere_naming_it(tmp_path: Path) -> None:
    started = time.monotonic()
    ran = torchrun(tmp_path, FAILING)
    assert ran.returncode != 0
    assert time.monotonic() - started < 120  # bounded: no hang until a backend timeout
    assert "rank 1: call failed: RuntimeError: boom on rank one" in ran.stdout


@pytest.mark.slow
def test_a_killed_rank_ends_the_job_and_leaves_no_worker(tmp_path: Path) -> None:
    started = time.monotonic()
    ran = torchrun(tmp_path, KILLED)
    assert ran.returncode != 0
    assert time.monotonic() - started < 120
    assert "exitcode" in ran.stderr or "rank(s) [1] did not reach" in ran.stdout
    leftover = subprocess.run(["pgrep", "-f", "pytest test_job.py"], capture_output=True, text=True).stdout.split()
    assert not leftover, f"processes of the job survived: {leftover}"


@pytest.mark.long
def test_a_rank_hung_in_a_later_test_ends_the_job_non_zero_naming_it(tmp_path: Path) -> None:
    """Rank 0 waits accel_rank_timeout_seconds (20 s here) at the end, then fails the job."""
    started = time.monotonic()
    ran = torchrun(tmp_path, HUNG, timeout=300)
    assert ran.returncode != 0, ran.stdout[-2000:]
    assert time.monotonic() - started < 120  # not the hung rank's 600 s
    assert "rank(s) [1] did not reach 'finished' within 20 s" in ran.stdout + ran.stderr
    leftover = subprocess.run(["pgrep", "-f", "pytest test_job.py"], capture_output=True, text=True).stdout.split()
    assert not leftover, f"processes of the job survived: {leftover}"


@pytest.mark.parametrize("variable", ["WORLD_SIZE"])
def test_a_single_process_run_is_not_distributed(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_accel.engine.distributed import world_from_environment

    monkeypatch.setenv(variable, "1")
    assert world_from_environment() is None
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    world = world_from_environment()
    assert world is not None and (world.rank, world.world_size, world.local_rank) == (3, 4, 1)
