"""The command line: ``pytest-accel`` (report, compare, history, archive, export, baselines) and ``ab``."""
