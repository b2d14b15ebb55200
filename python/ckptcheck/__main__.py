"""``python -m ckptcheck ARGS``: run the bundled ckptcheck binary with ARGS."""

from __future__ import annotations

import os
import subprocess
import sys

from ._binary import binary


def main() -> int:
    """Run the binary with this process's arguments; return its exit status."""
    exe = binary()
    argv = [exe, *sys.argv[1:]]
    if os.name == "nt":
        # Windows has no exec: run it and pass its status on.
        return subprocess.call(argv)
    os.execv(exe, argv)
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
