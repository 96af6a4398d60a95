"""A Python loop replaying a `perennial run` trace's actions writes the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import perennial


def replay(world: Path, trace: Path, out: Path, **options) -> None:
    """Steps a Python env made with `options` (seed, run id, ...) with the recorded actions,
    resetting where the trace's episodes end."""
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    env = perennial.make(world, trace=out, record_transitions=True, **options)
    env.reset()
    for row in rows:
        _, _, terminated, truncated, _ = env.step(row["action"])
        if terminated or truncated:
            env.reset()
    env.close()


@pytest.mark.parametrize(
    ("world", "steps", "agent"),
    [("cartpole.toml", 3_000, "random"), ("cartpole-drift.toml", 5_000, "random"), ("warehouse.toml", 3_000, "base-stock")],
)
def test_python_loop_writes_the_bytes_perennial_run_writes(run_cli, worlds_dir, tmp_path, world, steps, agent):
    cli_trace = tmp_path / "cli.jsonl"
    run_cli(
        "run", worlds_dir / world, "--seed", 7, "--steps", steps, "--agent", agent,
        "--auto-reset", "--record-transitions", "--run-id", "replay", "--trace", cli_trace,
    )
    py_trace = tmp_path / "py.jsonl"
    replay(worlds_dir / world, cli_trace, py_trace, seed=7, run_id="replay", algorithm_id=agent, trace_format="jsonl")
    rows = cli_trace.read_text().splitlines()
    assert len(rows) == steps
    if world.startswith("cartpole"):
        assert sum(json.loads(r)["terminated"] for r in rows) > 5, "the replay must cross episode ends"
    assert py_trace.read_bytes() == cli_trace.read_bytes()


def test_csv_traces_match_byte_for_byte_too(run_cli, worlds_dir, tmp_path):
    jsonl = tmp_path / "cli.jsonl"
    csv = tmp_path / "cli.csv"
    common = ("--seed", 3, "--steps", 1_500, "--auto-reset", "--record-transitions", "--run-id", "c")
    run_cli("run", worlds_dir / "cartpole.toml", *common, "--trace", jsonl)
    run_cli("run", worlds_dir / "cartpole.toml", *common, "--trace", csv, "--format", "csv")
    py_csv = tmp_path / "py.csv"
    replay(worlds_dir / "cartpole.toml", jsonl, py_csv, seed=3, run_id="c", algorithm_id="random", trace_format="csv")
    assert py_csv.read_bytes() == csv.read_bytes()


def test_the_first_reset_gives_the_cli_episode_zero_world(run_cli, worlds_dir, tmp_path):
    trace = tmp_path / "t.jsonl"
    run_cli("run", worlds_dir / "cartpole.toml", "--seed", 11, "--steps", 1, "--record-transitions", "--trace", trace)
    first = json.loads(trace.read_text().splitlines()[0])["obs"]
    obs, _ = perennial.make("perennial/CartPole-v1", seed=11).reset()
    # The trace prints each float32 in its shortest form; read back as float32 it is exact.
    np.testing.assert_array_equal(obs, np.asarray(first, dtype=np.float32))


def test_garbage_collection_flushes_the_trace(tmp_path):
    path = tmp_path / "gc.jsonl"
    env = perennial.make("perennial/CartPole-v1", seed=1, trace=path)
    env.reset()
    for _ in range(10):
        _, _, terminated, truncated, _ = env.step(1)
        if terminated or truncated:
            break
    steps = env.unwrapped._run.counters()[0]
    del env
    import gc

    gc.collect()
    assert len(path.read_text().splitlines()) == steps
