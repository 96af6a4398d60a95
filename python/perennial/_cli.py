"""The `perennial` console script: the command line, run inside this Python process."""

from __future__ import annotations

import sys

from . import _core, _run


def main() -> int:
    """Runs ``perennial`` with this process's arguments; returns its exit code. ``run``
    with a Python agent (``--agent module:Class``) runs here; every other command in the
    Rust command line."""
    sys.stdout.flush()
    argv = sys.argv[1:]
    if _run.wants_python_agent(argv):
        return _run.main(argv)
    return int(_core.cli(argv))


if __name__ == "__main__":
    sys.exit(main())
