"""``python -m perennial``: the command line with the worlds written in Python.

The same commands and flags as the ``perennial`` binary (``run``, ``check``, ``eval``,
``sweep``, ``fork``, ...), run inside this interpreter, so world files of
``kind = "python"`` work, and ``run --agent module:Class`` runs a Python agent (see
``perennial._run``); a sweep started here runs each run as ``python -m perennial run ...``.
"""

import sys

from ._cli import main

sys.exit(main())
