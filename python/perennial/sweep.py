"""Sweeps from Python: every (world, agent, seed) run of a sweep file, locally or on Ray.

``sweep(file, backend="local")`` runs ``perennial sweep FILE`` (the command line's local
runner: ``jobs`` runs at once, each a ``perennial run`` process). ``backend="ray"`` makes
each run one Ray task (one CPU) instead; everything else is the command line's, so both
backends write the same files:

- ``perennial sweep FILE --plan-json`` gives the sweep directory and every run with its
  exact arguments (``argv`` to start it, ``resume_argv`` to continue it from its
  checkpoint);
- each task runs ``perennial <argv>`` (or ``<resume_argv>`` when the run's checkpoint
  exists), so a task that Ray retries after its worker died continues from the last
  checkpoint and the trace ends byte-identical to an uninterrupted run; a run that fails is
  tried once more (not when it failed on bad input, exit code 2);
- ``perennial sweep FILE --collect RESULTS.json`` records the exit codes in
  ``DIR/manifest.json`` and scores the finished traces into ``DIR/eval.json``,
  ``DIR/eval.txt`` and ``DIR/plot.svg``.

While the tasks run, the driver holds the sweep directory's lock (``DIR/sweep.lock``, an
advisory ``flock``), so a ``perennial sweep`` started on the same directory refuses; the
lock passes to ``--collect`` at the end.

On a cluster (``address="auto"``, or ``"ray://..."``) the sweep directory ``out``, the
world files and the ``perennial`` executable must be at the same paths on every node:
put ``out`` on a shared filesystem (NFS, a mounted bucket), and install the package (or set
``PERENNIAL_BIN``) on every node.

The ``perennial`` executable is ``$PERENNIAL_BIN`` when set, else ``perennial`` on ``PATH``,
else the console script this package installed beside the running interpreter (a virtual
environment used without activating it).
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional, Union

__all__ = ["SweepError", "sweep"]

PathLike = Union[str, os.PathLike]

#: How each attempt's header line in a run's log starts (the command line's
#: ``perennial::sweep::ATTEMPT_HEADER``: its ``--collect`` reads the errors after it).
ATTEMPT_HEADER = "== perennial sweep attempt"

#: Exit code of ``perennial run`` for bad input: trying again cannot help.
BAD_INPUT = 2

#: Attempts per run and invocation: the first one and one retry.
ATTEMPTS = 2


class SweepError(RuntimeError):
    """Some runs of a sweep failed; the others finished and were scored.

    ``manifest`` is the manifest as written (a dict), ``failed`` the ids of the failed runs.
    """

    def __init__(self, message: str, manifest: dict, failed: list):
        super().__init__(message)
        self.manifest = manifest
        self.failed = failed


def _program() -> str:
    given = os.environ.get("PERENNIAL_BIN")
    if given:
        return given
    found = shutil.which("perennial")
    if found is None:
        found = shutil.which("perennial", path=os.path.dirname(sys.executable))
    if found is None:
        raise FileNotFoundError(
            "the perennial executable is neither on PATH nor beside this Python "
            f"({sys.executable}); install the package or set PERENNIAL_BIN"
        )
    return found


def _cli(program: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([program, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)


def _raise_for(proc: subprocess.CompletedProcess, what: str) -> None:
    message = (proc.stderr.strip() or proc.stdout.strip()).removeprefix("error: ")
    if proc.returncode == BAD_INPUT and "another sweep is using this directory" not in message:
        raise ValueError(f"{what}: {message}")
    raise RuntimeError(f"{what} exited with code {proc.returncode}: {message}")


def _finish(proc: subprocess.CompletedProcess, dir_: Path) -> dict:
    manifest_path = dir_ / "manifest.json"
    if proc.returncode in (0, 1) and manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        failed = [r["run_id"] for r in manifest["runs"] if r["status"] == "failed"]
        if proc.returncode == 0 and not failed:
            return manifest
        if failed:
            raise SweepError(proc.stderr.strip().removeprefix("error: "), manifest, failed)
    _raise_for(proc, "perennial sweep")
    raise AssertionError("unreachable")


def _die_with_parent() -> None:
    # A Ray worker killed with SIGKILL must take its run with it, or the retried task's
    # run would write the same trace beside the orphan.
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)


def run_planned(run: dict, program: Optional[str] = None) -> dict:
    """Runs one planned run (an entry of ``perennial sweep --plan-json``) to its end,
    continuing from its checkpoint when there is one, with one retry.

    Returns ``{"exit_code": int or None (a signal), "attempts": n}``, what ``--collect``
    reads.
    """
    if program is None or not Path(program).exists():
        program = _program()
    for key in ("trace", "checkpoint", "log"):
        Path(run[key]).parent.mkdir(parents=True, exist_ok=True)
    code: Optional[int] = None
    attempts = 0
    while attempts < ATTEMPTS:
        attempts += 1
        if Path(run["checkpoint"]).is_file():
            argv = run["resume_argv"]
        else:
            # A fresh start writes the trace from byte 0.
            Path(run["trace"]).unlink(missing_ok=True)
            argv = run["argv"]
        with open(run["log"], "ab") as log:
            log.write(f"{ATTEMPT_HEADER} {attempts}: {program} {' '.join(argv)}\n".encode())
            log.flush()
            proc = subprocess.run(
                [program, *argv],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
        code = proc.returncode if proc.returncode >= 0 else None
        if code in (0, BAD_INPUT):
            break
    return {"exit_code": code, "attempts": attempts}


class _DirLock:
    """The sweep directory's lock, taken the way the command line takes it."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a+")
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.seek(0)
            pid = self._file.read().strip() or "unknown"
            self._file.close()
            raise RuntimeError(
                f"{path.parent}: another sweep is using this directory (pid {pid}); "
                "wait for it to finish or give another out"
            ) from None
        self._file.seek(0)
        self._file.truncate()
        self._file.write(f"{os.getpid()}\n")
        self._file.flush()

    def release(self) -> None:
        self._file.close()


