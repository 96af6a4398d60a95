"""perennial-bench from Python: an agent on suites, locally or on Ray.

``run(suites, agent, out=...)`` is ``perennial bench run SUITE... --agent A --out DIR``:
per suite and track the references' runs and the agent's, each policy a sweep under
``DIR/runs/``, scored into ``DIR/results/<suite>.<track>.<policy>.json``.
``backend="ray"`` makes each of those runs one Ray task (one CPU) instead, the way
``perennial.sweep`` does; everything else is the command line's, so both backends write
the same results files, byte for byte:

- ``perennial bench run ... --plan-json`` gives every sweep the bench run needs, with each
  run's exact arguments (``argv`` to start it, ``resume_argv`` to continue it from its
  checkpoint) and the results files it will write;
- each task runs its run to the end, continuing from its checkpoint when a retried task
  finds one;
- ``perennial bench run ... --collect EXITS.json`` records how each run ended in its
  sweep's manifest and scores the traces into the results files.

While the tasks run, the driver holds every sweep folder's lock, so a ``perennial bench
run`` or ``perennial sweep`` started on the same folder refuses. A bench run is resumable on
either backend: runs already done in ``out`` are kept.

On a cluster (``address="auto"``, or ``"ray://..."``) ``out``, the suites' folders and the
``perennial`` executable must be at the same paths on every node (see ``perennial.sweep``).

From the command line: ``python -m perennial bench run SUITE... --agent A --out DIR
--backend ray [--address ADDRESS]``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from .sweep import (
    PathLike,
    _cli,
    _DirLock,
    _import_ray,
    _pending,
    _program,
    _raise_for,
    _run_on_ray,
)

__all__ = ["run"]

#: The run-exits file the Ray backend writes into ``out`` for ``--collect``.
EXITS_FILE = "ray-exits.json"


def run(
    suites: Sequence[str],
    agent: str,
    out: PathLike,
    agent_options: Sequence[str] = (),
    seeds: Optional[int] = None,
    steps: Optional[int] = None,
    jobs: Optional[int] = None,
    backend: str = "local",
    address: Optional[str] = None,
    max_retries: int = 3,
) -> List[Path]:
    """Runs ``agent`` on every suite (shipped names such as ``"warehouse"``, or suite
    folders), each track and seed, with the references each suite needs, and writes a
    results file per suite and track into ``out/results/``.

    ``agent_options`` are ``"KEY=VALUE"`` strings as ``--agent-opt`` takes them. ``seeds``
    (the first N of each suite) and ``steps`` make a smoke run, which its results say.
    ``backend="local"`` runs ``jobs`` runs at once on this machine (default: the cores);
    ``backend="ray"`` runs each run as one Ray task (see the module's documentation) and
    takes ``address`` and ``max_retries`` as ``perennial.sweep`` does.

    Returns the paths of the results files, in suite and track order. Raises ``ValueError``
    for a bad suite, agent or option (the message names the file, line and field),
    ``RuntimeError`` when a run failed or another process holds a sweep folder, and
    ``ImportError`` for ``backend="ray"`` without Ray installed.
    """
    if backend not in ("local", "ray"):
        raise ValueError(f'backend must be "local" or "ray", not {backend!r}')
    if isinstance(suites, (str, os.PathLike)):
        suites = [suites]
    if not suites:
        raise ValueError("give at least one suite")
    for name, value in (("seeds", seeds), ("steps", steps), ("jobs", jobs)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"{name} must be a whole number from 1 up, not {value!r}")
    if backend == "ray" and jobs is not None:
        raise ValueError('jobs is the local backend\'s: backend="ray" runs one run per CPU Ray has')
    args = [os.fspath(s) for s in suites] + ["--agent", agent, "--out", os.fspath(out)]
    for option in agent_options:
        args += ["--agent-opt", option]
    if seeds is not None:
        args += ["--seeds", str(seeds)]
    if steps is not None:
        args += ["--steps", str(steps)]
    return _run(args, backend, address, max_retries, jobs)[0]


def _run(
    args: List[str],
    backend: str,
    address: Optional[str],
    max_retries: int,
    jobs: Optional[int] = None,
):
    """Runs ``perennial bench run ARGS`` on ``backend`` (locally ``jobs`` runs at once);
    returns the results files and what the command printed."""
    ray = _import_ray() if backend == "ray" else None
    program = _program()
    plan_proc = _cli(program, "bench", "run", *args, "--plan-json")
    if plan_proc.returncode != 0:
        _raise_for(plan_proc, "perennial bench run")
    plan = json.loads(plan_proc.stdout)
    results = [Path(p) for p in plan["results"]]
    if backend == "local":
        extra = ["--jobs", str(jobs)] if jobs is not None else []
        proc = _cli(program, "bench", "run", *args, *extra)
        if proc.returncode != 0:
            _raise_for(proc, "perennial bench run")
        return results, proc.stdout

    locks = []
    try:
        for s in plan["sweeps"]:
            locks.append(_DirLock(Path(s["lock"])))
        todo = [(s["dir"], r) for s in plan["sweeps"] for r in _pending(s["runs"])]
        ended = _run_on_ray(ray, [r for _, r in todo], program, address, max_retries)
        exits: dict = {s["dir"]: {} for s in plan["sweeps"]}
        for (dir_, r), e in zip(todo, ended):
            exits[dir_][r["run_id"]] = e
        exits_path = Path(plan["out"]) / EXITS_FILE
        exits_path.parent.mkdir(parents=True, exist_ok=True)
        exits_path.write_text(json.dumps(exits, indent=2) + "\n")
    finally:
        # --collect takes each lock itself.
        for lock in locks:
            lock.release()
    proc = _cli(program, "bench", "run", *args, "--collect", os.fspath(exits_path))
    if proc.returncode != 0:
        _raise_for(proc, "perennial bench run")
    return results, proc.stdout


def main(argv: List[str]) -> int:
    """``python -m perennial bench run ARGS... [--backend local|ray] [--address A]``: the
    command line's ``bench run`` on ``--backend local`` (the default), or on Ray. Returns
    the exit code."""
    backend, address, rest = "local", None, []
    it = iter(argv)
    for a in it:
        key, eq, value = a.partition("=")
        if key not in ("--backend", "--address"):
            rest.append(a)
            continue
        if not eq:
            value = next(it, None)
            if value is None:
                return _usage(f"{key} needs a value")
        if key == "--backend":
            backend = value
        else:
            address = value
    if backend not in ("local", "ray"):
        return _usage(f"--backend is `local` or `ray`, not `{backend}`")
    if backend == "local":
        if address is not None:
            return _usage("--address is the Ray backend's: give --backend ray")
        from . import _core

        return int(_core.cli(["bench", "run", *rest]))
    if any(a.partition("=")[0] == "--jobs" for a in rest):
        return _usage("--jobs is the local backend's: on Ray each run takes one CPU")
    try:
        _, printed = _run(rest, "ray", address, 3)
    except ValueError as e:
        return _usage(str(e))
    except (RuntimeError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 1
    print(printed, end="", flush=True)
    return 0


def _usage(message: str) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return 2
