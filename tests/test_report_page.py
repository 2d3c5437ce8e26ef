"""The cross-device report page looked at in a real browser: Chromium (Debian's, driven by Playwright) renders the
page `pytest-accel report --html` makes from a real CPU run and two result files constructed from it, and a
screenshot of the whole page is taken and read back.

CI installs Chromium (`.ci/run`); where it is not installed the test is skipped, saying how to install it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support import FAST_OPTIONS

from pytest_accel.commands.cli import main
from pytest_accel.core.cost import cost_of
from pytest_accel.core.energy import Energy

CHROMIUM = next((p for name in ("chromium", "chromium-browser") if (p := shutil.which(name))), None)
# Chromium as root on a closed network: no sandbox, and none of its background connections (each refused)
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip

# The data path's shape: a loader per worker count and the device's decode, as the BridgeTower study laid it out
WORKLOAD = """
import torch
import pytest

a = torch.randn(96, 96)

@pytest.mark.parametrize("workers", [0, 1, 2, "device decode"])
def test_loader(throughput, workers):
    throughput(lambda: a @ a, items=8, unit="samples", workers=workers)

# the suite's long parameter ids: the page must show them without pushing itself sideways
@pytest.mark.parametrize("kernel", ["sdpa-flash-llama70b-decode-kv384", "sdpa-math-llama70b-prefill-512",
                                    "sdpa-flash-sd3-256px-b2", "sdpa-math-sd3-128px-b2"])
def test_attention_forward_step(throughput, kernel):
    throughput(lambda: a @ a @ a, items=4, unit="sequences")
"""

# (device key, speed-up over the CPU run, watts, price per hour): stated, so the page's ratios are known
CONSTRUCTED = (("constructed-gpu", 40.0, 400.0, 4.00), ("constructed-gaudi", 30.0, 300.0, 3.00))
CPU_PRICE = 0.40


def constructed(source: Path, key: str, speedup: float, watts: float, price: float) -> Path:
    """A result file of a device that did not run: ``source``'s key renamed, each time divided by ``speedup``, an
    energy window of ``watts`` over 1 s and ``price`` per hour stated, not read."""
    document = json.loads(source.read_text())
    document["device"]["key"] = key
    for entry in document["results"]:
        entry["device_key"] = key
        entry["samples"] = [s / speedup for s in entry["samples"]]
        entry["probe_samples"] = []
        rate = entry["figures"]["items_per_second"] * speedup
        energy = Energy("constructed", watts, 1.0, rate)
        entry["extra"].update(energy=energy.to_json(), cost=cost_of(rate, price, energy, 0.15).to_json())
        entry.pop("figures")
    path = source.with_name(f"{key}.json")
    path.write_text(json.dumps(document))
    return path


@pytest.fixture
def page(perf_pytester: pytest.Pytester, tmp_path: Path) -> Path:
    """The report page of three files: a real CPU run (priced in the ini alone) and two constructed from it."""
    perf_pytester.makepyfile(test_loader=WORKLOAD)
    perf_pytester.runpytest(
        "--device", "cpu", "--accel-json", "cpu.json", "-o", f"accel_price_per_hour=cpu={CPU_PRICE}", *FAST_OPTIONS
    ).assert_outcomes(passed=8)
    cpu = perf_pytester.path / "cpu.json"
    files = [cpu, *(constructed(cpu, *stated) for stated in CONSTRUCTED)]
    html = tmp_path / "report.html"
    options = ["--reference", "constructed-gpu", "--pivot", "workers", "--html", str(html)]
    assert main(["report", *map(str, files), *options]) == 0
    return html


LOOK = """() => {
    const sections = [...document.querySelectorAll('h2')].map(h => {
        const images = [];
        const tables = [];
        for (let e = h.nextElementSibling; e && e.tagName !== 'H2'; e = e.nextElementSibling) {
            if (e.tagName === 'IMG') {
                const box = e.getBoundingClientRect();
                images.push({decoded: e.complete && e.naturalWidth > 0, width: box.width, height: box.height});
            }
            for (const t of e.tagName === 'TABLE' ? [e] : e.querySelectorAll('table'))
                tables.push([...t.rows].map(r => [...r.cells].map(c => c.innerText)));
        }
        return {heading: h.innerText, images, tables};
    });
    return {sections, width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight,
            viewport: window.innerWidth};
}"""


def look(html: Path, screenshot: Path) -> tuple[dict[str, Any], list[str]]:
    """What Chromium shows of ``html``: its sections (heading, images, tables as the reader sees their text), the
    page's size, and every console error, page error or request that left the page (it must be self-contained)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    problems: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            view = browser.new_page(viewport={"width": 1280, "height": 900})
            view.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            view.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            view.on("request", lambda r: None if r.url.startswith(("data:", "file:")) else problems.append(r.url))
            view.goto(html.as_uri(), wait_until="load")
            shown = view.evaluate(LOOK)
            view.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return shown, problems


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on PATH (Debian: apt install chromium; CI installs it)")
def test_the_cross_device_page_renders_its_tables_and_plots_in_a_browser(page: Path, tmp_path: Path) -> None:
    screenshot = tmp_path / "report.png"
    shown, problems = look(page, screenshot)
    assert problems == []
    sections = {s["heading"]: s for s in shown["sections"]}
    assert list(sections)[:3] == ["Throughput by device", "What a figure costs", "By workers"]
    # every plot decoded and drawn at a readable size, none wider than the window
    images = [image for s in shown["sections"] for image in s["images"]]
    assert images and all(i["decoded"] and 300 <= i["width"] <= shown["viewport"] and i["height"] > 100 for i in images)
    assert shown["width"] <= shown["viewport"]  # no table pushes the page sideways
    # the cost section: a chart of items/s per watt and one of items per dollar; the pivot: items/s, /W and /$
    assert len(sections["What a figure costs"]["images"]) == 2
    assert len(sections["By workers"]["images"]) == 3
    # what the reader sees in the cost table: the CPU's items per dollar over the reference's is what the stated
    # figures make it (1/40 of the speed at 1/10 of the price), the constructed Gaudi's 40/30 of the speed at 3/4
    (cost,) = sections["What a figure costs"]["tables"]
    header, rows = cost[0], cost[1:]
    assert header[-2].startswith("cpu-") and header[-2].endswith(" / constructed-gpu items/$")
    assert header[-1] == "constructed-gaudi / constructed-gpu items/$"
    assert len(rows) == 8 and all(row[-2] == "0.25x" and row[-1] == "1.00x" for row in rows)
    (workers,) = sections["By workers"]["tables"]
    assert workers[0][2:] == ["workers 0", "workers 1", "workers 2", "device decode"]
    gaudi = next(row for row in workers if row[1] == "constructed-gaudi")
    assert all("samples/s" in cell and "/s/W" in cell and "/$" in cell for cell in gaudi[2:])
    # the screenshot is the whole page, drawn: its size is the page's, and it is not blank
    image = pytest.importorskip("PIL.Image").open(screenshot)
    assert image.size == (shown["viewport"], shown["height"])
    assert len(image.convert("RGB").getcolors(maxcolors=1 << 16) or range(1 << 16)) > 64
