"""The perf suite. Profiles: ``--accel-profile smoke`` (default; seconds on a CPU) or ``full`` (the studies' sizes).

Each test module picks its sizes from the ``accel_profile`` fixture; ``workloads/`` builds the
models and data (no pytest there), so the sizes live next to the code that uses them.
"""
