"""At what size does reading the history folder get slow, and what does its SQLite index answer in?

    python docs/studies/history/history_scale.py --nights 100 1000 --index-only 5000 --work /tmp/history-scale

Writes synthetic nights (MEASUREMENTS measurements each, ROUNDS rounds with a probe figure per round and
five state figures: the shape of this project's nightly files, without operator tables and verdicts,
so a file is about half the size of a real one) into ``--work/<nights>/<device>/``, then times:

- the folder scan: every file read and validated (``read_folder``), what ``pytest-accel history FOLDER`` does;
- the first build of the index (``--db`` on a new file) and a refresh with nothing new (every later night
  adds one file; the refresh reads only that one, and stats the others);
- the query: the nights out of the index (``--db`` without a folder);
- the change points of every figure, for both detectors (the table's cost, whichever the source).

``--index-only`` sizes are not written as files (disk and minutes): their nights go straight into an
index, so only the query and the change points are timed there. Wall-clock seconds on whatever runs it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from changepoints import DETECTORS  # this folder: the two detectors compared

from pytest_accel.core.measurement import Measurement
from pytest_accel.core.stats import mann_whitney_p
from pytest_accel.judgement.results import Recorded, results_document
from pytest_accel.outputs.history_index import HistoryIndex
from pytest_accel.outputs.history_store import Figure, Night, read_folder

MEASUREMENTS = 50  # figures per night: the full profile's suite has about 50
ROUNDS = 20  # timed rounds per figure (the suite's minimum is 10; most take 20-40)
DEVICE = "cuda-synthetic-h100"
COLUMNS = ("files_mb", "scan_s", "index_build_s", "index_refresh_and_query_s", "index_query_s", "index_mb")


def document(night: int, rng: random.Random) -> dict[str, object]:
    """One night's result document: 50 figures, each with 3% night-to-night noise."""
    recorded = []
    for k in range(MEASUREMENTS):
        level = (1 + 0.01 * k) * rng.gauss(1.0, 0.03)
        samples = tuple(level * 1e-3 * rng.gauss(1.0, 0.01) for _ in range(ROUNDS))
        probes = tuple(1e-4 * rng.gauss(1.0, 0.01) for _ in range(ROUNDS))
        state = {name: 1e-3 * rng.gauss(1.0, 0.02) for name in ("compute", "memory", "latency", "fresh")}
        measurement = Measurement("images", 32.0, samples, probe_samples=probes, state=state, device_key=DEVICE)
        recorded.append(Recorded(f"perf_tests/test_suite.py::test_{k}", "passed", measurement, None))
    doc = results_document(
        recorded, device_kind="cuda", device_key=DEVICE, provenance={"commit": f"{night:012x}"}, profile="full",
        world_size=1,
    )  # fmt: skip
    doc["date"] = f"{date_of(night)}T02:17:00+00:00"
    return doc


def date_of(night: int) -> str:
    """Night 0 is 2010-01-01: 5,000 nights end in 2023."""
    return (datetime.date(2010, 1, 1) + datetime.timedelta(days=night)).isoformat()


def timed(what: Callable[[], object], repeat: int = 1) -> tuple[float, object]:
    """(best wall seconds of ``repeat`` calls, the last call's result)."""
    best, result = math.inf, None
    for _ in range(repeat):
        started = time.perf_counter()
        result = what()
        best = min(best, time.perf_counter() - started)
    return best, result


def change_point_seconds(nights: list[Night]) -> dict[str, float]:
    """Seconds to find the change points of every figure, per detector."""
    keys = sorted({key for night in nights for key in night.figures})
    series = [[night.figures[key].compared for night in nights if key in night.figures] for key in keys]
    seconds = {}
    for name, detect in DETECTORS.items():
        started = time.perf_counter()
        for values in series:
            detect(values, 0.05)
        seconds[name] = time.perf_counter() - started
    return seconds


def per_split_segmentation_seconds(nights: list[Night]) -> float:
    """The first level of the segmentation as it was: a Mann-Whitney test per split (one figure)."""
    values = [night.figures[next(iter(night.figures))].compared for night in nights]
    return timed(lambda: min(mann_whitney_p(values[:k], values[k:]) for k in range(3, len(values) - 2)))[0]


