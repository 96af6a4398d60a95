"""An env survives pickling as a fresh env rebuilt from its world file and options."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np

import perennial


def test_pickling_rebuilds_a_fresh_env_from_world_file_and_options():
    env = perennial.make("perennial/Warehouse-v0", seed=9, algorithm_id="mine")
    first, _ = env.reset()
    env.step(1)
    copy = pickle.loads(pickle.dumps(env))
    assert isinstance(copy, perennial.PerennialEnv)
    assert copy.world_file == env.world_file
    assert copy.unwrapped._run.identity() == env.unwrapped._run.identity()
    assert copy.unwrapped._run.counters() == (0, 0, 0), "a copy is a fresh env"
    again, _ = copy.reset()
    np.testing.assert_array_equal(again, first)


def test_gym_made_envs_and_vector_envs_pickle_too():
    env = gym.make("perennial/CartPole-v1")
    copy = pickle.loads(pickle.dumps(env))
    np.testing.assert_array_equal(copy.reset(seed=3)[0], env.reset(seed=3)[0])
    envs = perennial.make_vec("perennial/CartPole-v1", 4, autoreset_mode="same_step")
    vcopy = pickle.loads(pickle.dumps(envs))
    assert vcopy.metadata["autoreset_mode"] == envs.metadata["autoreset_mode"]
    np.testing.assert_array_equal(vcopy.reset(seed=1)[0], envs.reset(seed=1)[0])


def test_a_copy_of_a_traced_env_writes_no_trace(tmp_path):
    path = tmp_path / "t.jsonl"
    env = perennial.make("perennial/CartPole-v1", seed=0, trace=path)
    env.reset()
    env.step(0)
    copy = pickle.loads(pickle.dumps(env))
    copy.reset()
    copy.step(1)
    copy.close()
    env.close()
    assert len(path.read_text().splitlines()) == 1
