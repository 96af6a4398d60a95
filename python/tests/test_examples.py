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


def test_grpo_forks_runs_the_loop_and_improves_on_its_starting_policy(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "grpo_forks.py"),
            *("--iterations", "15", "--print-every", "1"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["iter", "step", "policy", "uniform", "gap", "P(target)"]
    assert [l.split()[:2] for l in lines[1:4]] == [["0", "0"], ["1", "168"], ["2", "336"]]
    # It improves on its starting policy: the gap of the last iterations is the wider.
    early, late = (float(w.rstrip(",")) for w in lines[-1].split() if w[0] in "+-")
    assert late > early, lines[-1]