def on_files(work: Path, count: int) -> dict[str, object]:
    """Write ``count`` nights as files and time the scan, the index and the change points."""
    folder = work / str(count)
    shutil.rmtree(folder, ignore_errors=True)
    (folder / DEVICE).mkdir(parents=True)
    rng = random.Random(count)
    started = time.perf_counter()
    for night in range(count):
        (folder / DEVICE / f"{date_of(night)}-{night:012x}-1.json").write_text(
            json.dumps(document(night, rng), indent=2)
        )
    written = time.perf_counter() - started
    size = sum(p.stat().st_size for p in (folder / DEVICE).iterdir())
    scan, nights = timed(lambda: read_folder(folder))
    assert isinstance(nights, list)
    index_path = work / f"{count}.sqlite"
    index_path.unlink(missing_ok=True)
    with HistoryIndex(index_path) as index:
        build = timed(lambda: index.refresh(folder))[0]
        refresh = timed(lambda: (index.refresh(folder), index.nights()), repeat=3)[0]
        query = timed(index.nights, repeat=3)[0]
    return {"nights": count, "files_mb": size / 1e6, "write_s": written, "scan_s": scan, "index_build_s": build,
            "index_refresh_and_query_s": refresh, "index_query_s": query, "index_mb": index_path.stat().st_size / 1e6,
            "change_points_s": change_point_seconds(nights),
            "per_split_level_s": per_split_segmentation_seconds(nights)}  # fmt: skip


def index_only(work: Path, count: int) -> dict[str, object]:
    """``count`` nights straight into an index (no files): the query and the change points."""
    rng = random.Random(count)
    index_path = work / f"{count}-index-only.sqlite"
    index_path.unlink(missing_ok=True)
    with HistoryIndex(index_path) as index:
        with index.connection:
            for night in range(count):
                figures = {
                    (f"perf_tests/test_suite.py::test_{k}", "throughput"): Figure(10 * rng.gauss(1.0, 0.03), 32e3)
                    for k in range(MEASUREMENTS)
                }
                name = f"{date_of(night)}-{night:012x}-1.json"
                night_record = Night(DEVICE, f"{date_of(night)}T02:17:00+00:00", date_of(night), name, "", figures)
                index.add(f"/synthetic/{name}", 0, 0, night_record)
        query, nights = timed(index.nights, repeat=3)
        assert isinstance(nights, list)
    return {"nights": count, "index_query_s": query, "index_mb": index_path.stat().st_size / 1e6,
            "change_points_s": change_point_seconds(nights)}  # fmt: skip


def main() -> None:
    """Time every size, print a Markdown table, and keep the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, nargs="*", default=[100, 1000], help="sizes written as files")
    parser.add_argument("--index-only", type=int, nargs="*", default=[5000], help="sizes put in an index only")
    parser.add_argument("--work", type=Path, default=Path("/tmp/history-scale"), help="scratch folder")
    parser.add_argument("--out", type=Path, help="write the rows here (JSON)")
    options = parser.parse_args()
    options.work.mkdir(parents=True, exist_ok=True)
    rows = [on_files(options.work, n) for n in options.nights] + [
        index_only(options.work, n) for n in options.index_only
    ]
    print("| nights | files (MB) | folder scan (s) | index build (s) | refresh + query (s) | query (s) | index (MB) |"
          " change points, segmentation / windowed (s) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        cells = [f"{row[k]:.3g}" if isinstance(row.get(k), float) else "-" for k in COLUMNS]
        seconds = row["change_points_s"]
        assert isinstance(seconds, dict)
        print(f"| {row['nights']} | {' | '.join(cells)} | {seconds['segmentation']:.3g} / {seconds['windowed']:.3g} |")
    for row in rows:
        if "per_split_level_s" in row:
            seconds = row["per_split_level_s"]
            print(f"{row['nights']} nights: one level of the per-split segmentation, one figure: {seconds:.3g} s")
    if options.out is not None:
        options.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
