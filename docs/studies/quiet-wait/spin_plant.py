"""A pytest plugin that makes every SDPA call slower without changing what runs (``-p spin_plant``).

After each real call it spins on the host for ``ACCEL_SPIN`` (default 0.25) of a time, so the
operators and their counts stay the same and only time can see the slowdown. ``ACCEL_SPIN_OF``
says of which time:

- ``sdpa`` (default): the SDPA call's own. A test whose timed call does more than SDPA moves by
  less: the llama prefill tests by about half.
- ``call``: the SDPA call's and the work since the previous call's spin ended, i.e. the whole timed
  call when calls run back to back, so each test's figure moves by ``ACCEL_SPIN``. A gap longer than
  4 times the SDPA call (between rounds, a probe) counts as the SDPA call alone. It overshoots
  (+6% to +20% for a +10% plant, run 8): the gap also holds the timer's own work.
- ``fn``: the test's whole timed call, exactly: the workload a test hands the ``throughput``
  fixture is wrapped, and after each call it spins ``ACCEL_SPIN`` of that call's own time. SDPA is
  left alone; what runs is unchanged, so only time can see it.

Used by ``quiet_wait.sh`` and ``hours_later.sh``, which put this folder on PYTHONPATH to load it.
It plants in ``pytest_configure``, after the conftests: a ``-p`` plugin is imported before
pytest-accel's, and one that imported torch would keep the plugin from asking torch for huge pages
(engine/devices/hostalloc.py), so that its figures would not be compared with the recordings.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

FRACTION = float(os.environ.get("ACCEL_SPIN", "0.25"))
OF_CALL = os.environ.get("ACCEL_SPIN_OF", "sdpa") == "call"
GAP_LIMIT = 4.0
_original: list[Any] = []  # torch's SDPA, once planted
_last_end = [0.0]


def _slower(*args: Any, **kwargs: Any) -> Any:
    began = time.perf_counter()
    result = _original[0](*args, **kwargs)
    ended = time.perf_counter()
    own = ended - began
    gap = began - _last_end[0]
    spent = own + gap if OF_CALL and 0 <= gap <= GAP_LIMIT * own else own
    until = ended + FRACTION * spent
    while time.perf_counter() < until:
        pass
    _last_end[0] = time.perf_counter()
    return result


def _plant_the_workload() -> None:
    from pytest_accel.plugin.fixture import Throughput

    original = Throughput.__call__

    @functools.wraps(original)
    def measured(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        def slower() -> Any:
            began = time.perf_counter()
            result = fn()
            ended = time.perf_counter()
            until = ended + FRACTION * (ended - began)
            while time.perf_counter() < until:
                pass
            return result

        return original(self, slower, *args, **kwargs)

    Throughput.__call__ = measured  # type: ignore[method-assign]


def pytest_configure(config: Any) -> None:
    """Plant, once the conftests (and torch) are imported."""
    if os.environ.get("ACCEL_SPIN_OF", "sdpa") == "fn":
        _plant_the_workload()
        return
    import torch.nn.functional as F

    _original.append(F.scaled_dot_product_attention)
    F.scaled_dot_product_attention = functools.wraps(_original[0])(_slower)
