"""A small numpy policy-gradient agent learns perennial/CartPole-v1 through the Gymnasium API."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import perennial  # noqa: F401  (registers the ids)

STEP_BUDGET = 25_000


def mean_episode_length(env: gym.Env, act, episodes: int, seed: int) -> float:
    lengths = []
    obs, _ = env.reset(seed=seed)
    length = 0
    while len(lengths) < episodes:
        obs, _, terminated, truncated, _ = env.step(act(obs))
        length += 1
        if terminated or truncated:
            lengths.append(length)
            length = 0
            obs, _ = env.reset()
    return float(np.mean(lengths))


def softmax_policy(theta: np.ndarray, obs: np.ndarray) -> np.ndarray:
    logits = obs.astype(np.float64) @ theta
    logits -= logits.max()
    p = np.exp(logits)
    return p / p.sum()


def test_policy_gradient_beats_random_threefold_within_the_budget():
    env = gym.make("perennial/CartPole-v1")
    rng = np.random.default_rng(0)
    random_length = mean_episode_length(env, lambda _: int(rng.integers(2)), 200, seed=1)

    # REINFORCE with a linear softmax policy, per-episode returns-to-go, a running baseline.
    theta = np.zeros((4, 2))
    lr, gamma, baseline = 0.01, 0.99, 0.0
    steps = 0
    obs, _ = env.reset(seed=2)
    while steps < STEP_BUDGET:
        observations, actions, rewards = [], [], []
        while True:
            p = softmax_policy(theta, obs)
            a = int(rng.random() < p[1])
            observations.append(obs)
            actions.append(a)
            obs, reward, terminated, truncated, _ = env.step(a)
            rewards.append(reward)
            steps += 1
            if terminated or truncated:
                obs, _ = env.reset()
                break
        returns = np.zeros(len(rewards))
        g = 0.0
        for t in reversed(range(len(rewards))):
            g = rewards[t] + gamma * g
            returns[t] = g
        baseline = 0.9 * baseline + 0.1 * returns.mean()
        obs_batch = np.asarray(observations, dtype=np.float64)
        logits = obs_batch @ theta
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        score = np.eye(2)[actions] - probs  # d log pi(a|o) / d logits
        grad = obs_batch.T @ (score * (returns - baseline)[:, None])
        theta += lr * grad / len(rewards)

    learned = mean_episode_length(env, lambda o: int(np.argmax(softmax_policy(theta, o))), 20, seed=3)
    print(f"random {random_length:.1f} steps per episode, learned {learned:.1f}")
    assert learned >= 3 * random_length, (learned, random_length)
