"""The Python examples run as a user would run them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name, *args, cwd, timeout=120):
    """Runs `python examples/NAME ARGS...` in `cwd` as a user would; fails the test with its
    stderr unless it exits 0. Returns its stdout's lines."""
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_drift_reinforce_trains_and_prints_the_interval_table(tmp_path):
    trace = tmp_path / "drift.jsonl"
    lines = run_example("drift_reinforce.py", "--steps", "5000", "--trace", str(trace), cwd=tmp_path)
    assert len(lines) >= 3 and lines[0].startswith("earth")
    assert len(trace.read_text().splitlines()) == 5000


def test_grpo_forks_runs_the_loop_and_improves_on_its_starting_policy(tmp_path):
    lines = run_example("grpo_forks.py", "--iterations", "15", "--print-every", "1", cwd=tmp_path)
    assert lines[0].split() == ["iter", "step", "policy", "uniform", "gap", "P(target)"]
    assert [l.split()[:2] for l in lines[1:4]] == [["0", "0"], ["1", "168"], ["2", "336"]]
    # It improves on its starting policy: the gap of the last iterations is the wider.
    early, late = (float(w.rstrip(",")) for w in lines[-1].split() if w[0] in "+-")
    assert late > early, lines[-1]


def _rllm_episode():
    """rLLM's own Episode, from an installed rllm or a checkout at $RLLM_SRC (rLLM is not on
    PyPI); None when neither is there."""
    import importlib
    import os

    src = os.environ.get("RLLM_SRC")
    if src and src not in sys.path:
        sys.path.insert(0, src)
    try:
        return importlib.import_module("rllm.types").Episode
    except ImportError:
        return None


def test_llm_agent_plays_offline_and_its_exports_load_as_rllm_episodes(tmp_path):
    import json

    out = tmp_path / "llm"
    stdout = "\n".join(
        run_example(
            "llm_agent.py",
            *("--hours", "30", "--out", str(out), "--forks", "3", "--fork-at", "10", "--fork-hours", "6"),
            cwd=tmp_path,
            timeout=300,
        )
    )
    assert "calls" in stdout and "invalid" in stdout
    run_id = "llm-scripted-base-stock-seed0"
    trace = out / f"{run_id}.jsonl"
    transcript = [json.loads(line) for line in (out / f"{run_id}.transcript.jsonl").read_text().splitlines()]
    assert len(trace.read_text().splitlines()) == 30
    statuses = [r["status"] for call in transcript for r in call["replies"]]
    assert 400 in statuses and 422 in statuses, "the stand-in makes malformed and invalid calls"
    assert sum(call["hours"] for call in transcript) == 30
    episodes = [json.loads(line) for line in (out / f"{run_id}.episodes.jsonl").read_text().splitlines()]
    steps = [s for e in episodes for t in e["trajectories"] for s in t["steps"]]
    assert len(steps) == len(transcript)
    assert all(s["chat_completions"][-1]["role"] == "assistant" and s["chat_completions"][-1]["tool_calls"] for s in steps)
    fork = [json.loads(line) for line in (out / "fork-scripted-base-stock" / "episodes.jsonl").read_text().splitlines()]
    assert len(fork) == 3 and len({e["id"].split(":")[0] for e in fork}) == 1
    Episode = _rllm_episode()
    if Episode is None:
        import pytest

        pytest.skip("rLLM is not installed (set RLLM_SRC to a checkout) for the from_dict half")
    for e in episodes + fork:
        loaded = Episode.from_dict(e)
        assert loaded.trajectories and loaded.trajectories[0].steps
    assert {Episode.from_dict(e).task_id for e in fork} == {fork[0]["id"].split(":")[0]}
