"""A trace written from Python has its run manifest beside it and in its Parquet metadata, as
`perennial run` writes it, and `load_events` finds the events table from the trace's path."""

import importlib.metadata
import json
import subprocess

import pytest

import perennial

pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in python/tests/requirements.txt")

SHIPPED = dict(perennial.shipped_worlds())


def _steps(env, n):
    env.reset()
    for t in range(n):
        _, _, terminated, truncated, _ = env.step(t % 2)
        if terminated or truncated:
            env.reset()


def test_a_python_trace_has_a_manifest_that_says_what_made_it(tmp_path):
    trace = tmp_path / "runs" / "pole.jsonl"
    env = perennial.make("perennial/CartPole-v1", seed=7, trace=trace, algorithm_id="mine")
    path = tmp_path / "runs" / "pole.manifest.json"
    running = json.loads(path.read_text())
    assert running["exit_status"] == "running"
    assert running["ended_at"] is None

    _steps(env, 120)
    env.close()
    m = json.loads(path.read_text())
    assert m["run_id"] == "cartpole-mine-seed7"
    assert (m["task"], m["seed"], m["agent"]) == ("cartpole", 7, "mine")
    assert m["world_file"]["text"] == SHIPPED["cartpole.toml"]
    assert m["world_file"]["path"].endswith("cartpole.toml")
    assert len(m["world_file"]["hash"]) == 16
    assert m["options"]["interface"] == "python"
    assert m["options"]["format"] == "jsonl"
    assert m["steps_done"] == 120 == len(trace.read_text().splitlines())
    assert m["exit_status"] == "completed"
    assert m["ended_at"] is not None
    assert m["started_at"] == running["started_at"]


def test_the_manifest_is_in_every_parquet_part_and_eval_shows_it(tmp_path, run_cli):
    trace = tmp_path / "pole.parquet"
    env = perennial.make("perennial/CartPole-v1", seed=2, trace=trace)
    _steps(env, 300)
    env.close()
    parts = sorted(trace.glob("part-*.parquet"))
    assert parts
    for part in parts:
        meta = pq.read_metadata(part).metadata
        m = json.loads(meta[b"perennial.manifest"])
        assert m["run_id"] == "cartpole-python-seed2"
        assert m["world_file"]["text"] == SHIPPED["cartpole.toml"]
    out = run_cli("eval", trace).stdout
    assert "cartpole-python-seed2: perennial" in out


def test_a_new_seed_before_any_step_rewrites_the_manifest_with_the_new_run_id(tmp_path):
    env = perennial.make("perennial/CartPole-v1", seed=1, trace=tmp_path / "t.jsonl")
    env.reset(seed=5)
    _steps(env, 10)
    env.close()
    names = sorted(p.name for p in tmp_path.glob("*.manifest.json"))
    assert names == ["t.manifest.json"]
    m = json.loads((tmp_path / "t.manifest.json").read_text())
    assert (m["run_id"], m["seed"]) == ("cartpole-python-seed5", 5)


def test_load_events_given_the_trace_reads_the_table_beside_it(tmp_path):
    trace = tmp_path / "wh.parquet"
    env = perennial.make("perennial/Warehouse-v0", seed=3, trace=trace)
    env.reset()
    for _ in range(3000):
        env.step(env.action_space.sample())
    env.close()
    from_trace = perennial.load_events(trace)
    assert from_trace
    assert from_trace == perennial.load_events(tmp_path / "wh.events.parquet")


def test_part_seconds_zero_cuts_a_part_at_every_flush(tmp_path):
    trace = tmp_path / "pole.parquet"
    env = perennial.make("perennial/CartPole-v1", seed=0, trace=trace, part_seconds=0)
    _steps(env, 1000)
    # Flushes at steps 256, 512 and 768 each cut a part before close.
    assert len(list(trace.glob("part-*.parquet"))) == 3
    env.close()
    assert pq.read_table(trace).num_rows == 1000
    m = json.loads((tmp_path / "pole.manifest.json").read_text())
    assert m["options"]["part_seconds"] == 0.0


@pytest.mark.parametrize(
    "trace, seconds, message",
    [
        ("p.parquet", -1.0, "part_seconds is -1"),
        ("p.parquet", float("nan"), "part_seconds is NaN"),
        ("p.jsonl", 1.0, "part_seconds is for Parquet traces"),
    ],
)
def test_bad_part_seconds_are_refused_naming_the_option(tmp_path, trace, seconds, message):
    with pytest.raises(ValueError, match=message):
        perennial.make("perennial/CartPole-v1", trace=tmp_path / trace, part_seconds=seconds)


def test_the_package_the_manifest_and_the_cli_carry_one_version(tmp_path, perennial_bin):
    assert perennial.__version__ == importlib.metadata.version("perennial")
    trace = tmp_path / "v.jsonl"
    env = perennial.make("perennial/CartPole-v1", seed=0, trace=trace)
    _steps(env, 5)
    env.close()
    manifest = json.loads((tmp_path / "v.manifest.json").read_text())
    assert manifest["perennial_version"] == perennial.__version__
    out = subprocess.run([perennial_bin, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["perennial", perennial.__version__]
