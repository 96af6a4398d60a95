"""The Python examples run as a user would run them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_drift_reinforce_trains_and_prints_the_interval_table(tmp_path):
    trace = tmp_path / "drift.jsonl"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "drift_reinforce.py"), "--steps", "5000", "--trace", str(trace)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) >= 3 and lines[0].startswith("earth")
    assert len(trace.read_text().splitlines()) == 5000
