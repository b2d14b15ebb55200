"""A Python API over the ckptcheck binary the wheel installs.

``ckptcheck`` verifies Hugging Face safetensors checkpoints. This package runs
the bundled binary (never through a shell) with ``--format json`` and returns
its report::

    import ckptcheck

    report = ckptcheck.diff("org/model", "out/export", values=True, expect="derived")
    if not report.ok:
        for f in report.findings:
            print(f.severity, f.code, f.key, f.message)

Exit status 0 and 1 are verdicts (``Report.ok``, ``Report.exit_code``); exit
status 2 (ckptcheck could not do its job: an unreadable input, a bad flag)
raises :class:`Error` with the tool's message. Every path is passed after
``--``, so a path that looks like a flag stays a path, and ``--no-config`` is
passed unless ``use_config=True``: a script's verdict does not depend on a
``.ckptcheck.yaml`` in its working directory.
"""

from __future__ import annotations

from ._binary import binary
from ._run import Error, Finding, Report, diff, inspect, run, validate

__all__ = ["Error", "Finding", "Report", "binary", "diff", "inspect", "run", "validate"]
