"""The `perennial` console script: the command line, run inside this Python process."""

from __future__ import annotations

import sys

from . import _core, _run
from . import bench as _bench


def main() -> int:
    """Runs ``perennial`` with this process's arguments; returns its exit code. ``run``
    with a Python agent (``--agent module:Class``) and ``bench run --backend ray`` run
    here; every other command in the Rust command line."""
    sys.stdout.flush()
    argv = sys.argv[1:]
    if _run.wants_python_agent(argv):
        return _run.main(argv)
    if argv[:2] == ["bench", "run"]:
        # `--backend ray` runs the bench's runs as Ray tasks (perennial.bench).
        return _bench.main(argv[2:])
    return int(_core.cli(argv))


if __name__ == "__main__":
    sys.exit(main())
