"""Shared fixtures: the `perennial` command line and the shipped world files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _binary() -> Path:
    given = os.environ.get("PERENNIAL_BIN")
    return Path(given) if given else REPO / "target" / "release" / "perennial"


@pytest.fixture(scope="session")
def perennial_bin() -> Path:
    """The `perennial` CLI binary: ``$PERENNIAL_BIN``, else the repository's
    ``target/release/perennial`` (built by ``cargo build --release`` or the test command)."""
    path = _binary()
    if not path.is_file():
        pytest.fail(
            f"the perennial CLI is not at {path}: run `cargo build --release` or set PERENNIAL_BIN"
        )
    return path


@pytest.fixture
def run_cli(perennial_bin: Path, tmp_path: Path):
    """Runs the CLI with the given arguments in ``tmp_path``; returns the completed process."""

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [str(perennial_bin), *map(str, args)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and proc.returncode != 0:
            pytest.fail(f"perennial {' '.join(map(str, args))} exited {proc.returncode}: {proc.stderr}")
        return proc

    return run


@pytest.fixture(scope="session")
def worlds_dir() -> Path:
    """The repository's shipped world files."""
    return REPO / "worlds"
