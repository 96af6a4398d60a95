"""Traces written from Python are scored and exported as the command line does it."""

from __future__ import annotations

import json

import numpy as np

import perennial


def write_trace(path, steps=3_000):
    env = perennial.make("perennial/CartPoleDrift-v0", seed=2, trace=path, record_transitions=True)
    obs, _ = env.reset()
    for _ in range(steps):
        action = int(obs[2] + 0.5 * obs[3] > 0)
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()


def test_evaluate_returns_the_eval_json_document(run_cli, tmp_path):
    trace = tmp_path / "drift.jsonl"
    write_trace(trace)
    report = perennial.evaluate([trace], window=50)
    cli = json.loads(run_cli("eval", trace, "--json", "--window", 50).stdout)
    assert report == cli
    run = report["runs"][0]
    assert run["algorithm_id"] == "python" and run["steps"] == 3_000
    assert len(run["intervals"]) >= 2, "the drift world shifted during the run"


def test_export_episodes_writes_what_the_cli_writes(run_cli, tmp_path):
    trace = tmp_path / "drift.jsonl"
    write_trace(trace, steps=1_000)
    ours = tmp_path / "py.jsonl"
    summary = perennial.export_episodes(trace, ours, advantage="grpo")
    assert str(ours) in summary
    cli_out = tmp_path / "cli.jsonl"
    run_cli("episodes", trace, "--out", cli_out, "--advantage", "grpo")
    assert ours.read_bytes() == cli_out.read_bytes()
    episodes = [json.loads(line) for line in ours.read_text().splitlines()]
    assert episodes and all(np.isfinite(e["trajectories"][0]["reward"]) for e in episodes)
