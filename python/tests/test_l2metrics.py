"""DARPA's l2metrics scores a perennial run exported with `perennial export l2logger`.

l2metrics 3.1.0 needs numpy<2, pandas<2.3 and pyarrow<18, so it lives in its own virtual
environment (python/tests/requirements-l2metrics.txt), made by the project's test command
at `$L2METRICS_VENV` (default `target/l2metrics-venv`).
"""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("L2METRICS_VENV", ROOT / "target" / "l2metrics-venv"))
PYTHON = VENV / "bin" / "python"

pytestmark = pytest.mark.skipif(
    not PYTHON.exists(),
    reason=f"no l2metrics venv at {VENV}: the test command creates it from "
    "python/tests/requirements-l2metrics.txt",
)


def perennial_bin() -> str:
    return os.environ.get("PERENNIAL_BIN", str(ROOT / "target" / "release" / "perennial"))


def test_l2metrics_reports_one_block_per_configuration_interval(tmp_path):
    trace = tmp_path / "drift.parquet"
    subprocess.run(
        [perennial_bin(), "run", "worlds/cartpole-drift.toml", "--steps", "12000", "--seed",
         "1", "--run-id", "drift", "--format", "parquet", "--trace", str(trace)],
        cwd=ROOT, check=True, capture_output=True,
    )
    out = tmp_path / "l2"
    subprocess.run(
        [perennial_bin(), "export", "l2logger", str(trace), "--out", str(out)],
        cwd=ROOT, check=True, capture_output=True,
    )
    scenario = out / "drift"
    blocks = sorted(p.name for p in (scenario / "drift").iterdir())
    # cartpole-drift shifts every 2,000 steps: 12,000 steps are 6 configuration intervals.
    assert blocks == [f"{k}-train" for k in range(6)]
    report = subprocess.run(
        [str(PYTHON), "-m", "l2metrics", "-l", str(scenario), "-p", "reward", "--no-plot",
         "-O", str(tmp_path / "metrics")],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert report.returncode == 0, report.stderr
    assert "perf_recovery" in report.stdout or "perf_recovery" in report.stderr, report.stdout
