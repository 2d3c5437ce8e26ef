"""Workload builders for the perf suite: shapes and callables, no pytest."""
