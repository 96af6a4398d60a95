"""`make_vec` matches Gymnasium's SyncVectorEnv over single perennial envs, array for array."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv

import perennial


def assert_same_info(ours: dict, theirs: dict) -> None:
    assert ours.keys() == theirs.keys()
    for key in ours:
        a, b = ours[key], theirs[key]
        if isinstance(a, dict):
            assert_same_info(a, b)
        elif key == "final_obs":
            for x, y in zip(a, b):
                assert (x is None and y is None) or np.array_equal(x, y)
        else:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("world", ["perennial/CartPole-v1", "perennial/CartPoleDrift-v0"])
@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_vector_matches_sync_vector_env(world, mode):
    n = 6
    ours = perennial.make_vec(world, n, autoreset_mode=mode)
    theirs = SyncVectorEnv(
        [lambda: perennial.make(world) for _ in range(n)], autoreset_mode=AutoresetMode[mode.upper()]
    )
    assert isinstance(ours, VectorEnv)
    assert ours.metadata["autoreset_mode"] == theirs.metadata["autoreset_mode"]
    assert ours.single_observation_space == theirs.single_observation_space
    assert ours.action_space == theirs.action_space
    o1, i1 = ours.reset(seed=42)
    o2, i2 = theirs.reset(seed=42)
    np.testing.assert_array_equal(o1, o2)
    rng = np.random.default_rng(5)
    ends = 0
    # The balancing push keeps some copies alive long enough to cross a regime shift.
    for _ in range(700):
        actions = np.where(o1[:, 2] + 0.2 * o1[:, 3] > 0, 1, 0)
        actions = np.where(rng.random(n) < 0.2, 1 - actions, actions)
        r1 = ours.step(actions)
        r2 = theirs.step(actions)
        for a, b in zip(r1[:4], r2[:4]):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        assert_same_info(r1[4], r2[4])
        o1 = r1[0]
        done = r1[2] | r1[3]
        ends += int(done.sum())
        if mode == "disabled" and done.any():
            o1, _ = ours.reset(options={"reset_mask": done})
            o2, _ = theirs.reset(options={"reset_mask": done})
            np.testing.assert_array_equal(o1, o2)
    assert ends > n
    o1, _ = ours.reset()
    o2, _ = theirs.reset()
    np.testing.assert_array_equal(o1, o2)


def test_cartpole_runs_on_the_structure_of_arrays_vector():
    assert perennial.make_vec("perennial/CartPole-v1", 2)._vec.is_cartpole_vec
    assert not perennial.make_vec("perennial/CartPoleDrift-v0", 2)._vec.is_cartpole_vec


def test_the_enterprise_world_runs_vectorized():
    envs = perennial.make_vec("perennial/Warehouse-v0", 3)
    obs, _ = envs.reset(seed=1)
    assert obs.shape == (3, envs.single_observation_space.shape[0]) and obs.dtype == np.float32
    obs, rewards, terminated, truncated, info = envs.step(np.zeros(3, dtype=np.int64))
    assert rewards.shape == (3,) and not terminated.any() and info == {}
    single = perennial.make("perennial/Warehouse-v0")
    first, _ = single.reset(seed=2)
    np.testing.assert_array_equal(envs.reset(seed=1)[0][1], first)


def test_bad_batches_step_nothing():
    envs = perennial.make_vec("perennial/CartPole-v1", 3)
    with pytest.raises(ValueError, match="before reset"):
        envs.step(np.zeros(3, dtype=np.int64))
    obs, _ = envs.reset(seed=0)
    with pytest.raises(ValueError, match="2 actions for 3 copies"):
        envs.step([0, 1])
    with pytest.raises(ValueError, match="copy 1"):
        envs.step([0, 2, 0])
    with pytest.raises(ValueError, match="copy 2: invalid action -1"):
        envs.step([0, 1, -1])
    with pytest.raises(ValueError, match="copy 0: invalid action 1.0: a discrete action is an integer"):
        envs.step(np.array([1.0, 1.7, 0.2]))
    with pytest.raises(ValueError, match="copy 0: .* a discrete action is an integer"):
        envs.step([True, False, True])
    with pytest.raises(ValueError, match="0 actions for 3 copies"):
        envs.step([])
    with pytest.raises(ValueError, match=r"actions of shape \(1, 3\)"):
        envs.step(np.array([[0, 1, 0]]))
    with pytest.raises(ValueError, match="autoreset mode"):
        perennial.make_vec("perennial/CartPole-v1", 2, autoreset_mode="sometimes")
    with pytest.raises(ValueError, match="reset_mask"):
        envs.reset(options={"reset_mask": np.ones(3, dtype=bool)})
    fresh = perennial.make_vec("perennial/CartPole-v1", 3)
    np.testing.assert_array_equal(fresh.reset(seed=0)[0], obs)
    np.testing.assert_array_equal(envs.step([0, 1, 0])[0], fresh.step([0, 1, 0])[0])
