"""Snapshots and forks from Python: a snapshot taken in one process restores in another
and the run goes on bit for bit; a traced env refuses restore; forks meet the same world."""

from __future__ import annotations

import inspect
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import perennial

STEPS = 500


def play(env, obs, actions):
    seen, rewards = [obs], []
    for a in actions:
        obs, reward, terminated, truncated, _ = env.step(int(a))
        seen.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            obs, _ = env.reset()
            seen.append(obs)
    return np.stack(seen), np.array(rewards, dtype=np.float64)


#: Runs in a fresh interpreter: reads a pickled snapshot and actions, restores the snapshot
#: into a fresh env (two ways) and steps it with the actions ([`play`], the same code the
#: parent steps with); writes what it saw.
CHILD = (
    "import pickle, sys\nimport numpy as np\nimport perennial\n\n"
    + inspect.getsource(play)
    + r"""
world, snap_path, out_path = sys.argv[1:4]
with open(snap_path, "rb") as f:
    snapshot, actions = pickle.load(f)

fresh = perennial.make(world)
fresh.reset()
restored = play(fresh, fresh.restore(snapshot), actions)
made = play(perennial.make(world, snapshot=snapshot), snapshot.observation, actions)
with open(out_path, "wb") as f:
    pickle.dump((restored, made), f)
"""
)


@pytest.mark.parametrize(
    "world, warmup", [("perennial/CartPole-v1", 130), ("perennial/Warehouse-v0", 700)]
)
def test_a_snapshot_restores_in_another_process_bit_for_bit(tmp_path, world, warmup):
    env = perennial.make(world, seed=5)
    obs, _ = env.reset()
    rng = np.random.default_rng(1)
    n = int(env.action_space.n)
    for a in rng.integers(0, n, size=warmup):
        obs, _, terminated, truncated, _ = env.step(int(a))
        if terminated or truncated:
            obs, _ = env.reset()
    snapshot = env.unwrapped.snapshot()
    np.testing.assert_array_equal(snapshot.observation, obs)
    assert snapshot.step == warmup
    actions = rng.integers(0, n, size=STEPS)
    snap_path, out_path = tmp_path / "snap.pkl", tmp_path / "out.pkl"
    snap_path.write_bytes(pickle.dumps((snapshot, actions)))
    expected = play(env, obs, actions)

    subprocess.run(
        [sys.executable, "-c", CHILD, world, str(snap_path), str(out_path)],
        check=True,
        timeout=120,
    )
    restored, made = pickle.loads(out_path.read_bytes())
    for got in (restored, made):
        for have, want in zip(got, expected):
            assert have.dtype == want.dtype
            assert have.tobytes() == want.tobytes(), "not the same bits"


def test_a_traced_env_refuses_restore_and_a_made_env_traces_from_the_saved_step(tmp_path):
    env = perennial.make("perennial/Warehouse-v0", seed=2)
    env.reset()
    for _ in range(40):
        env.step(0)
    snapshot = env.unwrapped.snapshot()
    traced = perennial.make("perennial/Warehouse-v0", seed=2, trace=tmp_path / "t.jsonl")
    traced.reset()
    with pytest.raises(ValueError, match="traced env"):
        traced.unwrapped.restore(snapshot)
    traced.close()

    path = tmp_path / "from-snapshot.jsonl"
    made = perennial.make("perennial/Warehouse-v0", snapshot=snapshot, trace=path)
    for _ in range(3):
        made.step(1)
    made.close()
    rows = [json.loads(l) for l in path.read_text().splitlines() if l.startswith("{")]
    assert [r["step"] for r in rows] == [40, 41, 42]
    assert rows[0]["run_id"] == f"{snapshot.run_id}-s40"


def test_an_edited_snapshot_or_one_of_another_world_is_refused():
    env = perennial.make("perennial/CartPole-v1", seed=0)
    env.reset()
    env.step(1)
    snapshot = env.unwrapped.snapshot()
    again = pickle.loads(pickle.dumps(snapshot))
    assert again == snapshot and again.step == 1
    text = snapshot.to_json()
    edited = text.replace('\\"step\\":1', '\\"step\\":7', 1)
    assert edited != text
    with pytest.raises(ValueError, match="edited or damaged"):
        perennial.Snapshot(edited)
    with pytest.raises(ValueError, match="not a perennial snapshot"):
        perennial.Snapshot("{}")
    other = perennial.make("perennial/Warehouse-v0")
    other.reset()
    with pytest.raises(ValueError, match="same world file"):
        other.unwrapped.restore(snapshot)
    fresh = perennial.make("perennial/CartPole-v1")
    with pytest.raises(ValueError, match="first reset"):
        fresh.unwrapped.snapshot()


def test_forks_meet_the_same_world_and_differ_only_by_their_actions(tmp_path):
    env = perennial.make("perennial/Warehouse-v0", seed=4)
    env.reset()
    for _ in range(300):
        obs, *_ = env.step(0)
    envs = perennial.fork(env, 3, trace=tmp_path / "rollout-{k}.jsonl")
    assert env.unwrapped.snapshot().step == 300, "fork leaves env alone"
    returns = []
    for i, e in enumerate(envs):
        total = 0.0
        for t in range(48):
            # Rollouts 0 and 1 take the same actions; rollout 2 others.
            _, r, *_ = e.step((t + (i == 2)) % int(e.action_space.n))
            total += r
        returns.append(total)
        e.close()
    assert returns[0] == returns[1] != returns[2]
    ids = [json.loads((tmp_path / f"rollout-{i}.jsonl").read_text().splitlines()[0])["run_id"] for i in range(3)]
    assert ids == [f"warehouse-python-seed4-s300-r{i}" for i in range(3)]
    # rLLM's rule (the task id is the id up to its first `:`) finds one group of 3.
    traced = perennial.fork(env, 3, trace=tmp_path / "g-{k}.jsonl", record_transitions=True)
    for i, e in enumerate(traced):
        for t in range(6):
            e.step((t * (i + 1)) % int(e.action_space.n))
        e.close()
    out = tmp_path / "episodes.jsonl"
    perennial.export_episodes([tmp_path / f"g-{i}.jsonl" for i in range(3)], out, advantage="grpo")
    groups = {}
    for line in out.read_text().splitlines():
        task, k = json.loads(line)["id"].split(":", 1)
        groups.setdefault(task, []).append(k)
    assert groups == {"warehouse@s300": ["0", "1", "2"]}
    with pytest.raises(ValueError, match="whole number"):
        perennial.fork(env, 0)
    with pytest.raises(ValueError, match="put \\{k\\}"):
        perennial.fork(env, 2, trace=tmp_path / "shared.jsonl")
