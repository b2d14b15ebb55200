"""Finding the ckptcheck binary the wheel installed."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Iterator, Optional

_EXE = "ckptcheck.exe" if os.name == "nt" else "ckptcheck"


def _candidates() -> Iterator[Path]:
    override = os.environ.get("CKPTCHECK_BINARY")
    if override:
        yield Path(override)
        return
    # Where pip put the wheel's scripts: this interpreter's scheme, then the
    # user scheme (pip install --user).
    schemes = [None, f"{os.name}_user"]
    if sys.platform == "darwin":
        schemes.append("osx_framework_user")
    for scheme in schemes:
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if scripts:
            yield Path(scripts) / _EXE
    # Relative to this package: <prefix>/lib/pythonX.Y/site-packages/ckptcheck
    # has <prefix>/bin beside lib; <prefix>/Lib/site-packages on Windows has
    # <prefix>/Scripts; pip install --target DIR puts scripts in DIR/bin.
    here = Path(__file__).resolve().parent
    for up in list(here.parents)[:4]:
        yield up / "bin" / _EXE
        yield up / "Scripts" / _EXE


def binary() -> str:
    """Return the absolute path of the ckptcheck binary to run.

    ``$CKPTCHECK_BINARY`` when set; else the one the wheel installed (the
    interpreter's scripts directory, or beside the package); else the first
    ``ckptcheck`` on ``PATH``. Raises :class:`FileNotFoundError` when there is
    none.
    """
    for c in _candidates():
        if c.is_file() and os.access(c, os.X_OK):
            return str(c.resolve())
    found: Optional[str] = shutil.which("ckptcheck")
    if found:
        return os.path.abspath(found)
    raise FileNotFoundError(
        "ckptcheck: no ckptcheck binary found (reinstall the wheel, or set CKPTCHECK_BINARY)"
    )
