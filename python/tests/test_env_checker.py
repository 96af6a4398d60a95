"""Every registered id passes Gymnasium's own environment checker without a warning."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import perennial

IDS = [
    "perennial/CartPole-v1",
    "perennial/CartPoleDrift-v0",
    "perennial/Warehouse-v0",
    "perennial/Logistics-v0",
    "perennial/Enterprise-v0",
]


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_passes_with_no_warnings(env_id):
    env = gym.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    assert isinstance(env.unwrapped, gym.Env)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_steps_return_float32_observations_inside_the_space(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and info == {}
    env.action_space.seed(0)
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert obs.dtype == np.float32
        assert env.observation_space.contains(obs)
        assert isinstance(reward, float)
        assert "regime" not in info
        if terminated or truncated:
            obs, info = env.reset()
    env.close()


def test_cartpole_has_gymnasium_cartpole_spaces_with_finite_bounds():
    ours = gym.make("perennial/CartPole-v1").observation_space
    theirs = gym.make("CartPole-v1").observation_space
    assert gym.make("perennial/CartPole-v1").action_space == gym.make("CartPole-v1").action_space
    assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype)
    # Gymnasium's unbounded velocities become the largest float32, which its checker accepts.
    finite = np.isfinite(theirs.low)
    np.testing.assert_array_equal(ours.low[finite], theirs.low[finite])
    np.testing.assert_array_equal(ours.high[finite], theirs.high[finite])
    assert np.isfinite(ours.low).all() and np.isfinite(ours.high).all()


def test_the_enterprise_world_reports_reward_components():
    env = perennial.make("perennial/Warehouse-v0", seed=0)
    env.reset()
    _, reward, _, _, info = env.step(0)
    assert set(info["components"]) == set(env.reward_components)
    assert reward == pytest.approx(sum(info["components"].values()))


def test_regimes_shift_inside_the_env_without_telling_the_agent():
    env = perennial.make("perennial/CartPoleDrift-v0", seed=0)
    env.reset()
    labels = {env.regime}
    for _ in range(6_000):
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        assert "regime" not in info
        labels.add(env.unwrapped.regime)
        if terminated or truncated:
            env.reset()
    assert len(labels) >= 2


def test_a_manual_plan_shifts_when_the_experimenter_says(tmp_path, worlds_dir):
    text = (worlds_dir / "cartpole-drift.toml").read_text()
    start = text.index("[schedule]")
    end = text.find("\n[", start + 1)
    manual = text[:start] + '[schedule]\nplan = "manual"\n' + (text[end:] if end != -1 else "")
    world = tmp_path / "manual.toml"
    world.write_text(manual)
    env = perennial.make(world, seed=0, reveal_regime=True)
    obs, info = env.reset()
    first = env.regime
    labels = json.loads(perennial._core.check_world(str(world)))["regimes"]
    other = next(label for label in labels if label != first)
    env.step(0)
    env.shift(other)
    _, _, _, _, info = env.step(0)
    assert env.regime == other and env.regime_origin == "manual" and info["regime"] == other
    with pytest.raises(ValueError, match="nowhere"):
        env.shift("nowhere")


@pytest.mark.parametrize("env_id", IDS)
def test_perennial_make_of_an_id_carries_its_spec_and_passes_the_checker_as_is(env_id):
    env = perennial.make(env_id, seed=3)
    assert env.spec.id == env_id
    assert env.spec.kwargs == {"world": env_id, "seed": 3}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env)
    again = env.spec.make()
    assert isinstance(again.unwrapped, perennial.PerennialEnv)
    np.testing.assert_array_equal(again.reset()[0], perennial.make(env_id, seed=3).reset()[0])
    again.close()
    env.close()
