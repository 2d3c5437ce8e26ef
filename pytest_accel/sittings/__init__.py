"""What a run starts to settle a suspect or to calibrate: processes and threads, above the pure judgement.

- ``fresh.py``: a fresh ``pytest`` confirming a suspected regression (``judgement/confirm.py`` reads its word);
- ``recorded_build.py``: the recorded build measured beside this tree, an ``ab`` sitting of its commit
  (``judgement/recorded_build.py`` weighs its word);
- ``calibrate.py``: the standard load (a second copy of the perf tests) a calibration measures beside,
  and its watcher thread.

The gate (``judgement/gate.py``) starts none of them: the plugin hands it these as ``Launchers``.
"""
