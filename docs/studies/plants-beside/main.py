"""pytest.main() from a script that imported torch first, handed a plugin object that slows each timed call
(the quiet-wait study's spin_plant, imported from the folder given first; ACCEL_SPIN and ACCEL_SPIN_OF as it
reads them). No -p, no PYTHONPATH: the plugin reaches the run only through this script.
    python main.py PLANTS_FOLDER PYTEST_ARGS..."""

from __future__ import annotations

import sys

import torch  # first, as a user's training script or notebook does

sys.path.insert(0, sys.argv[1])
import pytest
import spin_plant

print(f"torch {torch.__version__} imported before pytest.main()", file=sys.stderr)
sys.exit(pytest.main(sys.argv[2:], plugins=[spin_plant]))