def _import_ray():
    try:
        import ray
    except ImportError as e:
        raise ImportError(
            'backend="ray" needs Ray: pip install "perennial[ray]" (or pip install ray)'
        ) from e
    return ray


def _pending(runs: list) -> list:
    """The planned runs still to make: all but those done with their trace on disk."""
    return [r for r in runs if not (r["status"] == "done" and Path(r["trace"]).exists())]


def _run_on_ray(ray, runs: list, program: str, address: Optional[str], max_retries: int) -> list:
    """Runs each planned run as one Ray task (``num_cpus=1``, retried up to ``max_retries``
    times if its worker dies) and returns how each ended, in order: what ``--collect``
    reads. A Ray already initialized in this process is used, else one is started (a local
    one with this machine's cores when ``address`` is None) and shut down at the end."""
    started_here = not ray.is_initialized()
    if started_here:
        if address is None:
            ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False)
        else:
            ray.init(address=address)
    try:
        task = ray.remote(num_cpus=1, max_retries=max_retries)(run_planned)
        refs = [task.remote(r, program) for r in runs]
        ended = []
        for ref in refs:
            try:
                ended.append(ray.get(ref))
            except ray.exceptions.RayError:
                # Its worker died more often than Ray retries: recorded as ended by a
                # signal; the next invocation continues it from its checkpoint.
                ended.append({"exit_code": None, "attempts": 1})
    finally:
        if started_here:
            ray.shutdown()
    return ended


def sweep(
    file: PathLike,
    backend: str = "local",
    address: Optional[str] = None,
    out: Optional[PathLike] = None,
    jobs: Optional[int] = None,
    max_retries: int = 3,
) -> dict:
    """Runs every (world, agent, seed) run of a sweep file and scores them together.

    ``backend="local"`` runs ``perennial sweep`` on this machine, ``jobs`` runs at once
    (default: the cores). ``backend="ray"`` runs each run as one Ray task (``num_cpus=1``)
    that Ray retries up to ``max_retries`` times if its worker dies; a retried run continues
    from its checkpoint. With ``address=None`` a Ray already initialized in this process is
    used, else a local one is started with this machine's cores and shut down at the end;
    ``address="auto"`` joins the running cluster (``out`` must then be on a filesystem every
    node shares).

    Results land in ``out`` (default ``runs/sweeps/<name>/``): per-run traces, checkpoints
    and logs, ``manifest.json``, ``eval.json``, ``eval.txt`` and ``plot.svg``. Rerunning is
    idempotent: finished runs are skipped, interrupted ones continue.

    Returns the manifest (a dict). Raises ``ValueError`` for a bad sweep file (the message
    names file, line and field), ``RuntimeError`` when another sweep holds ``out``,
    ``SweepError`` when runs failed (the others were still run and scored), and
    ``ImportError`` for ``backend="ray"`` without Ray installed.
    """
    if backend not in ("local", "ray"):
        raise ValueError(f'backend must be "local" or "ray", not {backend!r}')
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs must be a whole number from 1 up, not {jobs!r}")
    ray = _import_ray() if backend == "ray" else None
    program = _program()
    base = ["sweep", os.fspath(file)]
    if out is not None:
        base += ["--out", os.fspath(out)]

    if backend == "local":
        extra = ["--jobs", str(jobs)] if jobs is not None else []
        proc = _cli(program, *base, *extra)
        plan = _cli(program, *base, "--plan-json")
        if plan.returncode != 0:
            _raise_for(plan, "perennial sweep")
        return _finish(proc, Path(json.loads(plan.stdout)["dir"]))

    plan_proc = _cli(program, *base, "--plan-json")
    if plan_proc.returncode != 0:
        _raise_for(plan_proc, "perennial sweep")
    plan = json.loads(plan_proc.stdout)
    dir_ = Path(plan["dir"])
    lock = _DirLock(Path(plan["lock"]))
    try:
        todo = _pending(plan["runs"])
        ended = _run_on_ray(ray, todo, program, address, max_retries)
        results = {r["run_id"]: e for r, e in zip(todo, ended)}
        results_path = dir_ / "ray-results.json"
        results_path.write_text(json.dumps(results, indent=2) + "\n")
    finally:
        # --collect takes the lock itself; between the two a third sweep could slip in,
        # and would find the runs done.
        lock.release()
    proc = _cli(program, *base, "--collect", os.fspath(results_path))
    return _finish(proc, dir_)
