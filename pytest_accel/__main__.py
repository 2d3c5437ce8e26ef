"""``python -m pytest_accel``: the same as the ``pytest-accel`` command."""

from __future__ import annotations

import sys

from pytest_accel.commands.cli import main

sys.exit(main())
