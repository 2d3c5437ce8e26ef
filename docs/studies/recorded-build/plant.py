
# planted: every timed call 10% slower (docs/studies/quiet-wait/spin_plant.py, fn mode); what runs is unchanged
import os as _os
import sys as _sys

_os.environ["ACCEL_SPIN"] = "0.10"
_os.environ["ACCEL_SPIN_OF"] = "fn"
_sys.path.insert(0, "@QUIET_WAIT@")
import spin_plant as _spin


def pytest_configure(config):
    _spin.pytest_configure(config)
