"""Build a scratch repository for a bisect trial: this project at HEAD as the good commit, then a range of commits.

    python docs/studies/bisect/make_range.py DEST --kind single --culprit 11 [--commits 16] [--spin 0.15]

Kinds: ``single`` (one commit makes every SDPA call ``--spin`` slower: a host spin after each call,
so the same operators run and only time can see it), ``two-step`` (two commits, ``--culprit`` and
``--second``, each +``--spin``), ``none`` (harmless commits only). The harmless commits cycle through
a line in the README, an unrelated file, and a ±1% spin on ``F.gelu`` (the MMDiT tests' activation,
not the SDPA tests'). The plant goes into ``perf_tests/conftest.py``, so both sides of a sitting load
their own tree's. Prints the good commit and each planted one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SPIN = """

# planted by docs/studies/bisect/make_range.py: {what}
import time as _time  # noqa: E402

import torch.nn.functional as _F  # noqa: E402


def _spun(original, fraction):
    def slower(*args, **kwargs):
        began = _time.perf_counter()
        result = original(*args, **kwargs)
        until = _time.perf_counter() + fraction * (_time.perf_counter() - began)
        while _time.perf_counter() < until:
            pass
        return result

    return slower
"""
PLANT = "\n_F.{name} = _spun(_F.{name}, {fraction})  # {what}\n"


def git(folder: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "trial", "GIT_AUTHOR_EMAIL": "trial@example.com",
           "GIT_COMMITTER_NAME": "trial", "GIT_COMMITTER_EMAIL": "trial@example.com"}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=folder, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def commit(folder: Path, message: str) -> str:
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", message)
    return git(folder, "rev-parse", "HEAD")


def harmless(folder: Path, index: int, gelu: list[float]) -> str:
    """The index-th harmless commit: README, an unrelated file, or the gelu spin moved by 1%."""
    kind = index % 3
    if kind == 0:
        readme = folder / "README.md"
        readme.write_text(readme.read_text() + f"\n<!-- trial note {index} -->\n")
        return commit(folder, f"docs: note {index}")
    if kind == 1:
        (folder / "notes").mkdir(exist_ok=True)
        (folder / "notes" / f"{index}.txt").write_text(f"unrelated {index}\n")
        return commit(folder, f"chore: unrelated file {index}")
    conftest = folder / "perf_tests" / "conftest.py"
    gelu[0] = 0.01 if gelu[0] == 0 else 0.0
    conftest.write_text(conftest.read_text() + PLANT.format(name="gelu", fraction=gelu[0], what=f"gelu {index}"))
    return commit(folder, f"perf: gelu {gelu[0]:+.0%} ({index})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path)
    parser.add_argument("--kind", choices=["single", "two-step", "none"], default="single")
    parser.add_argument("--commits", type=int, default=16)
    parser.add_argument("--culprit", type=int, default=11)
    parser.add_argument("--second", type=int, default=12)
    parser.add_argument("--spin", type=float, default=0.15)
    options = parser.parse_args()
    dest = options.dest
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x"], cwd=dest, input=archive, check=True)
    git(dest, "init", "-q")
    conftest = dest / "perf_tests" / "conftest.py"
    conftest.write_text(conftest.read_text() + SPIN.format(what="the helper the plants below use"))
    print("good", commit(dest, "good"))
    git(dest, "tag", "good")
    planted = {options.culprit} if options.kind == "single" else set()
    if options.kind == "two-step":
        planted = {options.culprit, options.second}
    gelu = [0.0]
    for index in range(1, options.commits + 1):
        if index in planted:
            text = conftest.read_text() + PLANT.format(name="scaled_dot_product_attention", fraction=options.spin,
                                                       what=f"SDPA +{options.spin:.0%} ({index})")  # fmt: skip
            conftest.write_text(text)
            print("planted", index, commit(dest, f"perf: SDPA +{options.spin:.0%} ({index})"))
        else:
            harmless(dest, index, gelu)
    print("bad", git(dest, "rev-parse", "HEAD"))


if __name__ == "__main__":
    main()
