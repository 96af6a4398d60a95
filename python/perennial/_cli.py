"""The `perennial` console script: the command line, run inside this Python process."""

from __future__ import annotations

import sys

from . import _core


def main() -> int:
    """Runs ``perennial`` with this process's arguments; returns its exit code."""
    sys.stdout.flush()
    return int(_core.cli(sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(main())
